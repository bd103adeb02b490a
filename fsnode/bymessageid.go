package fsnode

import (
	"strings"

	"github.com/kahafs/kahafs/codec"
)

// by-message-id/ finds a message by its id without grep: it lists only
// its README, and looking up by-message-id/ID (the id escaped as in the
// tree's other names) makes a directory for the message when some path of
// the tree shows it (FindMessage: the destinations' message lists and the
// transactions, without rendering or reading the journal):
//
//	paths          every path of the tree that shows the message, one a line
//	message.json   its ADD (or latest UPDATE) as by-file/ shows it
//	message.body   the message's body alone
//
// The last two only for a message the store holds.
type byMessageIDTable struct{ s *Snapshot }

const (
	nameMessagePaths = "paths"
	nameMessageJSON  = "message.json"
	nameMessageBody  = "message.body"
)

func (t byMessageIDTable) len() int { return 1 }

func (t byMessageIDTable) at(int) entry {
	return textOf(nameReadme, inoByMessageIDReadme, func() ([]byte, error) { return []byte(byMessageIDReadme), nil })
}

func (t byMessageIDTable) find(name string) (int, bool) { return 0, name == nameReadme }

const byMessageIDReadme = `by-message-id/ lists nothing but this file: look a message up by its id.

  ls by-message-id/ID:host-41234-1795990400000-1:1:1:1:7
  cat by-message-id/ID:host-41234-1795990400000-1:1:1:1:7/paths

paths lists every path of the tree that shows the message (its ADD or UPDATE
under by-file/, the pending/ and in-doubt/ entries holding it, the operations
of transactions in progress); message.json and message.body are its record
and body when the store holds it. Without the mount: kahafs find STORE
--message-id ID (with --scan, also the acks of every message in the journal).
`

// findHidden makes the directory of the message called name.
func (t byMessageIDTable) findHidden(name string) (entry, bool) {
	id, full, err := UnescapeName(name)
	if err != nil || !full || id == "" {
		return entry{}, false
	}
	paths, held, err := t.s.findMessage(id, FindOptions{})
	if err != nil || len(paths) == 0 {
		return entry{}, false
	}
	ino := inoPath(nameByMessageID, id)
	return dirOf(name, ino, func() (dirTable, error) { return t.s.messageIDDir(id, paths, held), nil }), true
}

// messageIDDir is by-message-id/ID: its paths, and the record and body
// of the message when the store holds it.
// held is its record as a pending/ or in-doubt/ entry shows it, if one
// does (FindMessage found it there); else the graph is searched (a message
// a drifted count keeps from delivery is in no list).
func (s *Snapshot) messageIDDir(id string, paths []string, held *codec.Location) fixed {
	list := []byte(strings.Join(paths, "\n") + "\n")
	d := fixed{textOf(nameMessagePaths, inoPath(nameByMessageID, id, nameMessagePaths), func() ([]byte, error) { return list, nil })}
	loc, ok := codec.Location{}, held != nil
	if ok {
		loc = *held
	} else {
		loc, ok = s.heldAt(id)
	}
	if ok {
		d = append(d, commandOf(nameMessageJSON, loc, false), commandOf(nameMessageBody, loc, true))
	}
	return d
}

// heldAt is the record of the message with the given id that the store
// holds (its ADD or latest UPDATE), if any: the first in destination
// order.
func (s *Snapshot) heldAt(id string) (codec.Location, bool) {
	if refs := s.messageIndex().Lookup(id); len(refs) > 0 {
		return refs[0].Message().Loc, true
	}
	return codec.Location{}, false
}

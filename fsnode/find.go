package fsnode

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// ErrNoMessage: no path of the tree shows a message with the id asked for.
var ErrNoMessage = errors.New("message not found")

// FindOptions tune FindMessage.
type FindOptions struct {
	// Scan reads every command of the journal (not only what the replay
	// graph keeps), to find every command that names the message: acks
	// of messages still held, updates, and messages no longer held at
	// all. It reads every data file, as a first mount does.
	Scan bool
}

// FindMessage returns every path of the tree that shows the message with
// the given id, in tree order:
//
//   - by-file/db-N.log/OFFSET-TYPE.json (and .body) of the commands that
//     name it: the ADD or latest UPDATE of a message the store holds, the
//     adds and acks of transactions in progress (prepared or in flight),
//     and with Scan every ADD, UPDATE and REMOVE (ack) in the journal;
//   - by-destination/…/pending/N-ID.json, in-doubt/, and the pending/ and
//     in-doubt/ of topic subscriptions: where the message is listed;
//   - by-transaction/ID/… of those commands, and the in-doubt/ of prepared
//     transactions that ack it.
//
// No file is rendered: the destinations' message lists are searched
// (no more than the tree lists: a subscription with a selector is
// evaluated as its pending/ is), and the transactions through their
// command locations. ErrNoMessage when nothing shows it.
func (s *Snapshot) FindMessage(id string, opts FindOptions) ([]string, error) {
	paths, _, err := s.findMessage(id, opts)
	return paths, err
}

// findMessage is FindMessage, and the record of the message as a pending/
// or in-doubt/ entry shows it (nil if none does).
func (s *Snapshot) findMessage(id string, opts FindOptions) ([]string, *codec.Location, error) {
	// The commands that name the message, and their types.
	cmds := map[codec.Location]codec.EntryType{}
	var dests []string
	var held *codec.Location
	walkMessageLists(s.rootEntry(), nameByDestination, func(dir string, l *messageList) {
		for i := 0; i < l.n; i++ {
			m := l.msg(i)
			if !m.HasID(id) {
				continue
			}
			if held == nil {
				held = &m.Loc
			}
			dests = append(dests, path.Join(dir, l.at(2*i).name), path.Join(dir, l.at(2*i+1).name))
			typ := codec.AddMessageCommand
			if m.Updated {
				typ = codec.UpdateMessageCommand
			}
			cmds[locKey(m.Loc)] = typ
		}
	})
	for _, t := range s.graph.Transactions() {
		for _, op := range t.Ops {
			if op.MessageID == id {
				typ := codec.RemoveMessageCommand
				if op.Add {
					typ = codec.AddMessageCommand
				}
				cmds[locKey(op.Loc)] = typ
			}
		}
	}
	if opts.Scan {
		if err := s.scanMessage(id, cmds); err != nil {
			return nil, nil, err
		}
	}
	locs := make([]codec.Location, 0, len(cmds))
	for loc := range cmds {
		locs = append(locs, loc)
	}
	sort.Slice(locs, func(i, j int) bool { return locs[i].Less(locs[j]) })

	var out []string
	for _, loc := range locs {
		f := s.file(loc.File)
		if f == nil {
			continue
		}
		e := recEntry{off: loc.Offset, typ: cmds[loc]}
		dir := path.Join(nameByFile, f.info.Name)
		out = append(out, path.Join(dir, commandName(e, false)))
		if hasBody(e.typ) {
			out = append(out, path.Join(dir, commandName(e, true)))
		}
	}
	out = append(out, dests...)
	txs, err := s.findInTransactions(id, cmds)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, txs...)
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: no path of the tree shows %s", ErrNoMessage, id)
	}
	return out, held, nil
}

// locKey is loc without its size (the graph's and the journal's
// locations of one record may differ in it).
func locKey(loc codec.Location) codec.Location {
	return codec.Location{File: loc.File, Offset: loc.Offset}
}

// walkMessageLists calls fn with every message list (pending/, in-doubt/)
// below the directory name of e, and its path; files are not rendered.
func walkMessageLists(e entry, dir string, fn func(dir string, l *messageList)) {
	t, ok := lookupDir(e, path.Base(dir))
	if !ok {
		return
	}
	var walk func(dir string, t dirTable)
	walk = func(dir string, t dirTable) {
		if l, ok := t.(*messageList); ok {
			fn(dir, l)
			return
		}
		for i := 0; i < t.len(); i++ {
			c := t.at(i)
			if !c.isDir() {
				continue
			}
			if sub, err := c.sub(); err == nil {
				walk(path.Join(dir, c.name), sub)
			}
		}
	}
	walk(dir, t)
}

// lookupDir opens the directory called name in the directory e.
func lookupDir(e entry, name string) (dirTable, bool) {
	t, err := e.sub()
	if err != nil {
		return nil, false
	}
	c, ok := lookupEntry(t, name)
	if !ok || !c.isDir() {
		return nil, false
	}
	sub, err := c.sub()
	return sub, err == nil
}

// findInTransactions returns the paths under by-transaction/ of the
// commands in cmds and of the in-doubt entries of the message.
func (s *Snapshot) findInTransactions(id string, cmds map[codec.Location]codec.EntryType) ([]string, error) {
	txs := s.graph.Transactions()
	x := s.txIndex()
	var out []string
	for k := 0; k < x.len(); k++ {
		t := txs[x.order[k]]
		if !holdsCommand(t, cmds) && !inDoubt(t, id) {
			continue
		}
		_, name := x.entry(k)
		dir := path.Join(nameByTransaction, name)
		tab, err := s.transactionTable(t)
		if err != nil {
			return nil, err
		}
		for c, loc := range t.Commands {
			if _, ok := cmds[locKey(loc)]; !ok {
				continue
			}
			i := len(tab.members) + int(tab.first[c])
			out = append(out, path.Join(dir, tab.at(i).name))
			if hasBody(tab.types[c]) {
				out = append(out, path.Join(dir, tab.at(i+1).name))
			}
		}
		if j, ok := tab.members.find(nameInDoubt); ok {
			if l, err := tab.members[j].sub(); err == nil {
				ml := l.(*messageList)
				for i := 0; i < ml.n; i++ {
					if ml.msg(i).HasID(id) {
						d := path.Join(dir, nameInDoubt)
						out = append(out, path.Join(d, ml.at(2*i).name), path.Join(d, ml.at(2*i+1).name))
					}
				}
			}
		}
	}
	return out, nil
}

func holdsCommand(t *refgraph.Transaction, cmds map[codec.Location]codec.EntryType) bool {
	if len(cmds) == 0 {
		return false
	}
	for _, loc := range t.Commands {
		if _, ok := cmds[locKey(loc)]; ok {
			return true
		}
	}
	return false
}

func inDoubt(t *refgraph.Transaction, id string) bool {
	for _, m := range t.InDoubt {
		if m.HasID(id) {
			return true
		}
	}
	return false
}

// scanMessage adds to cmds every ADD, UPDATE and REMOVE of the journal
// (up to the end the snapshot saw) that names the message id.
func (s *Snapshot) scanMessage(id string, cmds map[codec.Location]codec.EntryType) error {
	want := []byte(id)
	for _, f := range s.files {
		end := f.sum.End
		_, err := codec.ScanFile(f.info, s.opts, func(rec codec.Record, c *codec.Command) error {
			if int64(rec.Loc.Offset) >= end {
				return nil
			}
			switch c.Type {
			case codec.AddMessageCommand, codec.UpdateMessageCommand, codec.RemoveMessageCommand:
				if bytes.Equal(c.MessageID, want) {
					cmds[locKey(rec.Loc)] = c.Type
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", f.info.Name, err)
		}
	}
	return nil
}

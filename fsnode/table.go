package fsnode

import (
	"sort"
	"strings"
	"unsafe"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// The tree without FUSE. Every kind of directory is one dirTable: its
// entries listed by position and found by name, each entry saying what a
// listing shows of it (name, directory or file, inode number) and how to
// produce it (the table of a sub-directory, the render of a small file, or
// the journal location of a command). The table is all a directory kind
// declares: the mount's Readdir and Lookup (tableDir, a thin go-fuse
// adapter) and the FUSE-free Snapshot.ReadDir, ReadFile and FindMessage
// all read it, so a name, its inode number and its content are written
// down once, and what the CLI prints is what the mount serves.
//
// A lookup is find (a parse of the name: an offset, a position, a binary
// search over names) then at, and the name at that position must be the
// name looked up: a name that merely parses (a wrong type, a message id
// that is not the one at that position) is not in the directory.

// entryKind tells what an entry is.
type entryKind uint8

const (
	textEntry entryKind = iota // a small file rendered from the snapshot
	dirEntry                   // a directory
	cmdEntry                   // a command's JSON, or its message's body
	linkEntry                  // a symbolic link (ackchain.go)
)

// entry is one name of a directory of the tree.
type entry struct {
	name string
	ino  uint64
	kind entryKind
	// sub opens the directory (dirEntry). It is called when the
	// directory is listed or a name in it looked up, not when the
	// directory itself is: a listing of by-file/ does not index every
	// data file.
	sub func() (dirTable, error)
	// entries is how many entries the directory lists, when known
	// without opening it (0: not known, or few): a directory past the
	// link limit is listed in large replies (see bigListing).
	entries int
	// text renders the file (textEntry).
	text func() ([]byte, error)
	// loc is the record of the command (cmdEntry); body: the file is
	// the body of its message, not the command's JSON.
	loc  codec.Location
	body bool
	// snap, when set, is the snapshot that serves the entry and what is
	// below it (a store of a layout: see layout.go); else the snapshot of
	// the directory that lists it.
	snap *Snapshot
	// link is the target of a symbolic link (linkEntry), relative to the
	// directory that lists it.
	link string
}

func (e *entry) isDir() bool { return e.kind == dirEntry }

func textOf(name string, ino uint64, render func() ([]byte, error)) entry {
	return entry{name: name, ino: ino, kind: textEntry, text: render}
}

func dirOf(name string, ino uint64, open func() (dirTable, error)) entry {
	return entry{name: name, ino: ino, kind: dirEntry, sub: open}
}

// listOf is dirOf for a directory of n entries (a pending/ list).
func listOf(name string, ino uint64, n int, open func() (dirTable, error)) entry {
	return entry{name: name, ino: ino, kind: dirEntry, sub: open, entries: n}
}

// commandOf is the entry of the command at loc (with body, its message's
// body), called name.
func commandOf(name string, loc codec.Location, body bool) entry {
	k := kindCommand
	if body {
		k = kindBody
	}
	return entry{name: name, ino: inoLoc(k, loc), kind: cmdEntry, loc: loc, body: body}
}

// dirTable is a directory of the tree. at and find never fail: what can
// (indexing a data file, typing a transaction's commands) is done when the
// table is opened (entry.sub).
type dirTable interface {
	// len is the number of entries.
	len() int
	// at returns the entry at position i, 0 <= i < len(), in listing
	// order.
	at(i int) entry
	// find returns the position of the entry called name, if the
	// directory may have one; lookupEntry checks the name at it.
	find(name string) (int, bool)
}

// dirLister is a table that lists its entries without allocating: a
// directory of a million entries is listed in pages (see listStream).
// listAt appends the name of entry i to dst and returns what a listing
// shows of it besides: the same as at(i).
type dirLister interface {
	listAt(dst []byte, i int) (name []byte, ino uint64, dir bool)
}

// siblingLister is a dirLister whose entry i may be named from the name
// of entry i-1 (a message's .body from its .json: the same name but for
// the suffix), which costs a copy instead of making the name again.
// listAfter appends the name of entry i to dst, given prev, the name of
// entry i-1, and returns what listAt would; named false: it did not
// (dst as it was), listAt names it.
type siblingLister interface {
	listAfter(dst []byte, prev string, i int) (name []byte, ino uint64, dir, named bool)
}

// hiddenFinder is a table with entries it does not list: names looked up
// on demand (by-message-id/ID).
type hiddenFinder interface {
	findHidden(name string) (entry, bool)
}

// lookupEntry returns the entry of t called name.
func lookupEntry(t dirTable, name string) (entry, bool) {
	i, ok := t.find(name)
	if !ok || i < 0 || i >= t.len() {
		if h, ok := t.(hiddenFinder); ok {
			return h.findHidden(name)
		}
		return entry{}, false
	}
	e := t.at(i)
	if e.name != name {
		if h, ok := t.(hiddenFinder); ok {
			return h.findHidden(name)
		}
		return entry{}, false
	}
	return e, true
}

// fixed is a directory of a few entries declared in a list.
type fixed []entry

func (f fixed) len() int       { return len(f) }
func (f fixed) at(i int) entry { return f[i] }

func (f fixed) find(name string) (int, bool) {
	for i := range f {
		if f[i].name == name {
			return i, true
		}
	}
	return 0, false
}

// Names at the root (a contract: scripts read these paths).
const (
	nameReadme        = "README"
	nameSummary       = "summary.json"
	namePinned        = "pinned"
	nameFree          = "free"
	nameByFile        = "by-file"
	nameByDestination = "by-destination"
	nameByTransaction = "by-transaction"
	nameByMessageID   = "by-message-id"
)

// rootTable is the top of the tree (a --rw mount adds its control file:
// see rootDir).
func (s *Snapshot) rootTable() fixed {
	if s.layout != nil {
		return s.layoutRootTable()
	}
	return append(fixed{
		textOf(nameReadme, inoReadme, s.renderReadme),
		textOf(nameSummary, inoSummary, s.renderSummary),
		textOf(namePinned, inoPinned, func() ([]byte, error) { return s.renderFileList(true), nil }),
		textOf(nameFree, inoFree, func() ([]byte, error) { return s.renderFileList(false), nil }),
		s.metricsEntry(),
		dirOf(nameByFile, inoByFile, func() (dirTable, error) { return byFileTable{s}, nil }),
		dirOf(nameByDestination, inoByDestination, func() (dirTable, error) { return destGroupsTable{s, s.destGroups()}, nil }),
		dirOf(nameByTransaction, inoByTransaction, func() (dirTable, error) {
			return txsTable{s: s, names: s.txIndex(), txs: s.graph.Transactions()}, nil
		}),
		dirOf(nameByMessageID, inoByMessageID, func() (dirTable, error) { return byMessageIDTable{s}, nil }),
	}, s.planEntries()...)
}

// by-file: one directory per data file, in id order.
type byFileTable struct{ s *Snapshot }

func (t byFileTable) len() int { return len(t.s.files) }

func (t byFileTable) at(i int) entry {
	f := t.s.files[i]
	return dirOf(f.info.Name, inoAt(kindDataDir, f.info.ID, 0), func() (dirTable, error) { return t.s.dataFileTable(f) })
}

func (t byFileTable) find(name string) (int, bool) {
	id, ok := codec.ParseDataFileName(name)
	if !ok {
		return 0, false
	}
	files := t.s.files
	i := sort.Search(len(files), func(i int) bool { return files[i].info.ID >= id })
	return i, i < len(files) && files[i].info.ID == id
}

// by-file/db-N.log: holders, holders.json, info.json, the commands
// (OFFSET-TYPE.json) in journal order, then the bodies of the message
// commands (OFFSET-TYPE.body), listed from the file's record index and
// found by parsing the name back to an offset.
type dataFileTable struct {
	f       *dataFile
	members fixed
	idx     []recEntry
	msgs    []int32 // positions in idx of the commands with a body
}

const (
	nameHolders     = "holders"
	nameHoldersJSON = "holders.json"
	nameInfo        = "info.json"
)

// dataFileTable indexes f (once per snapshot) and returns its directory.
func (s *Snapshot) dataFileTable(f *dataFile) (*dataFileTable, error) {
	idx, err := f.index()
	if err != nil {
		return nil, err
	}
	id := f.info.ID
	return &dataFileTable{f: f, idx: idx, msgs: f.msgs, members: append(fixed{
		textOf(nameHolders, inoAt(kindDataMember, id, memberHolders), func() ([]byte, error) { return s.renderHolders(f), nil }),
		textOf(nameHoldersJSON, inoAt(kindDataMember, id, memberHoldersJSON), func() ([]byte, error) { return s.renderHoldersJSON(f) }),
		textOf(nameInfo, inoAt(kindDataMember, id, memberInfo), func() ([]byte, error) { return s.renderInfo(f) }),
	}, s.ackDirs(f)...)}, nil
}

func (t *dataFileTable) len() int { return len(t.members) + len(t.idx) + len(t.msgs) }

func (t *dataFileTable) at(i int) entry {
	if i < len(t.members) {
		return t.members[i]
	}
	id := t.f.info.ID
	if i -= len(t.members); i < len(t.idx) {
		e := t.idx[i]
		return commandOf(commandName(e, false), e.loc(id), false)
	}
	e := t.idx[t.msgs[i-len(t.idx)]]
	return commandOf(commandName(e, true), e.loc(id), true)
}

var _ inodeOrdered = (*dataFileTable)(nil)

func (*dataFileTable) inodeOrdered() {}

var _ dirLister = (*dataFileTable)(nil)

func (t *dataFileTable) listAt(dst []byte, i int) ([]byte, uint64, bool) {
	if i < len(t.members) {
		e := &t.members[i]
		return append(dst, e.name...), e.ino, e.isDir()
	}
	id := t.f.info.ID
	body := false
	if i -= len(t.members); i >= len(t.idx) {
		i, body = int(t.msgs[i-len(t.idx)]), true
	}
	e := t.idx[i]
	k := kindCommand
	if body {
		k = kindBody
	}
	return appendCommandName(dst, e, body), inoLoc(k, e.loc(id)), false
}

func (t *dataFileTable) find(name string) (int, bool) {
	if i, ok := t.members.find(name); ok {
		return i, true
	}
	off, _, body, ok := parseCommandName(name)
	if !ok {
		return 0, false
	}
	idx := t.idx
	p := sort.Search(len(idx), func(i int) bool { return idx[i].off >= off })
	if p == len(idx) || idx[p].off != off {
		return 0, false
	}
	if !body {
		return len(t.members) + p, true
	}
	k := sort.Search(len(t.msgs), func(k int) bool { return int(t.msgs[k]) >= p })
	if k == len(t.msgs) || int(t.msgs[k]) != p {
		return 0, false
	}
	return len(t.members) + len(idx) + k, true
}

// messageList is a pending/ or in-doubt/ directory: two files per message
// in delivery order, named by its position (from 1, 10 digits) and its
// escaped message id: N-ID.json is the message's command (ADD or latest
// UPDATE), N-ID.body its body, the same inodes as under by-file/. Message
// i's command is at position 2i, its body at 2i+1.
type messageList struct {
	n   int
	msg func(i int) *refgraph.Message
}

func messagesOf(ms []*refgraph.Message) *messageList {
	return &messageList{n: len(ms), msg: func(i int) *refgraph.Message { return ms[i] }}
}

const positionDigits = 10

// pendingName names the command (or with body the body) of the i-th
// (from 0) message of a list.
func pendingName(i int, id string, body bool) string {
	return string(appendPendingName(nil, i, id, body))
}

// appendPendingName appends pendingName(i, id, body) to dst.
func appendPendingName(dst []byte, i int, id string, body bool) []byte {
	dst = appendPadInt(dst, int64(i+1), positionDigits)
	dst = append(dst, '-')
	dst = appendEscaped(dst, id, MaxNameLen-positionDigits-1-len(suffixJSON))
	return append(dst, suffix(body)...)
}

func (l *messageList) len() int { return 2 * l.n }

var _ twoRounds = (*messageList)(nil)

// laterRound: the .body files (every kindBody inode is above every
// kindCommand inode).
func (l *messageList) laterRound(i int) bool { return i%2 == 1 }

func (l *messageList) at(i int) entry {
	m, body := l.msg(i/2), i%2 == 1
	return commandOf(pendingName(i/2, m.ID(), body), m.Loc, body)
}

var _ dirLister = (*messageList)(nil)

func (l *messageList) listAt(dst []byte, i int) ([]byte, uint64, bool) {
	m, body := l.msg(i/2), i%2 == 1
	k := kindCommand
	if body {
		k = kindBody
	}
	// The id is made at the end of dst (no string per entry), the name
	// after it, and the name then moved over the id. The id's bytes stay
	// valid while appendPendingName reads them: appending after them does
	// not touch them, and a reallocation copies them and leaves the old
	// array (which the string keeps alive) as it was.
	start := len(dst)
	dst = m.AppendID(dst)
	idEnd := len(dst)
	var id string
	if idEnd > start {
		id = unsafe.String(&dst[start], idEnd-start)
	}
	dst = appendPendingName(dst, i/2, id, body)
	n := copy(dst[start:], dst[idEnd:])
	return dst[:start+n], inoLoc(k, m.Loc), false
}

var _ siblingLister = (*messageList)(nil)

// listAfter names a message's body (odd i) from its command's name,
// entry i-1: appendPendingName spells the two alike but for the suffix,
// of the same length.
func (l *messageList) listAfter(dst []byte, prev string, i int) ([]byte, uint64, bool, bool) {
	if i%2 == 0 || !strings.HasSuffix(prev, suffixJSON) {
		return dst, 0, false, false
	}
	dst = append(dst, prev[:len(prev)-len(suffixJSON)]...)
	dst = append(dst, suffixBody...)
	return dst, inoLoc(kindBody, l.msg(i/2).Loc), false, true
}

func (l *messageList) find(name string) (int, bool) {
	if len(name) <= positionDigits || name[positionDigits] != '-' {
		return 0, false
	}
	pos, ok := parseDigits(name[:positionDigits])
	if !ok || pos < 1 || pos > int64(l.n) {
		return 0, false
	}
	i := 2 * int(pos-1)
	if len(name) >= len(suffixBody) && name[len(name)-len(suffixBody):] == suffixBody {
		i++
	}
	return i, true
}

package fsnode

import (
	"encoding/binary"
	"sort"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/openwire"
)

// The tree's files for a reader that reads the journal itself (kahafs
// grep, package treegrep): WalkFiles names every file below a path in
// tree order and says, for a command's file, where its record is;
// RecordRenderer renders a command's files from the record's bytes the
// caller read, so that a walk over a hundred thousand messages reads the
// journal once in order instead of once per file. What it renders is what
// ReadFile (and the mount) serve for the file, byte for byte.

// TreeFile is a file of the tree met by WalkFiles, or a directory it
// could not list (Err set).
type TreeFile struct {
	// Err: the directory at Path could not be listed (its entries are
	// not walked).
	Err error
	// path is the file's path, or with t the path of its directory: the
	// name, entry i of t, is made when asked for (a walk of a pending/
	// of 100,000 messages that names only the files that match makes
	// no other name).
	path string
	t    dirTable
	i    int
	e    entry
	src  *Snapshot // the snapshot that serves e
}

// Path is the file's path, as ls, cat and find write it.
func (f TreeFile) Path() string {
	if f.t == nil {
		return f.path
	}
	name := f.t.at(f.i).name
	if f.path == "" {
		return name
	}
	return f.path + "/" + name
}

// unnamedLister is a table that gives an entry without making its name
// (the name is "").
type unnamedLister interface {
	unnamedAt(i int) entry
}

func (l *messageList) unnamedAt(i int) entry {
	return commandOf("", l.msg(i/2).Loc, i%2 == 1)
}

func (t *dataFileTable) unnamedAt(i int) entry {
	if i < len(t.members) {
		return t.members[i]
	}
	id := t.f.info.ID
	if i -= len(t.members); i < len(t.idx) {
		return commandOf("", t.idx[i].loc(id), false)
	}
	return commandOf("", t.idx[t.msgs[i-len(t.idx)]].loc(id), true)
}

// WalkFiles calls fn with every file below the directory at p (or the file
// at p itself), in tree order: depth first, each directory's entries in
// the order the mount lists them — the order `find` meets them (gnulib's
// fts, which `find` and `grep -r` use, visits a directory of more than
// 10,000 entries in inode order instead). Symbolic links met in the walk
// are left out, as grep -r (without -R) leaves them; p itself may go
// through links. A directory that cannot be
// listed is passed to fn with Err set, and the walk goes on. An error from
// fn stops the walk and is returned; so is a p that is not in the tree.
func (s *Snapshot) WalkFiles(p string, fn func(TreeFile) error) error {
	e, owner, clean, err := s.resolve("grep", p)
	if err != nil {
		return err
	}
	if !e.isDir() {
		return fn(TreeFile{path: clean, e: e, src: e.in(owner)})
	}
	return s.walkDir(clean, e, owner, fn)
}

func (s *Snapshot) walkDir(dir string, e entry, owner *Snapshot, fn func(TreeFile) error) error {
	t, err := e.sub()
	if err != nil {
		return fn(TreeFile{path: dir, Err: err})
	}
	in := e.in(owner)
	un, _ := t.(unnamedLister)
	for i := 0; i < t.len(); i++ {
		var c entry
		if un != nil {
			c = un.unnamedAt(i)
		} else {
			c = t.at(i)
		}
		switch {
		case c.link != "":
			// a symbolic link met in the walk (acks-for/, acked-by/) is
			// not followed, as grep -r and find do not
			continue
		case c.isDir():
			if un != nil {
				c = t.at(i)
			}
			p := c.name
			if dir != "" {
				p = dir + "/" + c.name
			}
			err = s.walkDir(p, c, in, fn)
		case un != nil:
			err = fn(TreeFile{path: dir, t: t, i: i, e: c, src: c.in(in)})
		default:
			p := c.name
			if dir != "" {
				p = dir + "/" + c.name
			}
			err = fn(TreeFile{path: p, e: c, src: c.in(in)})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Content is the file's content: what ReadFile (kahafs cat) returns; an
// error does not repeat the path.
func (f TreeFile) Content() ([]byte, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	return f.src.content(f.e)
}

// Record says, for the file of a command (its JSON, or with body its
// message's body), the snapshot whose journal holds it and its location;
// ok is false for any other file (rendered from the snapshot: Content).
// Two files with the same source and location are the two files of one
// record (or one file listed in two directories).
func (f TreeFile) Record() (src *Snapshot, loc codec.Location, body, ok bool) {
	if f.Err != nil || f.e.kind != cmdEntry {
		return nil, codec.Location{}, false, false
	}
	return f.src, f.e.loc, f.e.body, true
}

// DataFilePath is the path of the data file id of the snapshot's journal
// (a snapshot Record returned), if the snapshot has it.
func (s *Snapshot) DataFilePath(id int32) (string, bool) {
	if f := s.file(id); f != nil {
		return f.info.Path, true
	}
	return "", false
}

// PrepareRecords makes ahead what Render needs of the data file id of the
// snapshot's journal (the list of its batches, read from their headers),
// so that a reader can have it made on a core of its own while it does
// something else; Render makes it when it is not made yet.
func (s *Snapshot) PrepareRecords(id int32) {
	if f := s.file(id); f != nil {
		f.batchIndex()
	}
}

// RecordRenderer renders the files of commands from their records. It
// keeps its scratch space between calls: one per goroutine.
type RecordRenderer struct {
	s   *Snapshot
	cmd codec.Command
	// JSON and Body hold what the last Render rendered (until the next).
	JSON, Body []byte
	// takeBody renders Body from the message the JSON decodes (as
	// appendBody renders it from its own decoding); bodyDone: it did.
	takeBody func(*openwire.Message)
	bodyDone bool
}

// NewRecordRenderer returns a renderer of the commands of s's journal.
func (s *Snapshot) NewRecordRenderer() *RecordRenderer {
	r := &RecordRenderer{s: s}
	r.takeBody = func(m *openwire.Message) {
		r.Body, r.bodyDone = r.Body[:0], true
		if m != nil {
			r.Body = m.AppendRawBody(r.Body)
		}
	}
	return r
}

// Render renders, from rec (the loc.Size bytes read at loc in its data
// file), the command's JSON file into r.JSON (json) and its message's body
// file into r.Body (body): what ReadFile serves for them. ok is false when
// the record alone does not tell (a data file read with damage, a record
// that is not where the snapshot saw it, one that does not decode):
// Content then renders the file as cat does, with its error if it has
// one.
func (r *RecordRenderer) Render(loc codec.Location, rec []byte, json, body bool) (ok bool) {
	f := r.s.file(loc.File)
	if f == nil || len(rec) != int(loc.Size) || loc.Size <= codec.RecordHeaderSize {
		return false
	}
	// As located: the record's size and type from its header, its batch
	// from the file's batch index.
	if int32(binary.BigEndian.Uint32(rec)) != loc.Size || rec[4] != codec.RecordTypeUser {
		return false
	}
	typ := codec.EntryType(rec[codec.RecordHeaderSize])
	if !typ.Valid() || body && !hasBody(typ) {
		return false
	}
	spans := f.batchIndex()
	i := sort.Search(len(spans), func(i int) bool { return spans[i].end > loc.Offset })
	if i == len(spans) || loc.Offset < spans[i].off+codec.BatchHeaderSize || loc.Offset+loc.Size > spans[i].end {
		return false
	}
	c := &r.cmd
	*c = codec.Command{}
	defer func() { *c = codec.Command{} }() // no references into rec beyond this call
	cr := codec.Record{Loc: loc, Batch: spans[i].off, Data: rec}
	if err := codec.DecodeRecord(f.info.Path, cr, c); err != nil || c.Type != typ {
		return false
	}
	bodyDone := false
	if json {
		// Nothing of the message is kept past this call.
		opts := codec.JSONOptions{OpenWire: true, OpenWireVersion: r.s.wireVersion, ShareText: true}
		if body {
			// The body from the message the JSON decodes (as appendBody
			// renders it from its own decoding).
			r.bodyDone = false
			opts.Message = r.takeBody
		}
		r.JSON = codec.AppendCommandJSON(r.JSON[:0], cr, c, opts)
		r.JSON = append(r.JSON, '\n')
		bodyDone = body && r.bodyDone
	}
	if body && !bodyDone {
		r.Body = r.s.appendBody(r.Body[:0], c)
	}
	return true
}

// Content renders the command's file at loc (with body its message's
// body) as ReadFile does: the way for what Render cannot tell.
func (r *RecordRenderer) Content(loc codec.Location, body bool) ([]byte, error) {
	return r.s.content(commandOf("", loc, body))
}

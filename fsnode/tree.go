package fsnode

import (
	"context"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/kahafs/kahafs/codec"
	"golang.org/x/sys/unix"
)

// The root: fixed members, each looked up in the current snapshot. A
// refresh swaps the snapshot and invalidates these names in the kernel, so
// the next walk starts in the new snapshot while open files and working
// directories keep the one they began with.
type rootDir struct {
	roNode
	fsys *FS
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
)

var rootMembers = []member{
	{nameReadme, false, inoReadme},
	{nameSummary, false, inoSummary},
	{namePinned, false, inoPinned},
	{nameFree, false, inoFree},
	{nameByFile, true, inoByFile},
	{nameByDestination, true, inoByDestination},
	{nameByTransaction, true, inoByTransaction},
}

var _ fs.NodeGetattrer = (*rootDir)(nil)

func (r *rootDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.fsys.Snapshot().attr(&out.Attr, dirMode, 0)
	return 0
}

var _ fs.NodeReaddirer = (*rootDir)(nil)

func (r *rootDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	if r.fsys.control != nil {
		return membersStream(append(append([]member(nil), rootMembers...), member{nameControl, false, inoControl})), 0
	}
	return membersStream(rootMembers), 0
}

func membersStream(ms []member) *listStream {
	return &listStream{n: len(ms), at: func(i int) fuse.DirEntry { return ms[i].dirEntry() }}
}

var _ fs.NodeLookuper = (*rootDir)(nil)

func (r *rootDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	s := r.fsys.Snapshot()
	p := r.EmbeddedInode()
	switch name {
	case nameReadme:
		return newTextFile(ctx, p, name, s, name, inoReadme, s.renderReadme, out)
	case nameSummary:
		return newTextFile(ctx, p, name, s, name, inoSummary, s.renderSummary, out)
	case namePinned:
		return newTextFile(ctx, p, name, s, name, inoPinned, func() ([]byte, error) { return s.renderFileList(true), nil }, out)
	case nameFree:
		return newTextFile(ctx, p, name, s, name, inoFree, func() ([]byte, error) { return s.renderFileList(false), nil }, out)
	case nameByFile:
		return newDir(ctx, p, name, s, &byFileDir{dirNode{snap: s}}, inoByFile, out), 0
	case nameByDestination:
		return newDir(ctx, p, name, s, &byDestinationDir{dirNode{snap: s}}, inoByDestination, out), 0
	case nameByTransaction:
		return newDir(ctx, p, name, s, &byTransactionDir{dirNode{snap: s}}, inoByTransaction, out), 0
	case nameControl:
		if c := r.fsys.control; c != nil {
			return c.lookup(ctx, p, r.fsys, out), 0
		}
	}
	return nil, noEntry()
}

var _ fs.NodeStatfser = (*rootDir)(nil)

// Statfs answers df: "used" is what the store's data files take on disk,
// "available" (and free) is what the file system under the store has
// left, and the size is the two together: the room the store has to grow
// into. A tree that is read-only has no room of its own; reporting none
// (size = used) made every mount 100 % full for disk monitoring. Inodes
// alike: used are the commands, free the file system's free inodes. When
// the store's file system cannot be asked, nothing is free.
func (r *rootDir) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	s := r.fsys.Snapshot()
	const bsize = 4096
	out.Bsize, out.Frsize = bsize, bsize
	used := uint64(s.alloc+bsize-1) / bsize
	var under unix.Statfs_t
	if err := unix.Statfs(r.fsys.dir, &under); err == nil {
		unit := uint64(under.Frsize)
		if unit == 0 {
			unit = uint64(under.Bsize)
		}
		out.Bfree = under.Bfree * unit / bsize
		out.Bavail = under.Bavail * unit / bsize
		out.Ffree = under.Ffree
	}
	out.Blocks = used + out.Bfree
	out.Files = uint64(s.commands) + out.Ffree
	out.NameLen = MaxNameLen
	return 0
}

// by-file: one directory per data file, in id order.
type byFileDir struct{ dirNode }

var _ fs.NodeReaddirer = (*byFileDir)(nil)

func (d *byFileDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	files := d.snap.files
	return &listStream{n: len(files), at: func(i int) fuse.DirEntry {
		f := files[i]
		return fuse.DirEntry{Name: f.info.Name, Mode: syscall.S_IFDIR, Ino: inoAt(kindDataDir, f.info.ID, 0)}
	}}, 0
}

var _ fs.NodeLookuper = (*byFileDir)(nil)

func (d *byFileDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	id, ok := codec.ParseDataFileName(name)
	if !ok {
		return nil, noEntry()
	}
	f := d.snap.file(id)
	if f == nil || f.info.Name != name {
		return nil, noEntry()
	}
	return newDir(ctx, d.EmbeddedInode(), name, d.snap, &dataFileDir{dirNode: dirNode{snap: d.snap}, f: f}, inoAt(kindDataDir, id, 0), out), 0
}

// by-file/db-N.log: holders, holders.json, info.json, then one JSON file
// per command in journal order. The commands are listed from the file's
// record index and looked up by parsing the name back to an offset.
type dataFileDir struct {
	dirNode
	f *dataFile
}

const (
	nameHolders     = "holders"
	nameHoldersJSON = "holders.json"
	nameInfo        = "info.json"
)

func (d *dataFileDir) members() []member {
	id := d.f.info.ID
	return []member{
		{nameHolders, false, inoAt(kindDataMember, id, memberHolders)},
		{nameHoldersJSON, false, inoAt(kindDataMember, id, memberHoldersJSON)},
		{nameInfo, false, inoAt(kindDataMember, id, memberInfo)},
	}
}

var _ fs.NodeReaddirer = (*dataFileDir)(nil)

func (d *dataFileDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	idx, err := d.f.index()
	if err != nil {
		return nil, d.snap.errno("list "+d.f.info.Name, err)
	}
	ms := d.members()
	id, msgs := d.f.info.ID, d.f.msgs
	// The members, the commands (.json), then the bodies of the messages
	// (.body): the commands' positions are the ones renderAhead takes.
	return &listStream{n: len(ms) + len(idx) + len(msgs), at: func(i int) fuse.DirEntry {
		if i < len(ms) {
			return ms[i].dirEntry()
		}
		if i -= len(ms); i < len(idx) {
			e := idx[i]
			return fuse.DirEntry{Name: commandName(e, false), Mode: syscall.S_IFREG, Ino: inoLoc(kindCommand, e.loc(id))}
		}
		e := idx[msgs[i-len(idx)]]
		return fuse.DirEntry{Name: commandName(e, true), Mode: syscall.S_IFREG, Ino: inoLoc(kindBody, e.loc(id))}
	}}, 0
}

// renderAhead renders the commands listed at positions from to to-1 into
// the snapshot's recent renders (see dirHandle).
func (d *dataFileDir) renderAhead(from, to int) {
	idx, err := d.f.index()
	if err != nil {
		return
	}
	m := len(d.members())
	from, to = min(max(from-m, 0), len(idx)), min(max(to-m, 0), len(idx))
	for _, e := range idx[from:max(from, to)] {
		k := renderKey{loc: e.loc(d.f.info.ID)}
		if _, ok := d.snap.recent.get(k); ok {
			continue
		}
		if b, err := d.f.render(e); err == nil {
			d.snap.recent.put(k, b)
		}
	}
}

var _ fs.NodeLookuper = (*dataFileDir)(nil)

func (d *dataFileDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	s, f, p := d.snap, d.f, d.EmbeddedInode()
	id := f.info.ID
	switch name {
	case nameHolders:
		return newTextFile(ctx, p, name, s, f.info.Name+"/"+name, inoAt(kindDataMember, id, memberHolders), func() ([]byte, error) { return s.renderHolders(f), nil }, out)
	case nameHoldersJSON:
		return newTextFile(ctx, p, name, s, f.info.Name+"/"+name, inoAt(kindDataMember, id, memberHoldersJSON), func() ([]byte, error) { return s.renderHoldersJSON(f) }, out)
	case nameInfo:
		return newTextFile(ctx, p, name, s, f.info.Name+"/"+name, inoAt(kindDataMember, id, memberInfo), func() ([]byte, error) { return s.renderInfo(f) }, out)
	}
	off, typ, body, ok := parseCommandName(name)
	if !ok {
		return nil, noEntry()
	}
	e, found, err := f.find(off)
	if err != nil {
		return nil, s.errno("lookup "+f.info.Name+"/"+name, err)
	}
	if !found || e.typ != typ {
		return nil, noEntry()
	}
	return newCommandFile(ctx, p, name, f, e, body, out)
}

// Command file names: the offset in 10 digits (any int32 offset, so that
// `ls` lists them in journal order), the command type, ".json"; a message
// command's body has the same name ending in ".body".
const (
	offsetDigits = 10
	suffixJSON   = ".json"
	suffixBody   = ".body"
)

// suffix is the file name ending of a command's JSON or of a message body.
func suffix(body bool) string {
	if body {
		return suffixBody
	}
	return suffixJSON
}

func commandName(e recEntry, body bool) string {
	return padInt(int64(e.off), offsetDigits) + "-" + e.typ.String() + suffix(body)
}

// padInt writes v in decimal, zero-padded to width digits.
func padInt(v int64, width int) string {
	s := strconv.FormatInt(v, 10)
	if len(s) >= width {
		return s
	}
	return strings.Repeat("0", width-len(s)) + s
}

// parseCommandName is the inverse of commandName; only the exact spelling
// commandName produces is accepted (a .body only for message commands).
func parseCommandName(name string) (off int32, typ codec.EntryType, body, ok bool) {
	const n = len(suffixJSON) // == len(suffixBody)
	if len(name) < offsetDigits+2+n || name[offsetDigits] != '-' {
		return 0, 0, false, false
	}
	switch name[len(name)-n:] {
	case suffixJSON:
	case suffixBody:
		body = true
	default:
		return 0, 0, false, false
	}
	o, ok := parseDigits(name[:offsetDigits])
	if !ok || o > 1<<31-1 {
		return 0, 0, false, false
	}
	typ, ok = codec.ParseEntryType(name[offsetDigits+1 : len(name)-n])
	if !ok || body && !hasBody(typ) {
		return 0, 0, false, false
	}
	return int32(o), typ, body, true
}

// parseDigits parses a fixed-width run of decimal digits.
func parseDigits(s string) (int64, bool) {
	var v int64
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
		if v > 1<<40 {
			return 0, false
		}
	}
	return v, true
}

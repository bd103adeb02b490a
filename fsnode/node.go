package fsnode

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// roNode is embedded by every node type. It answers every call that would
// change the tree with EROFS. The mount is also made with the kernel's
// "ro" option, so these only matter if that is ever dropped; go-fuse's
// defaults would otherwise report success for unlink and rmdir.
type roNode struct {
	fs.Inode
}

func readOnly() syscall.Errno { return toErrno(nil, "", errReadOnly) }

// noEntry answers a lookup of a name that is not in a directory.
func noEntry() syscall.Errno { return toErrno(nil, "", errNoEntry) }

var _ fs.NodeSetattrer = (*roNode)(nil)

func (*roNode) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return readOnly()
}

var _ fs.NodeMkdirer = (*roNode)(nil)

func (*roNode) Mkdir(context.Context, string, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, readOnly()
}

var _ fs.NodeMknoder = (*roNode)(nil)

func (*roNode) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, readOnly()
}

var _ fs.NodeCreater = (*roNode)(nil)

func (*roNode) Create(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, readOnly()
}

var _ fs.NodeUnlinker = (*roNode)(nil)

func (*roNode) Unlink(context.Context, string) syscall.Errno { return readOnly() }

var _ fs.NodeRmdirer = (*roNode)(nil)

func (*roNode) Rmdir(context.Context, string) syscall.Errno { return readOnly() }

var _ fs.NodeRenamer = (*roNode)(nil)

func (*roNode) Rename(context.Context, string, fs.InodeEmbedder, string, uint32) syscall.Errno {
	return readOnly()
}

var _ fs.NodeLinker = (*roNode)(nil)

func (*roNode) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, readOnly()
}

var _ fs.NodeSymlinker = (*roNode)(nil)

func (*roNode) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, readOnly()
}

var _ fs.NodeSetxattrer = (*roNode)(nil)

func (*roNode) Setxattr(context.Context, string, []byte, uint32) syscall.Errno { return readOnly() }

var _ fs.NodeRemovexattrer = (*roNode)(nil)

func (*roNode) Removexattr(context.Context, string) syscall.Errno { return readOnly() }

var _ fs.NodeWriter = (*roNode)(nil)

func (*roNode) Write(context.Context, fs.FileHandle, []byte, int64) (uint32, syscall.Errno) {
	return 0, readOnly()
}

var _ fs.NodeAllocater = (*roNode)(nil)

func (*roNode) Allocate(context.Context, fs.FileHandle, uint64, uint64, uint32) syscall.Errno {
	return readOnly()
}

// Flush: nothing is ever written, so there is nothing to flush. ENOSYS is
// the protocol's "never ask again" (the kernel stops sending FLUSH at
// close), not an error: files are opened with FOPEN_NOFLUSH, but a
// read-only mount does not open them at all (see noOpen).
var _ fs.NodeFlusher = (*roNode)(nil)

func (*roNode) Flush(context.Context, fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// noOpen answers the OPEN of a file of a read-only mount: ENOSYS tells the
// kernel (FUSE_NO_OPEN_SUPPORT) that opening needs no server at all, and
// it stops sending OPEN and RELEASE for every file of the mount, two round
// trips per file a walk reads: the file is then read without a handle,
// with the page cache kept between opens (what FOPEN_KEEP_CACHE asks for),
// and writes never get that far (the kernel's "ro" gives EROFS first). A
// --rw mount opens files as before: its control file checks who opens it.
func (s *Snapshot) noOpen() bool { return s.m == nil || !s.m.control }

// writeFlags are open flags that ask for change.
const writeFlags = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC | syscall.O_APPEND | syscall.O_CREAT

// Modes of everything in the tree before the store's read bits are
// applied (Snapshot.attr: a mounted tree carries the store's, and the
// kernel enforces them with default_permissions): nobody writes.
const (
	dirMode  = syscall.S_IFDIR | 0o555
	fileMode = syscall.S_IFREG | 0o444
)

// attr fills the attributes every node shares: owner, times (when the
// snapshot was read: the content is as of then), link count.
func (s *Snapshot) attr(out *fuse.Attr, mode uint32, size int64) {
	if s.m != nil {
		// the store's read bits (mountState.fileMode, dirMode)
		switch mode {
		case fileMode:
			mode = s.m.fileMode
		case dirMode:
			mode = s.m.dirMode
		}
	}
	out.Mode = mode
	out.Size = uint64(size)
	out.Blocks = (uint64(size) + 511) / 512
	out.Blksize = 4096
	// 1 for directories too ("subdirectory count unknown" for find), and
	// for a command's file that several directories list under one inode
	// number: the count of those directories is not known cheaply (a
	// topic message is listed once per subscription it is pending for),
	// and a count that is not exact would mislead du, tar and cp -a.
	out.Nlink = 1
	if s.m != nil {
		out.Uid, out.Gid = s.m.uid, s.m.gid
	}
	sec, nsec := uint64(s.Read.Unix()), uint32(s.Read.Nanosecond())
	out.Atime, out.Mtime, out.Ctime = sec, sec, sec
	out.Atimensec, out.Mtimensec, out.Ctimensec = nsec, nsec, nsec
}

// dirNode is the part every directory type shares: its snapshot, and
// Getattr.
type dirNode struct {
	roNode
	snap *Snapshot
}

var _ fs.NodeGetattrer = (*dirNode)(nil)

func (d *dirNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.snap.attr(&out.Attr, dirMode, 0)
	return 0
}

// newDir adds the directory node called entry in parent, of the
// snapshot's generation.
func newDir(ctx context.Context, parent *fs.Inode, entry string, s *Snapshot, ops fs.InodeEmbedder, ino uint64, out *fuse.EntryOut) *fs.Inode {
	s.attr(&out.Attr, dirMode, 0)
	return s.newInode(ctx, parent, entry, ops, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino, Gen: s.Gen})
}

// newInode makes the node a lookup of entry in parent answers with and,
// below the root (whose members are few and stay), queues it in the
// mount's kernelCache.
func (s *Snapshot) newInode(ctx context.Context, parent *fs.Inode, entry string, ops fs.InodeEmbedder, id fs.StableAttr) *fs.Inode {
	n := parent.NewInode(ctx, ops, id)
	if s.m != nil && !parent.IsRoot() {
		s.m.cache.Load().add(parent, entry, n)
	}
	return n
}

// textFile is a small file rendered from the snapshot. The lookup renders
// it (its answer carries the exact size) and keeps the content until it is
// pushed to the kernel (see dirHandle) or read to the end; a later read
// renders it again: the node of a file the kernel caches costs its size,
// not its content.
type textFile struct {
	roNode
	snap   *Snapshot
	render func() ([]byte, error)
	size   int64
	data   atomic.Pointer[[]byte] // the content until pushed or read
}

// newTextFile adds the textFile node called entry in parent.
func newTextFile(ctx context.Context, parent *fs.Inode, entry string, s *Snapshot, ino uint64, render func() ([]byte, error), out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	data, err := render()
	if err != nil {
		return nil, s.errno("render "+parent.Path(nil)+"/"+entry, err)
	}
	f := &textFile{snap: s, render: render, size: int64(len(data))}
	f.data.Store(&data)
	s.attr(&out.Attr, fileMode, f.size)
	return s.newInode(ctx, parent, entry, f, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino, Gen: s.Gen}), 0
}

func (f *textFile) pushData() []byte {
	if p := f.data.Swap(nil); p != nil {
		return *p
	}
	return nil
}

var _ fs.NodeGetattrer = (*textFile)(nil)

func (f *textFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.snap.attr(&out.Attr, fileMode, f.size)
	return 0
}

var _ fs.NodeOpener = (*textFile)(nil)

func (f *textFile) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if f.snap.noOpen() {
		return nil, 0, syscall.ENOSYS
	}
	if flags&writeFlags != 0 {
		return nil, 0, readOnly()
	}
	return nil, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

var _ fs.NodeReader = (*textFile)(nil)

func (f *textFile) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	p := f.data.Load()
	var data []byte
	if p != nil {
		data = *p
	} else {
		var err error
		if data, err = f.render(); err == nil && int64(len(data)) != f.size {
			err = fmt.Errorf("%s: %d bytes now, %d when looked up: %w", f.Path(nil), len(data), f.size, errChanged)
		}
		if err != nil {
			return nil, f.snap.errno("read "+f.Path(nil), err)
		}
	}
	if p != nil && off+int64(len(dest)) >= f.size {
		f.data.CompareAndSwap(p, nil) // read to the end: the page cache has it now
	}
	return fuse.ReadResultData(sliceAt(data, off, len(dest))), 0
}

func sliceAt(data []byte, off int64, n int) []byte {
	if off >= int64(len(data)) || off < 0 {
		return nil
	}
	end := off + int64(n)
	if end > int64(len(data)) {
		end = int64(len(data))
	}
	return data[off:end]
}

// commandFile is one journal command as JSON or, with body, the body of
// the message the command holds (see openwire.Message.AppendRawBody). Only
// its size is kept: the lookup renders the file (for the exact size; a
// listing may have rendered it ahead) and leaves the content in the
// snapshot's recent renders, where the push of a listing (see dirHandle)
// or the read that usually follows finds it; a later read renders it
// again (from the data file, through the snapshot's descriptor). The
// kernel's page cache answers repeated reads.
type commandFile struct {
	roNode
	f    *dataFile
	e    recEntry
	body bool
	size int64
}

// newCommandFile adds the node of the command e of f (its JSON, or with
// body its message's body), called entry in parent, numbered ino.
func newCommandFile(ctx context.Context, parent *fs.Inode, entry string, f *dataFile, e recEntry, body bool, ino uint64, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	s := f.snap
	n := &commandFile{f: f, e: e, body: body}
	k := n.key()
	b, ok := s.recent.get(k) // rendered ahead by a listing
	if !ok {
		var err error
		if b, err = n.render(); err != nil {
			return nil, s.errno("render "+n.what(), err)
		}
		s.recent.put(k, b)
	}
	n.size = int64(len(b))
	s.attr(&out.Attr, fileMode, n.size)
	return s.newInode(ctx, parent, entry, n, fs.StableAttr{Mode: syscall.S_IFREG, Ino: ino, Gen: s.Gen}), 0
}

func (n *commandFile) key() renderKey { return renderKey{loc: n.e.loc(n.f.info.ID), body: n.body} }

func (n *commandFile) render() ([]byte, error) {
	return n.f.snap.renderCommand(n.f, n.e, n.body)
}

// renderCommand renders the command e of f (with body, its message's
// body) for the mount, counted in mountState.renders.
func (s *Snapshot) renderCommand(f *dataFile, e recEntry, body bool) ([]byte, error) {
	if s.m != nil {
		s.m.renders.Add(1)
	}
	return f.renderAs(e, body)
}

// what names the file in errors.
func (n *commandFile) what() string {
	if n.body {
		return "message body"
	}
	return "command"
}

// pushData is the content the lookup just rendered (see dirHandle).
func (n *commandFile) pushData() []byte {
	data, _ := n.f.snap.recent.get(n.key())
	return data
}

var _ fs.NodeGetattrer = (*commandFile)(nil)

func (n *commandFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.f.snap.attr(&out.Attr, fileMode, n.size)
	return 0
}

var _ fs.NodeOpener = (*commandFile)(nil)

func (n *commandFile) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.f.snap.noOpen() {
		return nil, 0, syscall.ENOSYS
	}
	if flags&writeFlags != 0 {
		return nil, 0, readOnly()
	}
	// Nothing to flush at close: FOPEN_NOFLUSH spares the round trip.
	return nil, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

var _ fs.NodeReader = (*commandFile)(nil)

func (n *commandFile) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	s, k := n.f.snap, n.key()
	data, ok := s.recent.get(k)
	if !ok {
		var err error
		if data, err = n.render(); err != nil {
			return nil, s.errno("read "+n.what(), err)
		}
		// A body is read in many calls: keep it for the next ones.
		if n.body && off+int64(len(dest)) < n.size {
			s.recent.put(k, data)
			ok = true
		}
	}
	if int64(len(data)) != n.size {
		return nil, s.errno("read "+n.what(), fmt.Errorf("%s: %s at %d: %w", n.f.info.Name, n.what(), n.e.off, errChanged))
	}
	if ok && off+int64(len(dest)) >= n.size {
		s.recent.drop(k) // read to the end: the page cache has it now
	}
	return fuse.ReadResultData(sliceAt(data, off, len(dest))), 0
}

// listStream lists the entries of a table, made on demand; it supports
// seeking (the kernel resumes a listing by offset), so a directory of a
// million entries is never built as a whole. Entry i has offset i+1.
//
// A table that is a dirLister is listed without an allocation per entry:
// the names are appended to a slab of nameSlab bytes, and each is a string
// over its bytes there (unsafe.String), never overwritten while go-fuse
// may hold it: it keeps the names of the entries a READDIRPLUS looks up
// (the node's name), the last reply's entries to replay an interrupted
// call, and an entry that did not fit for the next call. So a slab is
// used again (nextCall) only once three calls have ended after the last
// name went to it (a call replays the one before it, which may hold an
// entry of the one before that; a replay makes no name), and only if
// no entry was looked up (pinned) from the call it was started in on:
// a big directory listed by name (ls) then takes a few dozen slabs
// whatever its size, instead of fresh memory for every name, which cost
// page faults and collections.
type listStream struct {
	n      int
	pos    int
	t      dirTable
	lister dirLister // t, if it lists without allocating
	s      *Snapshot // whose inode numbers t's are (Snapshot.ino)
	names  []byte    // the slab the next names go to (the last of slabs)

	// calls counts the calls (see nextCall); pinned is the last call
	// that looked an entry up (-1: none).
	calls, pinned int
	// slabs are the slabs that took names, oldest first, the one names
	// is last; spare are slabs to use again.
	slabs []nameSlabUse
	spare [][]byte

	// prev is the name of entry prevAt, the last one Next made from
	// lister (its bytes in a slab, intact for three calls at least): a
	// siblingLister names the entry after it from it.
	prev    string
	prevAt  int
	sibling siblingLister // lister, if it is one
}

// nameSlabUse is a slab of names, and the calls that put names in it.
type nameSlabUse struct {
	b           []byte
	first, last int
}

// maxSpareSlabs bounds the slabs kept for use again.
const maxSpareSlabs = 64

// nameSlab is the size of a slab of names: a page of a listing (a reply of
// the kernel's size) takes one or two.
const nameSlab = 16 << 10

var _ fs.DirStream = (*listStream)(nil)
var _ fs.FileSeekdirer = (*listStream)(nil)

func (l *listStream) HasNext() bool { return l.pos < l.n }

func (l *listStream) Next() (fuse.DirEntry, syscall.Errno) {
	var e fuse.DirEntry
	var dir, link bool
	if l.lister != nil {
		if cap(l.names)-len(l.names) < MaxNameLen {
			l.newSlab()
		}
		l.slabs[len(l.slabs)-1].last = l.calls
		start := len(l.names)
		named := false
		if l.sibling != nil && l.prev != "" && l.prevAt == l.pos-1 {
			l.names, e.Ino, dir, named = l.sibling.listAfter(l.names, l.prev, l.pos)
		}
		if !named {
			l.names, e.Ino, dir = l.lister.listAt(l.names, l.pos)
		}
		e.Name = unsafe.String(unsafe.SliceData(l.names[start:]), len(l.names)-start)
		l.prev, l.prevAt = e.Name, l.pos
	} else {
		te := l.t.at(l.pos)
		e.Name, e.Ino, dir, link = te.name, te.ino, te.isDir(), te.kind == linkEntry
	}
	e.Ino = l.s.ino(e.Ino)
	e.Mode = syscall.S_IFREG
	if dir {
		e.Mode = syscall.S_IFDIR
	}
	if link {
		e.Mode = syscall.S_IFLNK
	}
	l.pos++
	e.Off = uint64(l.pos)
	return e, 0
}

// newSlab starts a slab for the next names, a spare one if there is one.
func (l *listStream) newSlab() {
	if k := len(l.spare); k > 0 {
		l.names, l.spare[k-1] = l.spare[k-1][:0], nil
		l.spare = l.spare[:k-1]
	} else {
		l.names = make([]byte, 0, nameSlab)
	}
	l.slabs = append(l.slabs, nameSlabUse{b: l.names, first: l.calls, last: l.calls})
}

// nextCall notes that a call of the listing ended and another began;
// pinned: an entry was looked up in the call that ended (go-fuse keeps
// its name). The slabs that can no longer be held but by a node are
// kept for use again, unless a call pinned names since they were
// started.
func (l *listStream) nextCall(pinned bool) {
	if pinned {
		// A call that replays an interrupted one looks up names of
		// calls before it: a spare slab may hold one of them.
		l.pinned = l.calls
		clear(l.spare)
		l.spare = l.spare[:0]
	}
	l.calls++
	k := 0
	for ; k < len(l.slabs)-1 && l.slabs[k].last <= l.calls-3; k++ {
		if u := l.slabs[k]; l.pinned < u.first && len(l.spare) < maxSpareSlabs {
			l.spare = append(l.spare, u.b)
		}
	}
	if k > 0 {
		n := copy(l.slabs, l.slabs[k:])
		clear(l.slabs[n:])
		l.slabs = l.slabs[:n]
	}
}

func (l *listStream) Seekdir(_ context.Context, off uint64) syscall.Errno {
	if off > uint64(l.n) {
		off = uint64(l.n)
	}
	l.pos = int(off)
	return 0
}

func (l *listStream) Close() {}

// errno maps an error through the mount's one mapping, logging it.
func (s *Snapshot) errno(op string, err error) syscall.Errno {
	if s.m == nil {
		return toErrno(nil, op, err)
	}
	return toErrno(s.m.logger, op, err)
}

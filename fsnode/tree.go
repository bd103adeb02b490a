package fsnode

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
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

var _ fs.NodeGetattrer = (*rootDir)(nil)

func (r *rootDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.fsys.Snapshot().attr(&out.Attr, dirMode, 0)
	return 0
}

var _ fs.NodeReaddirer = (*rootDir)(nil)

func (r *rootDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	var tab dirTable = r.fsys.Snapshot().rootTable()
	if r.fsys.control != nil {
		// The control file is the mount's, not the tree's: the CLI does
		// not show it.
		tab = append(tab.(fixed), entry{name: nameControl, ino: inoControl, kind: textEntry})
	}
	return tableStream(r.fsys.Snapshot(), tab), 0
}

var _ fs.NodeLookuper = (*rootDir)(nil)

func (r *rootDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if c := r.fsys.control; c != nil && name == nameControl {
		return c.lookup(ctx, r.EmbeddedInode(), r.fsys, out), 0
	}
	s := r.fsys.Snapshot()
	return s.lookupIn(ctx, r.EmbeddedInode(), s.rootTable(), name, out)
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

// tableDir is the node of every directory below the root: a thin adapter
// that lists and looks up through the directory's table (table.go),
// opened at the first listing or lookup and kept while the kernel keeps
// the node.
type tableDir struct {
	dirNode
	once  sync.Once
	open  func() (dirTable, error) // nil once opened
	tab   dirTable
	err   error
	ahead lookAhead // renders ahead of a walk's lookups
	// lookups counts the LOOKUPs in the directory (not the entries a
	// READDIRPLUS looks up): see dirHandle.linking.
	lookups atomic.Int64
	// big: the directory lists more entries than the link limit (see
	// bigListing).
	big bool
	// opens counts the openings of a big directory (the first is not
	// cached: see OpendirHandle).
	opens atomic.Int64
	// cached: a big directory was opened with FOPEN_CACHE_DIR since the
	// last LOOKUP in it, so the kernel may answer listings from its
	// cache (see uncache).
	cached atomic.Bool
	// uncached is closed when the invalidation uncache started last is
	// done (nil: none started); guarded by uncacheMu. Not a WaitGroup: a
	// test waits for it after a LOOKUP that the kernel, not Go, orders
	// before the wait.
	uncacheMu sync.Mutex
	uncached  chan struct{}
	// lister: the last handle that opened the big directory, whose
	// listing a LOOKUP pauses (see dirHandle.pause).
	lister atomic.Pointer[dirHandle]
}

func newTableDir(s *Snapshot, open func() (dirTable, error)) *tableDir {
	return &tableDir{dirNode: dirNode{snap: s}, open: open}
}

func (d *tableDir) table() (dirTable, error) {
	d.once.Do(func() {
		d.tab, d.err = d.open()
		d.open = nil
	})
	return d.tab, d.err
}

var _ fs.NodeGetattrer = (*tableDir)(nil)

func (d *tableDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.snap.attr(&out.Attr, dirMode, 0)
	d.blksize(&out.Attr)
	return 0
}

// bigListBlock is the block size a big directory reports (see
// bigListing): the largest listing buffer glibc takes the hint for, and
// the largest request the kernel makes (FUSE's max_pages, 256 pages).
const bigListBlock = 1 << 20

// blksize sets the block size of the directory's attributes: glibc's
// opendir sizes its getdents buffer by it (32 KiB to 1 MiB), and the
// kernel (6.16 and later) asks for a listing in READDIR calls of that
// size (up to max_pages): a listing of a million names then takes a few
// hundred calls of about 4,000 entries instead of thousands of 150.
func (d *tableDir) blksize(out *fuse.Attr) {
	if d.big {
		out.Blksize = bigListBlock
	}
}

// uncache drops the kernel's cache of a big directory's listing at the
// first LOOKUP in it since it was opened with FOPEN_CACHE_DIR: a walk that
// looks entries up is reading the directory (grep -r after an ls), and its
// next READDIRPLUS calls, which the cache would answer, are to come here
// and link their entries (see dirHandle.linking; gnulib's fts lists a big
// directory in batches of 100,000 entries and reads each batch before it
// lists the next). On a goroutine: the kernel may hold the directory
// while the LOOKUP is answered.
func (d *tableDir) uncache() {
	if !d.big || !d.cached.CompareAndSwap(true, false) {
		return
	}
	n := d.EmbeddedInode()
	done := make(chan struct{})
	d.uncacheMu.Lock()
	d.uncached = done
	d.uncacheMu.Unlock()
	go func() {
		defer close(done)
		// ENOENT: the kernel forgot the directory meanwhile.
		_ = n.NotifyContent(0, 0)
	}()
}

// waitUncached returns when the invalidation uncache started last is done.
func (d *tableDir) waitUncached() {
	d.uncacheMu.Lock()
	done := d.uncached
	d.uncacheMu.Unlock()
	if done != nil {
		<-done
	}
}

// bigListing reports whether a directory of n entries is past the link
// limit: listed by name only (see dirHandle), in large replies the
// kernel keeps from the second opening on (FOPEN_CACHE_DIR: a later
// listing asks nothing).
func (s *Snapshot) bigListing(n int) bool {
	lim := s.linkLimit()
	return lim > 0 && n > lim
}

var _ fs.NodeReaddirer = (*tableDir)(nil)

func (d *tableDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	tab, err := d.table()
	if err != nil {
		return nil, d.snap.errno("list "+d.Path(nil), err)
	}
	return tableStream(d.snap, tab), 0
}

var _ fs.NodeLookuper = (*tableDir)(nil)

// Lookup answers a LOOKUP: a name used that no READDIRPLUS looked up.
// Files looked up one after the other in order (a walk reading what it
// listed by name) are rendered ahead (see lookAhead).
func (d *tableDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d.lookups.Add(1)
	d.uncache()
	if h := d.lister.Load(); h != nil {
		h.pause()
	}
	n, errno := d.lookup(ctx, name, out)
	if errno == 0 && !n.IsDir() {
		if tab, _ := d.table(); tab != nil {
			if i, ok := tab.find(name); ok {
				d.ahead.lookedUp(d.snap, tab, i)
			}
		}
	}
	return n, errno
}

// lookup makes the node of name: Lookup without rendering ahead (what a
// READDIRPLUS call looks up is rendered ahead by its dirHandle).
func (d *tableDir) lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	tab, err := d.table()
	if err != nil {
		return nil, d.snap.errno("lookup "+d.Path(nil)+"/"+name, err)
	}
	return d.snap.lookupIn(ctx, d.EmbeddedInode(), tab, name, out)
}

// tableStream lists t.
func tableStream(s *Snapshot, t dirTable) *listStream {
	l := &listStream{n: t.len(), t: t, s: s, pinned: -1}
	l.lister, _ = t.(dirLister)
	l.sibling, _ = t.(siblingLister)
	return l
}

// lookupIn makes the node of the entry of t called name, in parent.
func (s *Snapshot) lookupIn(ctx context.Context, parent *fs.Inode, t dirTable, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	e, ok := lookupEntry(t, name)
	if !ok {
		return nil, noEntry()
	}
	ino := s.ino(e.ino)
	if e.snap != nil {
		s = e.snap
	}
	switch e.kind {
	case dirEntry:
		d := newTableDir(s, e.sub)
		d.big = s.bigListing(e.entries)
		n := newDir(ctx, parent, name, s, d, ino, out)
		d.blksize(&out.Attr)
		return n, 0
	case textEntry:
		return newTextFile(ctx, parent, name, s, ino, e.text, out)
	case linkEntry:
		return newLinkNode(ctx, parent, name, s, ino, e.link, out), 0
	default:
		e.ino = ino
		return s.commandAt(ctx, parent, e, out)
	}
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
	return string(appendCommandName(nil, e, body))
}

// appendCommandName appends commandName(e, body) to dst.
func appendCommandName(dst []byte, e recEntry, body bool) []byte {
	dst = appendPadInt(dst, int64(e.off), offsetDigits)
	dst = append(dst, '-')
	dst = append(dst, e.typ.String()...)
	return append(dst, suffix(body)...)
}

// padInt writes v in decimal, zero-padded to width digits.
func padInt(v int64, width int) string {
	return string(appendPadInt(nil, v, width))
}

// pow10[w] is 10 to the power w.
var pow10 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// appendPadInt appends v in decimal, zero-padded to width digits, to dst.
func appendPadInt(dst []byte, v int64, width int) []byte {
	if v >= 0 && width >= 1 && width <= 18 && v < pow10[width] {
		// the digits from the last, in place (a listing names a million
		// entries: no strconv call and copy each)
		n := len(dst)
		dst = append(dst, make([]byte, width)...)
		for k := n + width - 1; k >= n; k-- {
			dst[k] = '0' + byte(v%10)
			v /= 10
		}
		return dst
	}
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], v, 10)
	for k := len(d); k < width; k++ {
		dst = append(dst, '0')
	}
	return append(dst, d...)
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

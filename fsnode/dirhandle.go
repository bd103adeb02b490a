package fsnode

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// A listing costs what it shows. The mount asks the kernel for
// READDIRPLUS_AUTO (see Mount): the first call of a listing, and every
// call that follows a lookup in the directory, is READDIRPLUS; the others
// are plain READDIR, names only. `ls` of a pending/ of a million entries
// then costs the names (listStream makes them without allocating), and
// renders and looks up nothing beyond the first reply; a walk that looks
// entries up while it lists them (find with tests, ls -l of a huge
// directory read in pieces) gets them in bulk.
//
// A READDIRPLUS call looks its entries up in bulk (about 150 a call), and
// the listing handle pushes the content of the files it looked up into the
// kernel's page cache (FUSE_NOTIFY_STORE) as soon as the kernel has made
// their inodes (when the next call of the listing arrives), on a goroutine
// of its own while that call is answered; the last call of the listing
// waits until everything is pushed. A walk then opens and reads those
// files without asking the server anything. Its first lookup starts
// rendering the next entries ahead, on the other core. A file that was
// listed by name only costs a LOOKUP and a READ when a walk reads it (grep
// -r lists a directory to its end before it reads a file).
//
// A listing links (looks up and pushes) at most three quarters as many
// entries as the kernelCache keeps, so that what a walk lists is still
// there when it reads it; the entries after that are listed without
// attributes and looked up one by one when used.

// dirHandle is an open directory of the tree: its listing and what the
// last READDIRPLUS call of the listing looked up. go-fuse serializes the
// calls on one handle.
type dirHandle struct {
	dir    fs.InodeEmbedder
	s      *Snapshot
	stream fs.DirStream // made at the first call

	req     context.Context // the call the pending pushes were looked up in
	push    []pushItem      // looked up in the call req
	linked  int             // entries looked up by this listing
	entries bool            // the call req has listed entries
	looked  bool            // the call req has looked entries up (READDIRPLUS)
	de      fuse.DirEntry   // the entry Readdirent returns (go-fuse copies it)
	pushing chan []pushItem // the pushes under way, given back when done; nil: none
	ahead   chan struct{}   // closed when the renders ahead are done; nil: none

	// listing: the kernelCache counts this listing as under way (from
	// its first call to the call that lists nothing, or the release).
	listing *kernelCache
}

type pushItem struct {
	node *fs.Inode
	data []byte
}

// pusher is a file node whose content a listing can push.
type pusher interface {
	pushData() []byte
}

// aheadRenderer is a directory that can render the files listed at
// positions from to to-1 ahead of their lookups, into the snapshot's
// recent renders: the kernel waits for a READDIRPLUS call while the
// lookups of its entries are made one after the other, and a second core
// renders meanwhile.
type aheadRenderer interface {
	renderAhead(from, to int)
}

// aheadWindow is how many entries a listing renders ahead (about what two
// READDIRPLUS calls carry).
const aheadWindow = 256

var (
	_ fs.FileReaddirenter = (*dirHandle)(nil)
	_ fs.FileSeekdirer    = (*dirHandle)(nil)
	_ fs.FileLookuper     = (*dirHandle)(nil)
	_ fs.FileReleasedirer = (*dirHandle)(nil)
)

var _ fs.NodeOpendirHandler = (*dirNode)(nil)

// OpendirHandle opens every directory type of the tree (they all embed
// dirNode) with a dirHandle.
func (d *dirNode) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &dirHandle{dir: d.EmbeddedInode().Operations(), s: d.snap}, 0, 0
}

// call notes the request a call belongs to. A new one means the kernel
// has taken in the reply to the last (the calls of a listing follow one
// another), so the inodes of the files that reply carried exist now: their
// content is pushed.
func (h *dirHandle) call(ctx context.Context) {
	if ctx == h.req {
		return
	}
	h.flush()
	h.req, h.entries, h.looked = ctx, false, false
	if h.listing == nil && h.s.m != nil {
		if c := h.s.m.cache.Load(); c != nil {
			h.listing = c
			c.listingStarted()
		}
	}
}

// end notes the end of the listing: this call lists nothing, and the
// kernel has taken in the replies of the others. The walk reads the files
// next: their content is in the page cache before the answer.
func (h *dirHandle) end() {
	h.wait()
	if c := h.listing; c != nil {
		h.listing = nil
		c.listingEnded()
	}
}

// flush pushes the content of the files looked up in the last call.
func (h *dirHandle) flush() {
	spare := h.wait()
	if len(h.push) == 0 {
		return
	}
	items := h.push
	h.push = spare
	h.pushing = make(chan []pushItem, 1)
	go func(done chan<- []pushItem) {
		for i, p := range items {
			// ENOENT: the kernel has dropped the node already.
			_ = p.node.WriteCache(0, p.data)
			items[i] = pushItem{}
		}
		done <- items[:0]
	}(h.pushing)
}

// wait returns when the pushes under way are done, with their slice for
// reuse.
func (h *dirHandle) wait() []pushItem {
	if h.pushing == nil {
		return nil
	}
	items := <-h.pushing
	h.pushing = nil
	return items
}

func (h *dirHandle) open(ctx context.Context) syscall.Errno {
	if h.stream != nil {
		return 0
	}
	rd, ok := h.dir.(fs.NodeReaddirer)
	if !ok {
		return syscall.ENOTDIR
	}
	s, errno := rd.Readdir(ctx)
	if errno != 0 {
		return errno
	}
	h.stream = s
	return 0
}

func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	h.call(ctx)
	if errno := h.open(ctx); errno != 0 {
		return nil, errno
	}
	if !h.stream.HasNext() {
		if !h.entries {
			h.end()
		}
		return nil, 0
	}
	e, errno := h.stream.Next()
	if errno != 0 {
		return nil, errno
	}
	h.entries = true
	h.de = e
	return &h.de, 0
}

func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	h.call(ctx)
	if errno := h.open(ctx); errno != 0 {
		return errno
	}
	sd, ok := h.stream.(fs.FileSeekdirer)
	if !ok {
		return syscall.ENOTSUP
	}
	return sd.Seekdir(ctx, off)
}

// renderAhead starts rendering the entries of the listing from position
// from on a goroutine, unless the last one is still at it.
func (h *dirHandle) renderAhead(from int) {
	td, ok := h.dir.(*tableDir)
	if !ok {
		return
	}
	ar := td.aheadRenderer()
	if ar == nil {
		return
	}
	if lim := h.s.linkLimit(); lim > 0 && h.linked >= lim {
		return // not looked up: nothing to render
	}
	if h.ahead != nil {
		select {
		case <-h.ahead:
		default:
			return
		}
	}
	done := make(chan struct{})
	h.ahead = done
	go func() {
		defer close(done)
		ar.renderAhead(from+8, from+aheadWindow) // the first few: the lookups are there first
	}()
}

// errNotLinked leaves an entry of READDIRPLUS without attributes (the
// kernel looks it up when it is used). Not an error anybody sees.
const errNotLinked = syscall.EAGAIN

// Lookup looks up an entry for READDIRPLUS.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	h.call(ctx)
	if lim := h.s.linkLimit(); lim > 0 && h.linked >= lim {
		return nil, errNotLinked
	}
	lu, ok := h.dir.(fs.NodeLookuper)
	if !ok {
		return nil, errNotLinked
	}
	if !h.looked {
		// The first entry of a READDIRPLUS call: render the next ones
		// ahead, on the other core. (A READDIR call, which looks
		// nothing up, renders nothing.)
		h.looked = true
		if ls, ok := h.stream.(*listStream); ok {
			h.renderAhead(ls.pos - 1)
		}
	}
	child, errno := lu.Lookup(ctx, name, out)
	if errno != 0 {
		return nil, errno
	}
	h.linked++
	if p, ok := child.Operations().(pusher); ok {
		if data := p.pushData(); len(data) > 0 {
			h.push = append(h.push, pushItem{child, data})
		}
	}
	return child, 0
}

func (h *dirHandle) Releasedir(context.Context, uint32) {
	// Every reply has been taken in by now.
	h.flush()
	h.wait()
	if h.stream != nil {
		h.stream.Close()
	}
	h.end()
}

// linkLimit is how many entries one listing looks up (0: no limit).
func (s *Snapshot) linkLimit() int {
	if s.m == nil {
		return 0
	}
	if c := s.m.cache.Load(); c != nil {
		return c.limit / 4 * 3
	}
	return 0
}

package fsnode

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Rendering ahead of a listing that links (see dirHandle). A READDIRPLUS
// call of such a listing looks its entries up one after the other, each
// a render of the file (its size is in the reply) and a node, while the
// walk waits for the reply; the content is pushed to the kernel during
// the next call. The listing's linkAhead renders the command files it is
// about to look up on a goroutine of its own (the other core), in chunks
// of linkChunk positions, up to linkChunks chunks ahead of the lookups.
// A message's .json and its .body, next to each other in a pending/, come
// from one decoding of its record.
//
// What it renders goes to slabs that are reused once pushed (pushSlab),
// not to the snapshot's recent renders: a walk of a pending/ renders
// hundreds of thousands of files, and garbage of their size made the
// collector mark the whole heap every few thousand files. The content is
// nowhere once pushed; a READ (the kernel dropped the page) renders it
// again.
//
// A lookup the goroutine has nothing for (a file it skipped: not a
// command, known to the kernel already, failed to render; a position
// past what it was asked for) renders its own (tableDir.lookup), which
// also reports errors.

const (
	linkChunk  = 64 // positions a chunk; even: a message's two files are in one
	linkChunks = 16 // chunks rendered ahead of the lookups (4: grep -r over a linked pending/ 9% slower)
)

// linkChunkBytes bounds the content a chunk holds: the goroutine stops
// rendering a chunk once it holds that much, and its later files are
// rendered by their lookups. So what waits for the lookups stays within
// linkChunks times linkChunkBytes and a message's two files (16 MiB and
// 16 such pairs) whatever the messages' size; without the bound, a queue
// of 1 MB messages would have a gigabyte rendered ahead.
const linkChunkBytes = 1 << 20

// linkedFile is a file rendered ahead of its lookup.
type linkedFile struct {
	ok   bool
	f    *dataFile
	e    recEntry
	ino  uint64 // the table's number (before Snapshot.ino)
	body bool
	data []byte // in slab (nil: its own)
	slab *pushSlab
}

// linkChunkT is a run of positions of the listing rendered by the
// goroutine: files is written by it and read once done is closed.
type linkChunkT struct {
	start, end int       // positions [start, end)
	skip       twoRounds // positions of the later round are not rendered (nil: none)
	files      [linkChunk]linkedFile
	done       chan struct{}
}

// linkAhead renders ahead of the lookups of one listing. take is called
// by the listing's calls (one at a time), the rest by its goroutine.
type linkAhead struct {
	s      *Snapshot
	t      dirTable
	un     unnamedLister // t's, if it has one
	lister dirLister     // t's, if it has one: for the names the kernel knows
	dir    *fs.Inode     // the directory listed
	// chunkBytes: linkChunkBytes (a test's own bound)
	chunkBytes int

	work   chan *linkChunkT // to the goroutine
	stop   atomic.Bool      // the listing is over: render nothing more
	exited chan struct{}

	chunks []*linkChunkT // handed to the goroutine, in order (the calls')

	// the goroutine's
	slab  *pushSlab
	bufs  *renderBuf
	names []byte
}

func newLinkAhead(s *Snapshot, t dirTable, dir *fs.Inode) *linkAhead {
	return newLinkAheadBound(s, t, dir, linkChunkBytes)
}

// newLinkAheadBound is newLinkAhead with chunkBytes in place of
// linkChunkBytes (tests).
func newLinkAheadBound(s *Snapshot, t dirTable, dir *fs.Inode, chunkBytes int) *linkAhead {
	a := &linkAhead{s: s, t: t, dir: dir, chunkBytes: chunkBytes, work: make(chan *linkChunkT, linkChunks), exited: make(chan struct{})}
	a.un, _ = t.(unnamedLister)
	a.lister, _ = t.(dirLister)
	go a.run()
	return a
}

// take returns the file rendered for position i, if any, once the
// goroutine is done with its chunk, and has the goroutine render the
// chunks after it (up to position end, and not skip's later round).
// The caller owns what it takes (it is to release its slab).
func (a *linkAhead) take(i, end int, skip twoRounds) (linkedFile, bool) {
	for len(a.chunks) > 0 && a.chunks[0].start+linkChunk <= i {
		a.drop(a.chunks[0])
		a.chunks = a.chunks[1:]
	}
	if len(a.chunks) > 0 && i < a.chunks[0].start {
		// back to earlier positions (a call replayed after an
		// interrupt, a seek): start again there
		for _, c := range a.chunks {
			a.drop(c)
		}
		a.chunks = a.chunks[:0]
	}
	next := i - i%linkChunk
	if len(a.chunks) > 0 {
		next = a.chunks[len(a.chunks)-1].start + linkChunk
	}
	for len(a.chunks) < linkChunks && next < end {
		c := &linkChunkT{start: next, end: min(next+linkChunk, end), skip: skip, done: make(chan struct{})}
		a.chunks = append(a.chunks, c)
		a.work <- c // never blocks: at most linkChunks are not done
		next += linkChunk
	}
	if len(a.chunks) == 0 || i >= a.chunks[0].end {
		return linkedFile{}, false
	}
	c := a.chunks[0]
	<-c.done
	lf := c.files[i-c.start]
	c.files[i-c.start] = linkedFile{}
	return lf, lf.ok
}

// drop waits until the goroutine is done with c and releases what nobody
// took.
func (a *linkAhead) drop(c *linkChunkT) {
	<-c.done
	for k := range c.files {
		c.files[k].slab.release()
		c.files[k] = linkedFile{}
	}
}

// close stops the goroutine, once it is done with the chunk it is at,
// and releases what nobody took.
func (a *linkAhead) close() {
	a.stop.Store(true)
	for _, c := range a.chunks {
		a.drop(c)
	}
	a.chunks = nil
	close(a.work)
	<-a.exited
}

func (a *linkAhead) run() {
	defer close(a.exited)
	a.bufs = renderBufs.Get().(*renderBuf)
	defer func() {
		renderBufs.Put(a.bufs)
		a.slab.release()
		a.slab = nil
	}()
	for c := range a.work {
		if !a.stop.Load() {
			a.render(c)
		}
		close(c.done)
	}
}

// entry is the entry at position i, without its name where the table
// can.
func (a *linkAhead) entry(i int) entry {
	if a.un != nil {
		return a.un.unnamedAt(i)
	}
	return a.t.at(i)
}

// wanted reports whether position i of c is to be rendered: in the round
// the listing links, and not a file the kernel has (a second listing).
func (a *linkAhead) wanted(c *linkChunkT, i int) bool {
	if c.skip != nil && c.skip.laterRound(i) {
		return false
	}
	if a.lister == nil {
		return true
	}
	a.names, _, _ = a.lister.listAt(a.names[:0], i)
	return a.dir.GetChild(unsafe.String(unsafe.SliceData(a.names), len(a.names))) == nil
}

// render renders the command files of c.
func (a *linkAhead) render(c *linkChunkT) {
	held := 0 // bytes of content c holds
	for i := c.start; i < c.end; i++ {
		if a.stop.Load() || held >= a.chunkBytes {
			return
		}
		k := i - c.start
		if c.files[k].ok || !a.wanted(c, i) {
			continue
		}
		e := a.entry(i)
		if e.kind != cmdEntry {
			continue
		}
		f, re, err := a.s.command(e.loc, e.body)
		if err != nil {
			continue
		}
		// A message's .json followed by its .body: both from one
		// decoding.
		var next entry
		pair := !e.body && hasBody(re.typ) && i+1 < c.end
		if pair {
			next = a.entry(i + 1)
			pair = next.kind == cmdEntry && next.body && next.loc == e.loc && a.wanted(c, i+1)
		}
		json, body, err := f.renderTo(a.bufs, re, !e.body, e.body || pair)
		if err != nil {
			continue
		}
		if a.s.m != nil {
			n := int64(1)
			if pair {
				n = 2
			}
			a.s.m.renders.Add(n)
		}
		if e.body {
			c.files[k] = a.keep(f, re, e, body)
			held += len(body)
			continue
		}
		c.files[k] = a.keep(f, re, e, json)
		held += len(json)
		if pair {
			c.files[k+1] = a.keep(f, re, next, body)
			held += len(body)
		}
	}
}

// keep copies the content of e into a slab.
func (a *linkAhead) keep(f *dataFile, re recEntry, e entry, data []byte) linkedFile {
	buf, slab := a.alloc(len(data))
	copy(buf, data)
	return linkedFile{ok: true, f: f, e: re, ino: e.ino, body: e.body, data: buf, slab: slab}
}

// pushSlab holds content rendered ahead until it is pushed: each file's
// content is a slice of buf, and refs counts them (and the goroutine
// while it appends to it); the last release puts it back in the pool.
type pushSlab struct {
	buf  []byte
	refs atomic.Int32
}

// slabSize is the size of a slab; content bigger than an eighth of it
// has an allocation of its own.
const slabSize = 256 << 10

var slabs = sync.Pool{New: func() any { return &pushSlab{buf: make([]byte, 0, slabSize)} }}

// alloc returns room for n bytes of content, and its slab (nil: its own).
func (a *linkAhead) alloc(n int) ([]byte, *pushSlab) {
	if n > slabSize/8 {
		return make([]byte, n), nil
	}
	p := a.slab
	if p == nil || cap(p.buf)-len(p.buf) < n {
		p.release()
		p = slabs.Get().(*pushSlab)
		p.buf = p.buf[:0]
		p.refs.Store(1) // the goroutine's, while it appends
		a.slab = p
	}
	at := len(p.buf)
	p.buf = p.buf[:at+n]
	p.refs.Add(1)
	return p.buf[at : at+n : at+n], p
}

// release drops one reference to p (nil: none).
func (p *pushSlab) release() {
	if p != nil && p.refs.Add(-1) == 0 {
		slabs.Put(p)
	}
}

// lookupLinked makes the node of the file called name that the listing
// rendered ahead, with its content to push; nil when there is none (the
// caller looks it up the usual way). i is the position of the entry the
// listing returned last (the one go-fuse looks up, unless it replays an
// interrupted call).
func (h *dirHandle) lookupLinked(ctx context.Context, td *tableDir, name string, out *fuse.EntryOut) *fs.Inode {
	ls, ok := h.stream.(*listStream)
	if !ok {
		return nil
	}
	tab, err := td.table()
	if err != nil {
		return nil
	}
	i := ls.pos - 1
	if !h.named(tab, i, name) {
		if i, ok = tab.find(name); !ok || !h.named(tab, i, name) {
			return nil
		}
	}
	end := ls.n
	if lim := h.s.linkLimit(); lim > 0 {
		end = min(end, ls.pos+lim-h.linked)
	}
	if h.la == nil {
		h.la = newLinkAhead(h.s, tab, td.EmbeddedInode())
	}
	lf, ok := h.la.take(i, end, h.first)
	if !ok {
		return nil
	}
	n := &commandFile{f: lf.f, e: lf.e, body: lf.body, size: int64(len(lf.data))}
	h.s.attr(&out.Attr, fileMode, n.size)
	child := h.s.newInode(ctx, td.EmbeddedInode(), name, n, fs.StableAttr{Mode: syscall.S_IFREG, Ino: h.s.ino(lf.ino), Gen: h.s.Gen})
	if len(lf.data) > 0 {
		h.push = append(h.push, pushItem{node: child, data: lf.data, slab: lf.slab})
	} else {
		lf.slab.release()
	}
	return child
}

// named reports whether the entry at position i of t is called name.
func (h *dirHandle) named(t dirTable, i int, name string) bool {
	if i < 0 || i >= t.len() {
		return false
	}
	if l, ok := t.(dirLister); ok {
		h.names, _, _ = l.listAt(h.names[:0], i)
		return string(h.names) == name
	}
	return t.at(i).name == name
}

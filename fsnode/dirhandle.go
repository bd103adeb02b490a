package fsnode

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// A walk that reads every file (grep -r, tar) costs, per file, a LOOKUP
// and a READ round trip through the kernel, each two context switches or
// more: that, not rendering, is where such a walk spends its time. A
// listing of a directory that fits in the link limit (three quarters of
// the kernelCache) therefore looks its entries up in bulk (READDIRPLUS,
// about 150 a call), and the listing handle pushes the content of the
// files it looked up into the kernel's page cache (FUSE_NOTIFY_STORE) as
// soon as the kernel has made their inodes (when the next call of the
// listing arrives), on a goroutine of its own while that call and the
// next are answered (pushDepth calls' pushes under way at most); the
// last call of the listing waits until everything is pushed. A walk
// then opens and reads those files without asking the server anything:
// grep -r over a pending/ of 216,546 files costs 1,436 READDIRPLUS calls
// and a push a file, nothing else. The lookups of a
// call are rendered ahead of them on a goroutine of their own (the other
// core), a message's two files from one decoding, into slabs reused once
// pushed (linkahead.go).
//
// A bigger directory (a DLQ's pending/ of a million entries) is listed by
// name only: `ls` then costs the names (listStream makes them without
// allocating), not a render, a node and a push per entry, in calls of up
// to 1 MiB (about 4,000 entries; see tableDir.blksize) that the kernel
// keeps from the second opening of the directory on (FOPEN_CACHE_DIR): a
// later listing asks nothing while the kernel keeps the pages. A walk that
// reads it pays a LOOKUP and a READ per file instead, rendered ahead of
// its lookups (lookAhead): grep -r (gnulib's fts) lists a directory to
// its end before it reads a file, and reads one of more than 10,000
// entries in inode order, every .json before the first .body, so that
// the .body files a pending/ listing linked (one entry in two) would
// mostly be dropped from the kernel cache before the walk came to them.
// A data file's directory, listed in inode order, links its first
// entries up to the limit (inodeOrdered). The calls of a big listing also
// link once the walk looks entries up (a LOOKUP in the directory since the
// last call), as the kernel's READDIRPLUS_AUTO would: fts lists a
// directory of more than 100,000 entries in batches, and the batches after
// the first are linked, up to the limit each (see linking).

// dirHandle is an open directory of the tree: its listing and what the
// last READDIRPLUS call of the listing looked up. go-fuse serializes the
// calls on one handle.
type dirHandle struct {
	dir    fs.InodeEmbedder
	s      *Snapshot
	stream fs.DirStream // made at the first call

	req     context.Context   // the call the pending pushes were looked up in
	push    []pushItem        // looked up in the call req
	linked  int               // entries looked up by this listing (since the last batch: see linking)
	walked  bool              // LOOKUPs followed a call of this listing (see linking)
	first   twoRounds         // the call req links only what a walk reads first (see linking); nil: all
	entries bool              // the call req has listed entries
	looked  bool              // the call req has looked entries up (READDIRPLUS)
	link    bool              // the call req links its entries (see linking)
	seen    int64             // the directory's LOOKUP count at the last call that looked up
	de      fuse.DirEntry     // the entry Readdirent returns (go-fuse copies it)
	pushing []chan []pushItem // the pushes under way, oldest first, each given back when done
	spare   []pushItem        // a slice given back, for the next call
	la      *linkAhead        // renders ahead of the lookups (linkahead.go); nil: none yet
	names   []byte            // scratch for a name (named)
	pinned  bool              // the call req looked an entry up: go-fuse keeps its name (see listStream)

	// listing: the kernelCache counts this listing as under way (from
	// its first call to the call that lists nothing, or the release, or
	// a LOOKUP in a big directory: see pause). Set by the calls, taken
	// by a LOOKUP too.
	listing atomic.Pointer[kernelCache]
}

type pushItem struct {
	node *fs.Inode
	data []byte
	slab *pushSlab // data's, released once pushed (nil: none)
}

// pusher is a file node whose content a listing can push.
type pusher interface {
	pushData() []byte
}

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
	h := &dirHandle{dir: d.EmbeddedInode().Operations(), s: d.snap}
	var flags uint32
	if td, ok := h.dir.(*tableDir); ok {
		h.seen = td.lookups.Load()
		if td.big {
			td.lister.Store(h)
			// The kernel keeps the listing of a directory opened before
			// (the tree does not change): a later one is answered from
			// its cache. Not the first: filling the cache costs the
			// kernel a fifth of an `ls -f` of a million entries (0.73
			// against 0.94 s, on the bench's store), which a listing
			// made once (a script's, ls | wc -l) never gets back. Not
			// for smaller directories, whose listings link their entries.
			if td.opens.Add(1) > 1 {
				flags = fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE
				td.cached.Store(true)
			}
		}
	}
	return h, flags, 0
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
	if ls, ok := h.stream.(*listStream); ok && h.req != nil {
		ls.nextCall(h.pinned)
	}
	h.req, h.entries, h.looked, h.pinned = ctx, false, false, false
	if h.listing.Load() == nil && h.s.m != nil {
		if c := h.s.m.cache.Load(); c != nil {
			// Counted before it is set: a LOOKUP that pauses the
			// listing meanwhile (pause) finds nothing to end.
			c.listingStarted()
			h.listing.Store(c)
		}
	}
}

// end notes the end of the listing: this call lists nothing, and the
// kernel has taken in the replies of the others. The walk reads the files
// next: their content is in the page cache before the answer.
func (h *dirHandle) end() {
	h.wait()
	if h.la != nil {
		h.la.close()
		h.la = nil
	}
	if c := h.listing.Swap(nil); c != nil {
		c.listingEnded()
	}
}

// pause notes a LOOKUP in the big directory h lists: the walk reads what
// it listed (gnulib's fts lists a batch of 100,000 entries whole, then
// reads it) and sends no listing call meanwhile, so the kernelCache may
// drop nodes again, and does so now rather than in the middle of the
// next calls, whose entries the kernel would then take for stale (one
// GETATTR per file). The next call counts the listing again.
func (h *dirHandle) pause() {
	if c := h.listing.Swap(nil); c != nil {
		c.listingPaused()
	}
}

// flush pushes the content of the files looked up in the last call, on
// a goroutine of its own, while the calls after it are answered: up to
// pushDepth calls' pushes are under way at once before a call waits for
// the oldest.
func (h *dirHandle) flush() {
	if len(h.push) == 0 {
		return
	}
	if len(h.pushing) >= pushDepth {
		h.spare = <-h.pushing[0]
		h.pushing = h.pushing[1:]
	}
	items := h.push
	h.push, h.spare = h.spare, nil
	done := make(chan []pushItem, 1)
	h.pushing = append(h.pushing, done)
	go func() {
		for i, p := range items {
			// ENOENT: the kernel has dropped the node already.
			_ = p.node.WriteCache(0, p.data)
			p.slab.release()
			items[i] = pushItem{}
		}
		done <- items[:0]
	}()
}

// pushDepth is how many calls' pushes may be under way at once.
const pushDepth = 3

// wait returns when the pushes under way are done.
func (h *dirHandle) wait() {
	for _, done := range h.pushing {
		h.spare = <-done
	}
	h.pushing = h.pushing[:0]
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

// errNotLinked leaves an entry of READDIRPLUS without attributes (the
// kernel looks it up when it is used). Not an error anybody sees.
const errNotLinked = syscall.EAGAIN

// Lookup looks up an entry for READDIRPLUS.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	h.call(ctx)
	if !h.looked {
		// The first entry of a READDIRPLUS call: decide whether the
		// call links.
		h.looked = true
		h.link = h.linking()
	}
	if !h.link || h.s.linkLimit() > 0 && h.linked >= h.s.linkLimit() {
		return nil, errNotLinked
	}
	if h.first != nil {
		if ls, ok := h.stream.(*listStream); ok && h.first.laterRound(ls.pos-1) {
			return nil, errNotLinked
		}
	}
	if child := h.relisted(name, out); child != nil {
		h.linked++
		h.pinned = true
		return child, 0
	}
	var lookup func(context.Context, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno)
	if td, ok := h.dir.(*tableDir); ok {
		if child := h.lookupLinked(ctx, td, name, out); child != nil {
			h.linked++
			h.pinned = true
			return child, 0
		}
		lookup = td.lookup // not rendered ahead as for a LOOKUP (lookAhead)
	} else if lu, ok := h.dir.(fs.NodeLookuper); ok {
		lookup = lu.Lookup
	} else {
		return nil, errNotLinked
	}
	child, errno := lookup(ctx, name, out)
	if errno != 0 {
		return nil, errno
	}
	h.linked++
	h.pinned = true
	if p, ok := child.Operations().(pusher); ok {
		if data := p.pushData(); len(data) > 0 {
			h.push = append(h.push, pushItem{node: child, data: data})
		}
	}
	return child, 0
}

// sizedFile is a file node that knows its size without rendering.
type sizedFile interface {
	fileSize() int64
}

func (f *textFile) fileSize() int64    { return f.size }
func (n *commandFile) fileSize() int64 { return n.size }

// relisted answers the lookup of a file that the kernel has already (a
// second listing of a directory, a second grep -r): with its node, and
// no render and no push, its content being in the page cache still (or
// read again if the kernel dropped it). Nil when the file is new.
func (h *dirHandle) relisted(name string, out *fuse.EntryOut) *fs.Inode {
	dir := h.dir.EmbeddedInode()
	child := dir.GetChild(name)
	if child == nil {
		return nil
	}
	f, ok := child.Operations().(sizedFile)
	if !ok {
		return nil
	}
	h.s.attr(&out.Attr, fileMode, f.fileSize())
	if h.s.m != nil {
		h.s.m.cache.Load().add(dir, name, child) // used again: dropped last
	}
	return child
}

func (h *dirHandle) Releasedir(context.Context, uint32) {
	// Every reply has been taken in by now.
	h.flush()
	h.wait()
	if h.stream != nil {
		h.stream.Close()
	}
	h.end()
	if td, ok := h.dir.(*tableDir); ok {
		td.lister.CompareAndSwap(h, nil)
	}
}

// linking reports whether the READDIRPLUS call under way links (looks up
// and pushes) its entries: every call of a listing of a directory that
// fits in the link limit; in a bigger one, every call from the first that
// follows a LOOKUP in the directory (a walk that uses the entries as it
// lists them), as the kernel's READDIRPLUS_AUTO would, and the later
// calls of the listing too: gnulib's fts (grep -r, du, find) lists a
// directory of more than 100,000 entries in batches of that many, each
// listed whole before it reads a file of it, so that only the first call
// of a batch follows lookups.
//
// The link limit bounds what the listing links until the walk has looked
// up as many entries (it read a batch): by then the kernel cache has
// dropped what the listing linked before, so that it never holds more
// than the link limit of nodes the walk has not read yet. A walk that
// looks entries up as it lists them (du) looks up fewer between two calls
// and links up to the limit once, as before.
//
// fts reads a batch in inode order, a pending/'s .json files before its
// .body files (twoRounds): while the rest of the listing does not fit in
// what the limit leaves, a call links the .json files only. Linking both
// would link the .body files of the first half of the batch, and the
// lookups of the .json files of its second half would make the kernel
// cache drop them before the walk came to them.
func (h *dirHandle) linking() bool {
	lim := h.s.linkLimit()
	h.first = nil
	td, ok := h.dir.(*tableDir)
	if !ok {
		return true // the root: a few entries
	}
	n := td.lookups.Load()
	looked := n - h.seen // LOOKUPs in the directory since the last call
	h.seen = n
	if lim <= 0 {
		return true
	}
	ls, _ := h.stream.(*listStream)
	if ls != nil && ls.n <= lim {
		return true
	}
	tab, _ := td.table()
	if _, ok := tab.(inodeOrdered); ok {
		return true // up to the link limit
	}
	if looked > 0 {
		h.walked = true
	}
	if looked >= int64(lim) {
		h.linked = 0 // a batch read: what was linked before is dropped
	}
	if !h.walked {
		return false
	}
	if tr, ok := tab.(twoRounds); ok && ls != nil && ls.n-(ls.pos-1) > lim-h.linked {
		h.first = tr
	}
	return true
}

// twoRounds is a big table that a walk in inode order reads in two
// rounds: a pending/ list, its .json files (kindCommand inodes), then its
// .body files (kindBody).
type twoRounds interface {
	// laterRound reports whether the entry at position i is read in the
	// second round.
	laterRound(i int) bool
}

// inodeOrdered is a table listed in inode order, whose size is bounded:
// a data file's directory (its commands, then their bodies, by offset).
// gnulib's fts reads a directory of more than 10,000 entries in inode
// order, so a walk reads what a listing of such a table linked first
// before the kernel cache drops it: a listing bigger than the link limit
// links up to it, where a listing of another big table (a pending/ lists
// a .json and a .body by turns, and may hold a million) links nothing.
type inodeOrdered interface {
	inodeOrdered()
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

// lookAhead renders the files a walk is about to look up, on a goroutine
// of its own (the other core), into the snapshot's recent renders, where
// the LOOKUP and then the READ of each find it. A walk that reads what it
// listed by name only (grep -r: see dirHandle) looks the files up in
// listing order, or, in a directory of more than 10,000 entries, in inode
// order (gnulib's fts sorts them so): the .json files, then the .body
// files, each in journal order, which in pending/ is every other entry.
// The step between two lookups, one position or two, tells which; any
// other step stops the rendering ahead until two lookups agree again.
type lookAhead struct {
	mu    sync.Mutex // guards the fields below
	last  int        // position of the last lookup, plus one (0: none)
	until int        // positions from last to until (by the step) are rendered or being
	busy  bool       // a goroutine is rendering
}

// lookAheadWindow is how many files a walk's lookups are rendered ahead
// of it.
const lookAheadWindow = 64

// lookedUp notes a LOOKUP of the file at position i of t and, when the
// lookups go in order, starts rendering the next files ahead.
func (a *lookAhead) lookedUp(s *Snapshot, t dirTable, i int) {
	a.mu.Lock()
	step := i + 1 - a.last
	if a.last == 0 {
		step = 0 // the first lookup: no step yet
	}
	a.last = i + 1
	if step != 1 && step != 2 {
		a.until = 0
		a.mu.Unlock()
		return
	}
	from := i + step
	if a.until > from {
		from += (a.until - from + step - 1) / step * step
	}
	to := min(i+lookAheadWindow*step, t.len())
	if a.busy || from >= to || from > i+lookAheadWindow*step/2 {
		a.mu.Unlock()
		return // rendering, or far enough ahead
	}
	a.until, a.busy = to, true
	a.mu.Unlock()
	go func() {
		renderEntries(s, t, from, to, step)
		a.mu.Lock()
		a.busy = false
		a.mu.Unlock()
	}()
}

// renderEntries renders the commands at positions from, from+step, ...
// before to of t into the snapshot's recent renders, those not there
// already.
func renderEntries(s *Snapshot, t dirTable, from, to, step int) {
	for i := from; i < to; i += step {
		e := t.at(i)
		if e.kind != cmdEntry {
			continue
		}
		f, re, err := s.command(e.loc, e.body)
		if err != nil {
			continue
		}
		k := renderKey{loc: re.loc(f.info.ID), body: e.body}
		if _, ok := s.recent.get(k); ok {
			continue
		}
		if b, err := s.renderCommand(f, re, e.body); err == nil {
			s.recent.put(k, b)
		}
	}
}

package fsnode

import (
	"sync"
	"sync/atomic"
	"syscall"
	"weak"

	"github.com/hanwen/go-fuse/v2/fs"
)

// kernelCache bounds how many nodes of the tree the kernel keeps, and so
// the mount's memory. go-fuse keeps an Inode for every node the kernel
// knows until the kernel forgets it, and the kernel keeps the names it has
// looked up (entry timeout: an hour) until memory runs short: a walk of
// the whole tree (grep -r) would otherwise leave a node per file in both.
//
// Every node a lookup makes below the root is queued here, oldest first.
// Once more than limit are queued, the oldest are dropped from the
// kernel, pruneBatch at a time (FUSE_NOTIFY_PRUNE, Linux 6.16+: one
// message per batch; the kernel skips the nodes in use and sends FORGET
// for the others, and go-fuse then drops them). A batch is sent newest
// first, so that the files of a directory go before it. The nodes the
// kernel kept (open files, working directories, directories whose
// children it still knows) come back at the end of the queue. On kernels
// without NOTIFY_PRUNE the names the lookups of the batch made for files
// are invalidated instead (FUSE_NOTIFY_INVAL_ENTRY, one message per
// name; directories stay: one in use must stay valid, and there are only
// as many as the tree has).
//
// When: the kernel takes the attributes of the entries of a READDIRPLUS
// reply for stale if it evicted any inode while the request was out, and
// then asks for them again, one GETATTR per file. So while a directory is
// being listed (see dirHandle) nothing is dropped, unless the queue grows
// to twice the limit; the last call of the last listing (whose reply
// carries no entries) drops what is due before it answers. Otherwise a
// goroutine does, woken by the lookup that makes the queue too long; it
// also does every name invalidation, which must never hold up a request
// (the kernel may hold the name's directory locked for that request).
//
// The queue holds weak pointers: a node the kernel forgot for another
// reason (a refresh invalidated its tree) is garbage at once, with its
// snapshot.
type kernelCache struct {
	limit int
	root  *fs.Inode     // any node of the mount: the notifications go through it
	kick  chan struct{} // wakes the goroutine: the queue is long, or a listing ended
	done  chan struct{}
	wg    sync.WaitGroup

	mu sync.Mutex // guards the fields below
	// queue holds the nodes from position head on, oldest first: a
	// batch is taken from the front by moving head, and the slice is
	// moved down once head passes half of it (a copy of the whole queue
	// per batch cost a walk past a big kernel cache microseconds a file).
	queue    []cached
	head     int
	listings int                    // directory listings under way
	inval    []cached               // file names the goroutine is to invalidate
	parent   weak.Pointer[fs.Inode] // of the last add: lookups come a directory at a time

	// noPrune: the kernel does not know NOTIFY_PRUNE.
	noPrune atomic.Bool

	pruning sync.Mutex // serializes trim; guards kept
	// kept: the nodes the last trim dropped, whose survivors the next
	// one queues again.
	kept []cached
}

// cached is a name a lookup gave the kernel: the node, and the name in
// its directory (for kernels without NOTIFY_PRUNE).
type cached struct {
	node   weak.Pointer[fs.Inode]
	parent weak.Pointer[fs.Inode]
	name   string
	dir    bool
}

// pruneBatch nodes are dropped at a time: one message to the kernel.
const pruneBatch = 1024

// DefaultKernelCache is Options.KernelCache's default: room for a data
// file's directory of tens of thousands of commands (a 32 MiB file of
// 1 KiB messages) listed by READDIRPLUS and then read (see dirHandle),
// at a few hundred bytes of the mount's memory a node.
const DefaultKernelCache = 65536

func newKernelCache(root *fs.Inode, limit int) *kernelCache {
	c := &kernelCache{limit: max(limit, pruneBatch), root: root, kick: make(chan struct{}, 1), done: make(chan struct{})}
	c.wg.Add(1)
	go c.run()
	return c
}

// add queues the node n a lookup of name in parent just handed to the
// kernel.
func (c *kernelCache) add(parent *fs.Inode, name string, n *fs.Inode) {
	if c == nil {
		return
	}
	e := cached{node: weak.Make(n), name: name, dir: n.IsDir()}
	c.mu.Lock()
	if c.parent.Value() != parent {
		c.parent = weak.Make(parent)
	}
	e.parent = c.parent
	c.queue = append(c.queue, e)
	due := c.dueLocked()
	c.mu.Unlock()
	if due {
		c.wake()
	}
}

// listingStarted notes that a directory listing started.
func (c *kernelCache) listingStarted() {
	c.mu.Lock()
	c.listings++
	c.mu.Unlock()
}

// listingEnded notes that a listing ended and, when it was the last one,
// drops what is due now, before the caller (a request) answers the
// kernel. Invalidating names cannot be done there: the kernel holds the
// directory of the request locked until the answer, and an invalidation
// in it would wait for that lock; the goroutine does it.
func (c *kernelCache) listingEnded() {
	c.mu.Lock()
	c.listings--
	due := c.dueLocked()
	c.mu.Unlock()
	if !due {
		return
	}
	if c.noPrune.Load() {
		c.wake()
		return
	}
	if inval := c.trim(); len(inval) > 0 {
		c.mu.Lock()
		c.inval = append(c.inval, inval...)
		c.mu.Unlock()
		c.wake()
	}
}

// listingPaused notes that a listing paused: a walk reads what it listed
// (see dirHandle.pause). What is due is dropped by the goroutine: the
// caller is a LOOKUP, which the walk waits for.
func (c *kernelCache) listingPaused() {
	c.mu.Lock()
	c.listings--
	due := c.dueLocked()
	c.mu.Unlock()
	if due {
		c.wake()
	}
}

// queued is how many nodes are queued. c.mu held.
func (c *kernelCache) queuedLocked() int { return len(c.queue) - c.head }

// dueLocked reports whether a batch is to be dropped now. c.mu held.
func (c *kernelCache) dueLocked() bool {
	n := c.queuedLocked()
	return n >= c.limit+pruneBatch && (c.listings == 0 || n >= 2*c.limit)
}

func (c *kernelCache) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// stop ends the goroutine (at unmount).
func (c *kernelCache) stop() {
	if c == nil {
		return
	}
	close(c.done)
	c.wg.Wait()
}

func (c *kernelCache) run() {
	defer c.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case <-c.kick:
		}
		inval := c.trim()
		c.mu.Lock()
		inval, c.inval = append(inval, c.inval...), nil
		c.mu.Unlock()
		for _, e := range inval {
			if parent := e.parent.Value(); parent != nil {
				// ENOENT: the kernel forgot it meanwhile.
				_ = parent.NotifyEntry(e.name)
			}
		}
	}
}

// trim drops batches of the oldest nodes while that is due. On a kernel
// without NOTIFY_PRUNE it returns the files of the batches instead, whose
// names the caller is to invalidate (outside c.pruning, which a request
// may be waiting for).
func (c *kernelCache) trim() (inval []cached) {
	c.pruning.Lock()
	defer c.pruning.Unlock()
	c.requeue()
	for {
		c.mu.Lock()
		if !c.dueLocked() {
			c.mu.Unlock()
			return inval
		}
		batch := make([]cached, pruneBatch)
		copy(batch, c.queue[c.head:])
		clear(c.queue[c.head : c.head+pruneBatch])
		c.head += pruneBatch
		if c.head >= len(c.queue)/2 {
			n := copy(c.queue, c.queue[c.head:])
			clear(c.queue[n:])
			c.queue, c.head = c.queue[:n], 0
		}
		c.mu.Unlock()
		inval = c.prune(batch, inval)
	}
}

// requeue puts the nodes the kernel kept when the last trim dropped them
// back at the end of the queue. (Not earlier: go-fuse drops the others
// when the kernel's FORGETs come, some time after the prune.) c.pruning
// held.
func (c *kernelCache) requeue() {
	var live []cached
	for _, e := range c.kept {
		if n := e.node.Value(); n != nil && !forgotten(n) {
			live = append(live, e)
		}
	}
	clear(c.kept)
	c.kept = c.kept[:0]
	if len(live) == 0 {
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, live...)
	c.mu.Unlock()
}

// prune asks the kernel to forget the nodes of batch, newest first, or
// appends the file names of the batch to inval when the kernel cannot.
// c.pruning held.
func (c *kernelCache) prune(batch []cached, inval []cached) []cached {
	if !c.noPrune.Load() {
		nodes := make([]*fs.Inode, 0, len(batch))
		for i := len(batch) - 1; i >= 0; i-- {
			if n := batch[i].node.Value(); n != nil && !forgotten(n) {
				nodes = append(nodes, n)
			}
		}
		if len(nodes) == 0 {
			return inval
		}
		switch c.root.NotifyPrune(nodes) {
		case 0:
			c.kept = append(c.kept, batch...)
			return inval
		case syscall.ENOSYS:
			c.noPrune.Store(true)
		default:
			return inval // unmounting
		}
	}
	for _, e := range batch {
		if !e.dir {
			inval = append(inval, e)
		}
	}
	return inval
}

// forgotten reports whether go-fuse dropped n from the tree: the kernel
// forgot it (or go-fuse used another node for the same inode number).
func forgotten(n *fs.Inode) bool {
	_, parent := n.Parent()
	return parent == nil
}

package fsnode

import (
	"slices"
	"sync"
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
// Every node a lookup makes below the root is queued here, oldest first;
// when more than limit are queued, the oldest pruneBatch go to a
// goroutine that asks the kernel to drop them (FUSE_NOTIFY_PRUNE, Linux
// 6.16+: one message for the whole batch; the kernel skips the nodes in
// use and sends FORGET for the others, and go-fuse then drops them). A
// batch is sent newest first, so that the files of a directory go before
// it. The nodes the kernel kept (open files, working directories,
// directories whose children it still knows) come back at the end of the
// queue. On kernels without NOTIFY_PRUNE the names of the files of the
// batch are invalidated instead (FUSE_NOTIFY_INVAL_ENTRY, one message per
// name; directories stay, their number is that of the tree's
// directories).
//
// The queue holds weak pointers: a node the kernel forgot for another
// reason (a refresh invalidated its tree) is garbage at once, with its
// snapshot.
type kernelCache struct {
	limit int
	root  *fs.Inode // any node of the mount: the notifications go through it
	work  chan []weak.Pointer[fs.Inode]
	done  chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex // guards queue
	queue []weak.Pointer[fs.Inode]

	// noPrune: the kernel does not know NOTIFY_PRUNE (only the pruning
	// goroutine reads and writes it).
	noPrune bool
	// kept: the last batch, whose survivors are queued again with the
	// next one (by then the kernel has sent the FORGETs of the others).
	kept []weak.Pointer[fs.Inode]
}

// pruneBatch nodes are dropped at a time: one message to the kernel.
const pruneBatch = 1024

// DefaultKernelCache is Options.KernelCache's default: room for a data
// file's directory of tens of thousands of commands (a 32 MiB file of
// 1 KiB messages) listed by READDIRPLUS and then read (see dirHandle),
// at a few hundred bytes of the mount's memory a node.
const DefaultKernelCache = 65536

func newKernelCache(root *fs.Inode, limit int) *kernelCache {
	c := &kernelCache{limit: limit, root: root, work: make(chan []weak.Pointer[fs.Inode], 1), done: make(chan struct{})}
	c.wg.Add(1)
	go c.run()
	return c
}

// add queues a node just handed to the kernel by a lookup.
func (c *kernelCache) add(n *fs.Inode) {
	if c == nil {
		return
	}
	w := weak.Make(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = append(c.queue, w)
	if len(c.queue) < c.limit+pruneBatch {
		return
	}
	batch := slices.Clone(c.queue[:pruneBatch])
	select {
	case c.work <- batch:
		n := copy(c.queue, c.queue[pruneBatch:])
		clear(c.queue[n:])
		c.queue = c.queue[:n]
	default:
		// The goroutine is still busy with the last batch: the queue
		// grows a little longer meanwhile.
	}
}

// stop ends the pruning goroutine (at unmount).
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
		case batch := <-c.work:
			c.requeue()
			c.prune(batch)
		}
	}
}

// requeue puts the nodes of the last batch the kernel kept back at the end
// of the queue.
func (c *kernelCache) requeue() {
	var live []weak.Pointer[fs.Inode]
	for _, w := range c.kept {
		if n := w.Value(); n != nil && !forgotten(n) {
			live = append(live, w)
		}
	}
	c.kept = nil
	if len(live) == 0 {
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, live...)
	c.mu.Unlock()
}

// prune asks the kernel to forget the nodes of batch.
func (c *kernelCache) prune(batch []weak.Pointer[fs.Inode]) {
	nodes := make([]*fs.Inode, 0, len(batch))
	for i := len(batch) - 1; i >= 0; i-- {
		if n := batch[i].Value(); n != nil && !forgotten(n) {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return
	}
	if !c.noPrune {
		switch c.root.NotifyPrune(nodes) {
		case 0:
			c.kept = batch
			return
		case syscall.ENOSYS:
			c.noPrune = true
		default:
			return // unmounting
		}
	}
	for _, n := range nodes {
		if n.IsDir() {
			continue // a directory in use must stay valid (a working directory)
		}
		if name, parent := n.Parent(); parent != nil {
			// ENOENT: the kernel forgot it meanwhile.
			_ = parent.NotifyEntry(name)
		}
	}
}

// forgotten reports whether go-fuse dropped n from the tree: the kernel
// forgot it (or go-fuse used another node for the same inode number).
func forgotten(n *fs.Inode) bool {
	_, parent := n.Parent()
	return parent == nil
}

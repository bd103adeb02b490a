package fsnode

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The load test's size and length; CI uses the defaults, a longer local
// run e.g. -load-duration 1m -load-commands 200000.
var (
	loadDuration = flag.Duration("load-duration", 10*time.Second, "TestLoad: how long the readers run")
	loadCommands = flag.Int("load-commands", 30000, "TestLoad: commands in the synthetic store")
)

const (
	loadReaders = 16
	loadFiles   = 20 // data files the synthetic store is spread over
)

// loadStore writes a synthetic store of about n commands in about
// loadFiles data files: 30 queues, 5 topics with 3 durable subscriptions
// each, acks of most messages some time after them, local transactions
// (committed or rolled back) and XA transactions (committed, rolled back,
// one left prepared). Seeded: the same n gives the same bytes.
func loadStore(t testing.TB, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.Mkdir(dir, 0o755))
	// ~100 bytes a command on average with these bodies.
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: max(64<<10, n*100/loadFiles), NoSync: true})
	rng := rand.New(rand.NewPCG(6, 2026))
	written := 0
	add := func(c *codec.Command, fields ...int) {
		for _, f := range fields {
			c.Set(f)
		}
		_, err := w.AppendCommand(c)
		require.NoError(t, err)
		written++
	}
	body := make([]byte, 96)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	var none codec.TxID
	msg := func(tx codec.TxID, d codec.Destination, id string) {
		add(codec.NewAddMessageCommand(tx, d, []byte(id), body, int32(rng.IntN(10)), false))
	}
	ack := func(tx codec.TxID, d codec.Destination, id, sub string) {
		var key []byte
		if sub != "" {
			key = []byte(sub)
		}
		add(codec.NewRemoveMessageCommand(tx, d, []byte(id), []byte{}, key))
	}
	add(&codec.Command{Type: codec.TraceCommand, Text: []byte("LOADED Sun Nov 29 20:40:55 UTC 2026")}, 1)
	queues := make([]codec.Destination, 30)
	for i := range queues {
		queues[i] = codec.NewDestination(codec.Queue, []byte(fmt.Sprintf("LOAD.Q.%02d", i)))
	}
	topics := make([]codec.Destination, 5)
	subs := [][]string{}
	for i := range topics {
		name := fmt.Sprintf("LOAD.T.%d", i)
		topics[i] = codec.NewDestination(codec.Topic, []byte(name))
		var keys []string
		for s := 0; s < 3; s++ {
			client, sub := fmt.Sprintf("c%d", s), fmt.Sprintf("s%d-%d", i, s)
			keys = append(keys, client+":"+sub)
			add(&codec.Command{Type: codec.SubscriptionCommand, Dest: topics[i], SubscriptionKey: []byte(client + ":" + sub),
				SubscriptionInfo: subscriptionInfo(client, sub, name)}, 1, 2, 3, 4)
		}
		subs = append(subs, keys)
	}
	type sent struct {
		dest int
		id   string
	}
	var backlog []sent // queue messages not acked yet, oldest first
	seq, txs := 0, 0
	nextID := func() string {
		seq++
		return fmt.Sprintf("ID:load-%d:1:1:1:%d", seq/1000, seq)
	}
	for written < n {
		switch r := rng.Float64(); {
		case r < 0.45: // a queue message
			q := rng.IntN(len(queues))
			id := nextID()
			msg(none, queues[q], id)
			backlog = append(backlog, sent{q, id})
		case r < 0.80: // ack the oldest ones (most messages end up consumed)
			for k := 0; k < 1+rng.IntN(2) && len(backlog) > 200; k++ {
				m := backlog[0]
				backlog = backlog[1:]
				ack(none, queues[m.dest], m.id, "")
			}
		case r < 0.90: // a topic message, acked by some subscriptions
			tp := rng.IntN(len(topics))
			id := nextID()
			msg(none, topics[tp], id)
			for _, k := range subs[tp] {
				if rng.IntN(4) != 0 {
					ack(none, topics[tp], id, k)
				}
			}
		case r < 0.97: // local transaction: 1-3 adds, commit or rollback
			txs++
			tx := codec.NewLocalTx([]byte(fmt.Sprintf("ID:load-conn-%d", txs%7)), int64(txs))
			q := rng.IntN(len(queues))
			for k := 0; k < 1+rng.IntN(3); k++ {
				msg(tx, queues[q], nextID())
			}
			if rng.IntN(5) == 0 {
				add(&codec.Command{Type: codec.RollbackCommand, Tx: tx}, 1)
			} else {
				add(&codec.Command{Type: codec.CommitCommand, Tx: tx}, 1)
			}
		default: // XA transaction: add, prepare, commit or rollback
			txs++
			tx := codec.NewXATx(4660, []byte(fmt.Sprintf("gtrid-%d", txs)), []byte("bq"))
			msg(tx, queues[rng.IntN(len(queues))], nextID())
			add(&codec.Command{Type: codec.PrepareCommand, Tx: tx}, 1)
			if rng.IntN(3) == 0 {
				add(&codec.Command{Type: codec.RollbackCommand, Tx: tx}, 1)
			} else {
				add(&codec.Command{Type: codec.CommitCommand, Tx: tx}, 1)
			}
		}
	}
	// One XA transaction left in doubt.
	tx := codec.NewXATx(4660, []byte("gtrid-in-doubt"), []byte("bq"))
	msg(tx, queues[0], nextID())
	add(&codec.Command{Type: codec.PrepareCommand, Tx: tx}, 1)
	require.NoError(t, w.Close())
	return dir
}

// loadCounters are what the readers did.
type loadCounters struct {
	walks, files, dirs, bytes atomic.Int64
	errs                      atomic.Int64
	mu                        sync.Mutex
	firstErrs                 []string
}

func (c *loadCounters) fail(err error) {
	if c.errs.Add(1) <= 10 {
		c.mu.Lock()
		c.firstErrs = append(c.firstErrs, err.Error())
		c.mu.Unlock()
	}
}

// readTree walks root and reads every file through one open descriptor,
// checking that the content has the size fstat gives; it stops early
// when stop is closed.
func readTree(root string, stop <-chan struct{}, c *loadCounters) {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		select {
		case <-stop:
			return filepath.SkipAll
		default:
		}
		if err != nil {
			c.fail(err)
			return nil
		}
		if d.IsDir() {
			c.dirs.Add(1)
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 { // acks-for/, acked-by/: not followed
			if _, err := os.Readlink(p); err != nil {
				c.fail(err)
			}
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			c.fail(err)
			return nil
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			c.fail(err)
			return nil
		}
		b, err := io.ReadAll(f)
		if err != nil {
			c.fail(fmt.Errorf("%s: %w", p, err))
			return nil
		}
		if int64(len(b)) != info.Size() {
			c.fail(fmt.Errorf("%s: fstat size %d, read %d bytes", p, info.Size(), len(b)))
		}
		c.files.Add(1)
		c.bytes.Add(int64(len(b)))
		return nil
	})
	if err != nil {
		c.fail(err)
	}
}

// fullWalk reads every subtree in tops once, with loadReaders readers.
func fullWalk(tops []string, c *loadCounters) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for r := 0; r < loadReaders; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := next.Add(1) - 1; k < int64(len(tops)); k = next.Add(1) - 1 {
				readTree(tops[k], nil, c)
			}
		}()
	}
	wg.Wait()
}

// heapAfterGC is the live heap once garbage (and the descriptors of
// unreachable snapshots, closed by their finalizers) is collected.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	for i := 0; i < 3; i++ {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // let finalizers run
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestLoad: 16 readers walk and read the whole tree of a large synthetic
// store in parallel while it is re-read (Refresh(true)) every 500 ms, for
// -load-duration. No read may fail or come out short (the size fstat gives
// is the size read), the race detector must stay quiet, and memory must
// stay flat: once the readers stop and one more refresh is done, the live
// heap after GC is at most twice what it was after the first full walk,
// and at most one descriptor per data file is open (one snapshot's).
//
// Why this criterion: after the first full walk the heap holds one
// snapshot (graph, per-file record indexes) plus go-fuse's nodes for every
// path of the tree, the most a single snapshot costs. Each refresh builds
// a new snapshot; an old one must become garbage once the kernel forgets
// its nodes, also when it was in use at the refresh (walks in progress).
// The test refreshes dozens of times, so keeping a snapshot per refresh
// (or per refresh that found readers busy) would multiply the heap far
// beyond 2 and leave a descriptor per data file and snapshot open; the factor
// 2 leaves room for what is legitimately not returned at once (maps grown
// in go-fuse, allocator slack), and the comparison does not depend on
// machine speed: a slow machine refreshes less often but keeps the same
// one live snapshot.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped with -short")
	}
	need.FUSE(t, CheckFUSE())
	start := time.Now()
	dir := loadStore(t, *loadCommands)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	t.Logf("store: %d commands in %d data files, written in %v", *loadCommands, len(st.Files), time.Since(start).Round(time.Millisecond))

	opts := quietOpts(t)
	fsys, mnt := mountStore(t, dir, opts)
	fresh := heapAfterGC()
	t.Logf("mounted in %v; heap after GC %.1f MiB", time.Since(start).Round(time.Millisecond), float64(fresh)/(1<<20))

	// The top-level subtrees (each data file's directory apart), each
	// reader starting at another one.
	var tops []string
	for _, n := range names(t, mnt) {
		if n == "by-file" {
			for _, f := range names(t, filepath.Join(mnt, n)) {
				tops = append(tops, filepath.Join(mnt, n, f))
			}
			continue
		}
		tops = append(tops, filepath.Join(mnt, n))
	}

	// First full walk, the subtrees shared out among the readers.
	var first loadCounters
	t0 := time.Now()
	fullWalk(tops, &first)
	require.Zero(t, first.errs.Load(), "first walk: %v", first.firstErrs)
	require.Greater(t, first.files.Load(), int64(*loadCommands), "every command is a file")
	base := heapAfterGC()
	baseFDs := storeFDs(t, dir)
	t.Logf("first full walk: %d files, %d dirs, %d MiB in %v; heap after GC %.1f MiB; %d store descriptors",
		first.files.Load(), first.dirs.Load(), first.bytes.Load()>>20, time.Since(t0).Round(time.Millisecond), float64(base)/(1<<20), baseFDs)

	stop := make(chan struct{})
	var c loadCounters
	var wg sync.WaitGroup
	for r := 0; r < loadReaders; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			for k := r; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				readTree(tops[k%len(tops)], stop, &c)
				c.walks.Add(1)
			}
		}(r)
	}
	refreshes := 0
	var peak uint64
	tick := time.NewTicker(500 * time.Millisecond)
	// at least loadDuration, and at least 6 refreshes under the readers (a
	// loaded machine refreshes slowly: this is no speed test), within a
	// bound
	deadline := time.After(*loadDuration)
	hard := time.After(6 * *loadDuration)
	passed := false
loop:
	for {
		if passed && refreshes > 5 {
			break
		}
		select {
		case <-deadline:
			passed = true
		case <-hard:
			break loop
		case <-tick.C:
			changed, err := fsys.Refresh(true)
			require.NoError(t, err)
			require.True(t, changed)
			refreshes++
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	assert.Zero(t, c.errs.Load(), "read errors: %v", c.firstErrs)
	assert.Greater(t, refreshes, 5)
	assert.Positive(t, c.files.Load())

	// Settle: one more refresh, now that nothing is in use, then collect.
	_, err = fsys.Refresh(true)
	require.NoError(t, err)
	// The kernel forgets the old nodes asynchronously: measure until
	// flat, for a few seconds at most.
	var end uint64
	fds := 0
	for i := 0; i < 50; i++ {
		end = heapAfterGC()
		if fds = storeFDs(t, dir); end <= 2*base && fds <= len(st.Files) {
			break
		}
	}
	t.Logf("load: %d readers for %v: %d walks, %d files (%d MiB) read, %d directories listed, %d refreshes; heap peak %.1f MiB (sampled), after GC %.1f MiB (%.2fx the first walk's); %d store descriptors; total %v",
		loadReaders, *loadDuration, c.walks.Load(), c.files.Load(), c.bytes.Load()>>20, c.dirs.Load(), refreshes,
		float64(peak)/(1<<20), float64(end)/(1<<20), float64(end)/float64(base), fds, time.Since(start).Round(time.Millisecond))
	assert.LessOrEqual(t, end, 2*base, "heap after GC: %d bytes, after the first walk %d", end, base)
	assert.LessOrEqual(t, fds, len(st.Files), "descriptors of old snapshots are closed")
}

package fsnode

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/kahafs/kahafs/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// traceStore writes a store of n trace commands in one data file and
// returns it with the by-file names of the commands in journal order.
func traceStore(t testing.TB, n int) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.Mkdir(dir, 0o755))
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: 1 << 30, NoSync: true})
	c := codec.NewTraceCommand(nil)
	var names []string
	for i := 0; i < n; i++ {
		c.Text = []byte(fmt.Sprintf("trace %d", i))
		loc, err := w.AppendCommand(c)
		require.NoError(t, err)
		names = append(names, fmt.Sprintf("%010d-KAHA_TRACE_COMMAND.json", loc.Offset))
	}
	require.NoError(t, w.Close())
	return dir, names
}

// getdents lists dir with getdents(2) and a buffer of bufSize bytes, so
// that a listing takes many calls (and the kernel, whose requests are
// larger than the buffer, resumes the listing at offsets it has already
// been past), rewinding once after the first calls; it returns the names
// after the rewind, "." and ".." left out.
func getdents(t *testing.T, dir string, bufSize int) []string {
	t.Helper()
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	require.NoError(t, err)
	defer syscall.Close(fd)
	buf := make([]byte, bufSize)
	var names []string
	for calls, rewound := 0, false; ; calls++ {
		if calls == 5 && !rewound {
			_, err := syscall.Seek(fd, 0, 0)
			require.NoError(t, err)
			names, rewound = nil, true
		}
		n, err := syscall.Getdents(fd, buf)
		require.NoError(t, err)
		if n == 0 {
			require.True(t, rewound, "listed to the end in %d calls", calls)
			return names
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
}

// TestListingCalls: a directory of many entries listed with getdents(2)
// in hundreds of small calls (READDIRPLUS calls the kernel resumes at
// offsets, some in the middle of a reply) has every entry exactly once,
// in order, whether the listing looks its entries up (the directory fits
// in the link limit) or only its first ones (a data file's directory
// bigger than the limit), the rest by name; every file then reads as
// `kahafs dump --json` prints it, with the size stat gives.
func TestListingCalls(t *testing.T) {
	n := 6000
	if testing.Short() {
		n = 2500
	}
	dir, cmds := traceStore(t, n)
	lines := dumpLines(t, dir)
	require.Len(t, lines, n)
	want := append([]string{nameHolders, nameHoldersJSON, nameInfo, nameAcksFor, nameAckedBy}, cmds...)
	for _, kc := range []int{2 * n, 2048} { // linked; 1536 linked, the rest by name
		t.Run(fmt.Sprintf("kernel-cache=%d", kc), func(t *testing.T) {
			opts := quietOpts(t)
			opts.KernelCache = kc
			_, mnt := mountStore(t, dir, opts)
			fdir := filepath.Join(mnt, "by-file", "db-1.log")
			for _, size := range []int{512, 4096, 65536} {
				assert.Equal(t, want, getdents(t, fdir, size), "buffer of %d bytes", size)
			}
			for i, name := range cmds {
				p := filepath.Join(fdir, name)
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				require.Equal(t, lines[i], string(b), name)
				info, err := os.Stat(p)
				require.NoError(t, err)
				require.Equal(t, int64(len(b)), info.Size(), name)
			}
		})
	}
}

// requestLog counts the FUSE requests of a mount in go-fuse's debug log,
// drops the rest of that log and passes what the tree logs to the test
// log.
type requestLog struct {
	t  testing.TB
	mu sync.Mutex
	n  map[string]int
}

var (
	rxLine    = regexp.MustCompile(`\brx \d+: ([A-Z_]+) `)
	debugLine = regexp.MustCompile(`\btx \d+: |doBatchForget|Response NOTIFY|callFusermount|unmount: executing|received ENODEV`)
)

func (l *requestLog) Write(p []byte) (int, error) {
	if m := rxLine.FindSubmatch(p); m != nil {
		l.mu.Lock()
		l.n[string(m[1])]++
		l.mu.Unlock()
	} else if !debugLine.Match(p) {
		l.t.Logf("fsnode log: %s", p)
	}
	return len(p), nil
}

func (l *requestLog) reset() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.n
	l.n = map[string]int{}
	return n
}

// TestWalkRoundTrips: a walk that lists each directory and then reads its
// files (what grep -r does) costs about no request per file: listings of
// directories that fit in the link limit look the entries up in bulk and
// push their content into the page cache, and a read-only mount is never
// asked to open a file.
func TestWalkRoundTrips(t *testing.T) {
	dir := loadStore(t, 3000)
	rl := &requestLog{t: t, n: map[string]int{}}
	opts := Options{Logger: log.New(rl, "", 0), Debug: true}
	_, mnt := mountStore(t, dir, opts)
	rl.reset()

	files := 0
	var walk func(string)
	walk = func(d string) {
		ents, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			if e.IsDir() {
				walk(p)
				continue
			}
			f, err := os.Open(p)
			require.NoError(t, err)
			info, err := f.Stat()
			require.NoError(t, err)
			b := make([]byte, info.Size()+1)
			k, err := f.Read(b)
			if info.Size() == 0 {
				k, err = 0, nil
			}
			require.NoError(t, err, p)
			require.Equal(t, int(info.Size()), k, p)
			require.NoError(t, f.Close())
			files++
		}
	}
	walk(mnt)
	n := rl.reset()
	t.Logf("%d files read: requests %v", files, n)
	require.Greater(t, files, 3000)
	assert.LessOrEqual(t, n["OPEN"]+n["RELEASE"]+n["FLUSH"], 3, "files are not opened")
	assert.Less(t, n["READ"]+n["LOOKUP"]+n["GETATTR"], files/20, "files are read from the page cache")
}

// liveNodes counts the nodes go-fuse holds below n (the kernel knows
// them), directories only if dirs.
func liveNodes(n *fs.Inode, dirs bool) int {
	count := 0
	for _, c := range n.Children() {
		if !c.IsDir() || dirs {
			count++
		}
		if c.IsDir() {
			count += liveNodes(c, dirs)
		}
	}
	return count
}

// TestKernelCacheBound: a walk that reads every file of a tree of many
// more nodes than Options.KernelCache leaves at most about that many
// nodes in the kernel and in go-fuse, with NOTIFY_PRUNE and without it
// (entry invalidation: only files count, directories stay); every file
// reads whole.
func TestKernelCacheBound(t *testing.T) {
	dir := loadStore(t, 20000)
	for _, entryInval := range []bool{false, true} {
		t.Run(fmt.Sprintf("entry-inval=%v", entryInval), func(t *testing.T) {
			opts := quietOpts(t)
			opts.KernelCache = 2048
			fsys, mnt := mountStore(t, dir, opts)
			c := fsys.m.cache.Load()
			require.NotNil(t, c)
			c.noPrune.Store(entryInval)

			tree := walkTree(t, mnt)
			require.Greater(t, len(tree), 20000)
			bound := 2*c.limit + pruneBatch
			var live int
			for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(50 * time.Millisecond) {
				// The kernel sends the FORGETs of a prune asynchronously.
				if live = liveNodes(fsys.root.EmbeddedInode(), !entryInval); live <= bound {
					break
				}
			}
			t.Logf("%d files read, %d nodes live after the walk (bound %d)", len(tree), live, bound)
			assert.LessOrEqual(t, live, bound)
			c.mu.Lock()
			queued := c.queuedLocked()
			c.mu.Unlock()
			assert.LessOrEqual(t, queued, bound, "queue")
		})
	}
}

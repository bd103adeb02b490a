package fsnode

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"weak"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/store"
)

// Errors a mount can fail with before anything is served. They wrap the
// underlying cause and name the path involved.
var (
	// ErrNoFUSE: /dev/fuse or the fusermount3 helper is missing.
	ErrNoFUSE = errors.New("FUSE is not available")
	// ErrMountpoint: the mountpoint is missing, not a directory, already a
	// mount point, or would hide the store.
	ErrMountpoint = errors.New("cannot mount there")
)

// Options configure an FS.
type Options struct {
	// Options say how the store is analysed, as for `kahafs holders`
	// (store.Open: the journalMaxFileLength, read off the store when zero
	// (Snapshot.MaxFileLength says which), --running, --no-index,
	// checksums, the analysis cache, progress). The tree lists every
	// finished transaction: KeepCompleted is not used. Index problems
	// (IndexProblem nil) and the cache's warnings (Cache.Logf nil) are
	// logged to Logger.
	store.Options
	// AllowOther lets other users see the mount (FUSE allow_other; needs
	// user_allow_other in /etc/fuse.conf unless root). Off by default:
	// only the mounting user can enter the tree.
	AllowOther bool
	// UID and GID own every node; zero (both) means the store's own
	// files' owner and group. Every node carries the read bits of the
	// store's files (storeAccess), which the kernel enforces.
	UID, GID uint32
	// Logger receives errors that reach the kernel as EIO/ENOENT and
	// refresh failures; nil means log.Default().
	Logger *log.Logger
	// Debug logs every FUSE request.
	Debug bool
	// Control, when set, adds a writable `control` file at the root (the
	// --rw mount): a line written to it is split into words and handed to
	// Control, in the background; reading the file shows its progress and
	// last result. After a run that changed the store, the tree is read
	// again. Nil: no control file, the mount is read-only throughout.
	Control Controller
	// CacheTimeout is how long the kernel keeps names and attributes
	// (content never changes within a snapshot; a refresh invalidates the
	// top-level names). Zero means one hour.
	CacheTimeout time.Duration
	// KernelCache is how many nodes below the root the kernel may keep
	// (beyond those in use) before the oldest are dropped, which bounds
	// the mount's memory whatever walks the tree (see kernelCache). Three
	// quarters of it is the link limit: a directory of more entries is
	// listed by name only (a data file's: but for its first entries), a
	// smaller one looked up and pushed whole (see dirHandle). Zero means DefaultKernelCache; negative, no bound (the
	// kernel drops nodes when memory runs short; every directory is
	// looked up whole).
	KernelCache int
}

// mountState is what every node of every snapshot shares.
type mountState struct {
	logger   *log.Logger
	uid, gid uint32
	// fileMode and dirMode are the modes of the tree's files and
	// directories: the store's read bits (storeAccess).
	fileMode, dirMode uint32
	control           bool // the mount has a control file (Options.Control)
	// cache bounds the nodes the kernel keeps; nil when not mounted or
	// unbounded.
	cache atomic.Pointer[kernelCache]
	// renders counts the commands and bodies rendered for the mount
	// (lookups, reads, renders ahead): what tests check a listing does
	// not do.
	renders atomic.Int64
}

func (m *mountState) logf(format string, args ...any) { m.logger.Printf(format, args...) }

// owner reports whether the process behind a FUSE request is the user
// that owns the tree, or root.
func (m *mountState) owner(ctx context.Context) bool {
	c, ok := fuse.FromContext(ctx)
	return ok && (c.Uid == 0 || c.Uid == m.uid)
}

// FS is a store served as a tree. Open reads the store; Mount serves it;
// Refresh re-reads it.
type FS struct {
	dir  string
	opts Options
	m    *mountState
	root *rootDir

	cur atomic.Pointer[Snapshot] // the snapshot new walks start in

	control *controlState // nil without Options.Control

	mu     sync.Mutex // serializes Refresh, Mount and Unmount; guards the fields below
	gen    uint64
	print  fingerprint
	server *fuse.Server
	mnt    string
	// retired are the top-level directories of earlier snapshots, held
	// weakly: go-fuse drops a node the kernel forgot (see sweepRetired).
	retired []weak.Pointer[fs.Inode]
	// sweeping: a goroutine is sweeping the retired trees; sweepAgain: a
	// refresh came meanwhile, the goroutine sweeps once more.
	sweeping, sweepAgain bool
}

// Open reads the store in dir (a KahaDB directory) into a first snapshot.
func Open(dir string, opts Options) (*FS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	m := &mountState{logger: opts.Logger, uid: opts.UID, gid: opts.GID, control: opts.Control != nil}
	if m.logger == nil {
		m.logger = log.Default()
	}
	uid, gid, read, err := storeAccess(abs)
	if err != nil {
		// Open reports the store's own error below.
		uid, gid, read = uint32(os.Getuid()), uint32(os.Getgid()), 0o400
	}
	if m.uid == 0 && m.gid == 0 {
		m.uid, m.gid = uid, gid
	}
	m.fileMode, m.dirMode = modes(read)
	f := &FS{dir: abs, opts: opts, m: m}
	f.root = &rootDir{fsys: f}
	if opts.Control != nil {
		f.control = &controlState{run: opts.Control}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.reload(true); err != nil {
		return nil, err
	}
	return f, nil
}

// Snapshot returns the snapshot new walks of the tree start in.
func (f *FS) Snapshot() *Snapshot { return f.cur.Load() }

// Dir is the store directory (absolute).
func (f *FS) Dir() string { return f.dir }

// Refresh re-reads the store when its data files changed (or always, with
// force) and points the tree at the new snapshot: the kernel forgets the
// top-level names, so the next walk sees the new content. On error the old
// snapshot stays. It reports whether a new snapshot was taken.
func (f *FS) Refresh(force bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweepRetired()
	if !force {
		p, err := takeFingerprint(f.dir)
		if err == nil && p.equal(f.print) {
			return false, nil
		}
	}
	if err := f.reload(false); err != nil {
		return false, err
	}
	if f.server != nil {
		for _, m := range f.cur.Load().rootTable() {
			if old := f.root.GetChild(m.name); old != nil && m.isDir() {
				f.retire(old)
			}
			// ENOENT: the kernel had not cached the name; nothing to do.
			_ = f.root.NotifyEntry(m.name)
		}
	}
	return true, nil
}

// sweepRetired asks the kernel to forget every name it still knows in the
// trees of earlier snapshots. A refresh invalidates the top-level names,
// and the kernel then drops the entries of the old tree that nobody uses;
// but an entry in use at that moment (a walk in progress, an open file)
// stays valid under its invalidated parent, and once released it would
// sit in the kernel's cache until memory runs short, keeping its whole
// snapshot alive (graph, indexes, open data files): with refreshes during
// walks, one snapshot per refresh. Invalidated, the kernel drops such an
// entry when it is released, and forgets the nodes. A process whose
// working directory is in an old tree keeps it; the names it uses are
// looked up again in the same old snapshot.
//
// The invalidations are made on a goroutine of their own: each waits for
// the directory it is in, which a walk still listing the old tree holds
// for every READDIRPLUS call, so that a sweep during busy walks takes
// seconds, which a refresh does not wait for. A refresh during a sweep
// has the goroutine sweep once more when it is done (one sweep per
// refresh, as if the refresh had waited). f.mu held.
func (f *FS) sweepRetired() {
	if f.sweeping {
		f.sweepAgain = true
		return
	}
	roots := f.liveRetired()
	if len(roots) == 0 {
		return
	}
	f.sweeping = true
	go f.sweep(roots)
}

// sweep invalidates the trees of roots, and sweeps again while refreshes
// asked for it meanwhile.
func (f *FS) sweep(roots []*fs.Inode) {
	for {
		for _, n := range roots {
			invalidateTree(n)
		}
		f.mu.Lock()
		if !f.sweepAgain {
			f.sweeping = false
			f.mu.Unlock()
			return
		}
		f.sweepAgain = false
		roots = f.liveRetired()
		f.mu.Unlock()
	}
}

// liveRetired returns the retired top-level directories go-fuse still
// has, and drops the others from f.retired. f.mu held.
func (f *FS) liveRetired() []*fs.Inode {
	var roots []*fs.Inode
	live := f.retired[:0]
	for _, w := range f.retired {
		n := w.Value()
		if n == nil {
			continue // forgotten by the kernel and collected
		}
		roots = append(roots, n)
		live = append(live, w)
	}
	clear(f.retired[len(live):])
	f.retired = live
	return roots
}

// retire adds the top-level directory n of an earlier snapshot to the
// retired ones, once (a tree in use stays the root's child across
// refreshes until the kernel looks the name up again). f.mu held.
func (f *FS) retire(n *fs.Inode) {
	w := weak.Make(n)
	for _, r := range f.retired {
		if r == w {
			return
		}
	}
	f.retired = append(f.retired, w)
}

// invalidateTree invalidates every name under n the kernel knows.
func invalidateTree(n *fs.Inode) {
	for name, child := range n.Children() {
		if child.IsDir() {
			invalidateTree(child)
		}
		// ENOENT: the kernel forgot it meanwhile.
		_ = n.NotifyEntry(name)
	}
}

// reload reads the store into a new snapshot and publishes it. f.mu held.
func (f *FS) reload(first bool) error {
	// The broker may delete a data file between the listing and the
	// reading (its cleanup runs every 30 s): list again and retry.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var p fingerprint
		p, err = takeFingerprint(f.dir)
		if err != nil && !first {
			return err
		}
		var s *Snapshot
		s, err = load(f.dir, f.gen+1, f.m, f.opts)
		if err == nil {
			f.gen++
			f.print = p
			f.cur.Store(s)
			if f.server != nil {
				s.indexAhead()
			}
			return nil
		}
		if !errors.Is(err, codec.ErrMissingFile) {
			return err
		}
	}
	return err
}

// Mount serves the tree at mountpoint and returns once the kernel has it.
func (f *FS) Mount(mountpoint string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.server != nil {
		return fmt.Errorf("%w: already mounted at %s", ErrMountpoint, f.mnt)
	}
	if err := CheckFUSE(); err != nil {
		return err
	}
	mnt, err := CheckMountpoint(mountpoint, f.dir)
	if err != nil {
		return err
	}
	timeout := f.opts.CacheTimeout
	if timeout <= 0 {
		timeout = time.Hour
	}
	fsName := "kahafs"
	if !strings.ContainsAny(f.dir, ",\\ \t\n") {
		fsName = f.dir
	}
	// "ro": the kernel answers every write with EROFS before asking us.
	// With a control file the mount is "rw" and every node but `control`
	// answers EROFS itself.
	// "default_permissions": the kernel checks every access against the
	// nodes' owner and modes, which are the store's (storeAccess).
	mountOpts := []string{"ro", "default_permissions"}
	directFlags := uintptr(syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_RDONLY)
	if f.control != nil {
		mountOpts = []string{"default_permissions"}
		directFlags = syscall.MS_NOSUID | syscall.MS_NODEV
	}
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther: f.opts.AllowOther,
			Options:    mountOpts,
			FsName:     fsName,
			Name:       "kahafs",
			// READDIRPLUS on every listing (go-fuse asks for it unless
			// told otherwise; no READDIRPLUS_AUTO): the listing decides
			// which entries to look up in bulk, and their content is
			// pushed (see dirHandle); a big directory is listed by
			// name only.
			// No extended attributes: the kernel stops asking after the
			// first ENOSYS instead of two round trips per `ls -l` entry.
			DisableXAttrs: true,
			// Content is always in memory (fuse.ReadResultData): go-fuse
			// would otherwise route every READ reply through a pipe
			// first, only to fall back to a plain write (three more
			// system calls per read).
			DisableSplice: true,
			// As root, mount(2) directly instead of running the
			// fusermount3 helper (a fork and exec, about 10 ms); anyone
			// else falls back to the helper. "ro" is a flag of the
			// mount there, as fusermount3 makes it.
			DirectMount: true,
			// Requests of up to 1 MiB (max_pages 256): a big
			// directory is listed in READDIR calls of that size (see
			// tableDir.blksize), a big body read in fewer calls.
			MaxWrite:         bigListBlock,
			DirectMountFlags: directFlags,
			Debug:            f.opts.Debug,
			Logger:           f.m.logger,
		},
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		UID:             f.m.uid,
		GID:             f.m.gid,
		Logger:          f.m.logger,
	}
	if limit := f.opts.KernelCache; limit >= 0 {
		if limit == 0 {
			limit = DefaultKernelCache
		}
		f.m.cache.Store(newKernelCache(f.root.EmbeddedInode(), limit))
	}
	server, err := fs.Mount(mnt, f.root, opts)
	if err != nil {
		f.m.cache.Swap(nil).stop()
		return fmt.Errorf("mount %s at %s: %w", f.dir, mnt, classifyMountError(err))
	}
	f.server, f.mnt = server, mnt
	f.cur.Load().indexAhead()
	serveProcs.Do(raiseProcs)
	return nil
}

// serveProcs raises GOMAXPROCS once a mount serves (raiseProcs).
var serveProcs sync.Once

// raiseProcs gives the Go scheduler twice as many Ps as it had (the
// cores: codec.Workers stays at that). A walk through a linked listing
// keeps three goroutines busy at once — the call being answered, the
// renders ahead of its lookups, the pushes of the calls before it, a
// system call each — and with a P a core the call waited for one while
// the others held them (0.9 s of the 3.3 s a listing of 180 k entries
// took, in the scheduler's latency profile); with more Ps than cores the
// kernel's scheduler interleaves the threads instead: grep -r through a
// linked pending/ of 180 k files 4 % faster in 7 alternated pairs, 10 %
// with pushes pushDepth calls deep (three Ps or six: slower than four,
// on two cores). The analysis of a refresh reads with codec.Workers.
// Setting GOMAXPROCS also ends the runtime's own updates of it to a CPU
// limit that changes while the mount runs (Go 1.25's default).
func raiseProcs() {
	runtime.GOMAXPROCS(2 * codec.Workers())
}

// Mountpoint is where the tree is mounted ("" when it is not).
func (f *FS) Mountpoint() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mnt
}

// Unmount removes the mount. It fails (and the tree stays) while a process
// has a file open or its working directory in the tree.
func (f *FS) Unmount() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.server == nil {
		return nil
	}
	if err := f.server.Unmount(); err != nil {
		return fmt.Errorf("unmount %s: %w (is a process using it? `fusermount3 -u -z %s` detaches it lazily)", f.mnt, err, f.mnt)
	}
	f.m.cache.Swap(nil).stop()
	f.server, f.mnt = nil, ""
	return nil
}

// Wait returns when the mount is gone (unmounted by Unmount or from
// outside, e.g. `fusermount3 -u`).
func (f *FS) Wait() {
	f.mu.Lock()
	s := f.server
	f.mu.Unlock()
	if s != nil {
		s.Wait()
	}
}

// CheckFUSE reports ErrNoFUSE when the kernel device or the mount helper
// is missing, saying which, with FUSEHint.
func CheckFUSE() error { return checkFUSE("/dev/fuse", exec.LookPath) }

func checkFUSE(dev string, lookPath func(string) (string, error)) error {
	if _, err := os.Stat(dev); err != nil {
		return &noFUSEError{err: fmt.Errorf("%s: %w (load the fuse kernel module, or give the container the device)", dev, err)}
	}
	// go-fuse looks in PATH, then in /bin.
	for _, name := range []string{"fusermount3", "/bin/fusermount3", "fusermount", "/bin/fusermount"} {
		if _, err := lookPath(name); err == nil {
			return nil
		}
	}
	return &noFUSEError{err: errors.New("fusermount3 not found in PATH or /bin (install the fuse3 package)")}
}

// FUSEHint says, after an error matching ErrNoFUSE, what a mount needs and
// what answers without one.
const FUSEHint = `hint: the mount needs /dev/fuse: in a container, give it the device and the
  right to mount (docker run --device /dev/fuse --cap-add SYS_ADMIN ...);
  elsewhere, mount as root or as a user who may open /dev/fuse (often the
  fuse group). fusermount3's own message, if any, is above.
hint: without FUSE, "kahafs ls STORE [PATH]", "kahafs cat STORE PATH" and
  "kahafs find STORE --message-id ID" show the same tree, byte for byte.`

// noFUSEError is a mount that failed because FUSE cannot be used here: it
// matches ErrNoFUSE and the cause, and its text ends with FUSEHint.
type noFUSEError struct{ err error }

func (e *noFUSEError) Error() string {
	return ErrNoFUSE.Error() + ": " + strings.TrimSpace(e.err.Error()) + "\n" + FUSEHint
}

func (e *noFUSEError) Unwrap() []error { return []error{ErrNoFUSE, e.err} }

// classifyMountError turns an error of go-fuse's mount into a noFUSEError
// when it says that FUSE cannot be used: /dev/fuse missing or not to be
// opened, mount(2) not permitted, the kernel without FUSE (ENODEV), or
// the fusermount3 helper failing: go-fuse reports only its exit status
// ("fusermount exited with code 256", an error without a type: its text
// is all there is to go by), the helper itself prints why on stderr,
// e.g. "fusermount3: failed to open /dev/fuse: Permission denied".
// Other errors are returned as they are.
func classifyMountError(err error) error {
	switch {
	case err == nil || errors.Is(err, ErrNoFUSE):
		return err
	case errors.Is(err, os.ErrPermission), errors.Is(err, syscall.ENODEV), errors.Is(err, syscall.ENXIO),
		errors.Is(err, os.ErrNotExist) && strings.Contains(err.Error(), "/dev/fuse"),
		strings.Contains(err.Error(), "fusermount exited with code"):
		return &noFUSEError{err: err}
	}
	return err
}

// CheckMountpoint returns the absolute mountpoint after checking that it
// is an existing directory, not already a mount point, and not the store
// or a directory above it (the tree would hide the store from its own
// refreshes).
func CheckMountpoint(mountpoint, store string) (string, error) {
	abs, err := filepath.Abs(mountpoint)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w: mountpoint %s does not exist (create it with mkdir)", ErrMountpoint, abs)
		}
		return "", fmt.Errorf("%w: mountpoint %s: %v", ErrMountpoint, abs, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%w: mountpoint %s is not a directory", ErrMountpoint, abs)
	}
	if mounted, err := isMountPoint(abs); err == nil && mounted {
		return "", fmt.Errorf("%w: mountpoint %s is busy: something is already mounted there (unmount it with `fusermount3 -u %s`)", ErrMountpoint, abs, abs)
	}
	if realStore, err := filepath.EvalSymlinks(store); err == nil {
		store = realStore
	}
	realMnt := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		realMnt = r
	}
	if rel, err := filepath.Rel(realMnt, store); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return "", fmt.Errorf("%w: mountpoint %s would hide the store %s", ErrMountpoint, abs, store)
	}
	return abs, nil
}

// isMountPoint reports whether dir is listed as a mount point in
// /proc/self/mountinfo (a stale FUSE mount cannot even be stat'ed, so the
// device comparison alone is not enough).
func isMountPoint(dir string) (bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		var st, pst syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil {
			return false, err
		}
		if err := syscall.Stat(filepath.Dir(dir), &pst); err != nil {
			return false, err
		}
		return st.Dev != pst.Dev, nil
	}
	real := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		real = r
	}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && unescapeMountinfo(fields[4]) == real {
			return true, nil
		}
	}
	return false, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for space, ...) of
// /proc/self/mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			v := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// fingerprint identifies the state of a store's data files: names, sizes
// and modification times. A broker that writes changes the mtime of its
// current file; one that rotates or cleans up changes the list. For a
// layout of several stores, the data files of the directories two levels
// below count too (data/mKahaDB/STORE), by their relative paths.
type fingerprint []string

func takeFingerprint(dir string) (fingerprint, error) {
	var p fingerprint
	err := addFingerprint(&p, dir, "", 2)
	return p, err
}

func addFingerprint(p *fingerprint, dir, rel string, depth int) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			if depth > 0 && !strings.HasPrefix(e.Name(), ".") {
				_ = addFingerprint(p, filepath.Join(dir, e.Name()), path.Join(rel, e.Name()), depth-1)
			}
			continue
		}
		if _, ok := codec.ParseDataFileName(e.Name()); !ok && e.Name() != "db.data" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		*p = append(*p, fmt.Sprintf("%s %d %d", path.Join(rel, e.Name()), info.Size(), info.ModTime().UnixNano()))
	}
	return nil
}

func (p fingerprint) equal(o fingerprint) bool {
	if len(p) != len(o) || p == nil {
		return false
	}
	for i := range p {
		if p[i] != o[i] {
			return false
		}
	}
	return true
}

package compact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/kahafs/kahafs/store"
	"golang.org/x/sys/unix"
)

// Options configure a compaction.
type Options struct {
	// DryRun reports what a compaction would move and write (Report.After:
	// the files and bytes it writes, laid out without writing); nothing is
	// written, and only read access to the store is needed. A dry run
	// reads the store of a running broker too (Report.BrokerPID).
	DryRun bool
	// BackupDir is where the original store goes (default: next to the
	// store, named STORE.backup-<timestamp>; for a store of an mKahaDB,
	// ROOT.backup-<timestamp>/STORE next to the mKahaDB root ROOT). Must
	// be on the same file system as the store, and not in an mKahaDB root
	// (a broker with a per-destination filter takes every directory there
	// whose name starts with queue# or topic# for a store of its own).
	BackupDir string
	// MaxFileLength is the broker's journalMaxFileLength: the length of the
	// new journal files, and what the analysis of the original assumes.
	// Zero: read off the store as every command does
	// (replaycache.LoadMaxFileLength); Report.MaxFileLength says which.
	MaxFileLength int64
	// To, when set, is a directory (new, or empty) on any file system
	// that receives the compacted, verified store instead of swapping it
	// in: the original is left as it is, and Report.Space.Reclaim says
	// how to put the result in place with the broker stopped.
	To string
	// Force compacts a damaged store; what the damage dropped is reported.
	Force bool
	// NoRedelivery drops a quirk the compacted store would otherwise carry
	// over: a durable subscription whose acks were processed out of order
	// is handed, by a restarted broker, the messages it had acknowledged
	// again (Report.Quirks). With it, the compacted store delivers it only
	// what it had not acknowledged; its count does not change.
	NoRedelivery bool
	// Now gives the time used for the backup name (default time.Now).
	Now func() time.Time
	// Progress, when set, is told the current phase.
	Progress func(phase string)
	// Bytes, when set, is told how far the phases that read or write a
	// journal are, in bytes: "analyse" (reading the original), "write"
	// (or "layout" in a dry run; of the planned size, an estimate),
	// "verify" (reading the new journal).
	Bytes func(phase string, done, total int64)
	// Cache, when set, analyses the original store through the analysis
	// cache (package replaycache) instead of reading it in full. The
	// compacted journal is always verified by a full replay.
	Cache *replaycache.Options
	// crash, when set, is called at named points (fault-injection tests).
	crash func(point string)
	// fault, when set, may fail the operation at a named point
	// ("exchange", "backup": as a failing rename would; "sync", "extras":
	// as a failing fsync or write would).
	fault func(point string) error
	// tamper, when set, may change each message command before it is
	// written, or leave it out by returning false (tests of the
	// verification: a wrong output).
	tamper func(c *codec.Command) bool
}

// Counts of what a compaction moved.
type Counts struct {
	Subscriptions     int `json:"subscriptions"`
	Messages          int `json:"messages"`
	Acks              int `json:"acks"`
	EmptyDestinations int `json:"emptyDestinations"`
	// Placeholders: ADDs that stand for sequences the subscriptions'
	// ack-position sets and last-ack positions use, removed again
	// (topic.go); they keep the broker's counts and delivery as they were.
	Placeholders int `json:"placeholders"`
	Transactions int `json:"preparedTransactions"`
	// RemovedDestinations: destinations a prepared transaction's ADD
	// creates at replay that the original had removed after it
	// (KAHA_REMOVE_DESTINATION_COMMAND after the transaction).
	RemovedDestinations int `json:"removedDestinations,omitempty"`
	TransactionRecords  int `json:"transactionRecords"`
	Records             int `json:"records"`
}

// FilesBytes sizes a journal.
type FilesBytes struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// Phase is the wall time of one step.
type Phase struct {
	Name    string        `json:"name"`
	Seconds float64       `json:"seconds"`
	elapsed time.Duration `json:"-"`
}

// Report says what a compaction did (or, dry, would do).
type Report struct {
	Store  string `json:"store"`
	Backup string `json:"backup,omitempty"`
	DryRun bool   `json:"dryRun"`
	// BrokerPID is the process that held the broker's lock on the store
	// during a dry run (a running broker; a compaction refuses it).
	BrokerPID int32      `json:"brokerPid,omitempty"`
	Before    FilesBytes `json:"before"`
	After     FilesBytes `json:"after"`
	Moved     Counts     `json:"moved"`
	Dropped   []string   `json:"dropped,omitempty"`
	// Quirks are the broker's behaviours the compacted store carries over
	// as they were (or, with Options.NoRedelivery, drops, said so), and
	// where it cannot reproduce the original exactly.
	Quirks   []string `json:"quirks,omitempty"`
	Verified bool     `json:"verified"`
	// To is where the compacted store was written (Options.To).
	To string `json:"to,omitempty"`
	// Space is what the new store needs and the free space where it goes
	// and, after a compaction, what to delete to get the space back.
	Space    *Space   `json:"space,omitempty"`
	Resumed  string   `json:"resumed,omitempty"`
	Analysis Analysis `json:"analysis"`
	// MaxFileLength is the journalMaxFileLength used, and where it came
	// from.
	MaxFileLength replaycache.MaxFileLength `json:"maxFileLength"`
	Phases        []Phase                   `json:"phases"`
	Seconds       float64                   `json:"seconds"`
	// RecordsPerSecond is moved records over the write phase.
	RecordsPerSecond float64 `json:"recordsPerSecond"`
}

// Analysis says how the original store was analysed.
type Analysis struct {
	// Cache is the analysis cache's outcome (package replaycache): "hit"
	// (no journal byte read), "tail" (only what was appended since),
	// "miss" (read in full, cache written), "off" (read in full).
	Cache string `json:"cache"`
	// Reason says why the cache was not hit.
	Reason string `json:"reason,omitempty"`
	// BytesRead are the journal bytes read.
	BytesRead int64 `json:"bytesRead"`
}

// ErrDamaged: the store has damage and Force was not given.
var ErrDamaged = errors.New("store has damage; compacting it would drop what the damage hides (use --force to compact anyway)")

// ErrVerify: the compacted journal does not replay to the original state.
var ErrVerify = errors.New("verification failed: the compacted journal does not hold the same live state")

// ErrNotCompactable: a store kahafs does not compact (an mKahaDB's
// transaction store).
var ErrNotCompactable = errors.New("not compacted")

const markerName = "kahafs-compact.json"

// Compact compacts the store in dir. On any error before the swap the
// original store is untouched and the new directory is removed.
func Compact(dir string, opts Options) (*Report, error) {
	start := time.Now()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.crash == nil {
		opts.crash = func(string) {}
	}
	if opts.fault == nil {
		opts.fault = func(string) error { return nil }
	}
	dir = filepath.Clean(dir)
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	dir = abs
	// a job scheduler store is refused before anything is locked or written
	if l, err := store.Locate(dir); err == nil && l.Kind == store.KindScheduler {
		return nil, store.CheckModeled(l, codec.ReadOptions{}, func(int) bool { return true })
	}
	rep := &Report{Store: dir, DryRun: opts.DryRun}
	phase := func(name string, t0 time.Time) {
		d := time.Since(t0)
		rep.Phases = append(rep.Phases, Phase{Name: name, Seconds: d.Seconds(), elapsed: d})
		if opts.Progress != nil {
			opts.Progress(name)
		}
	}
	if l, err := store.Locate(dir); err != nil {
		return nil, err
	} else if err := l.SingleError("compaction"); err != nil {
		return nil, err
	} else if l.Kind == store.KindTxStore {
		return nil, fmt.Errorf("%s: %w: the transaction store of an mKahaDB (the outcomes of transactions that span its stores) is not compacted: its broker reads it as a plain journal, and its own cleanup keeps only the files of transactions still in progress", dir, ErrNotCompactable)
	}

	t0 := time.Now()
	// A dry run reads only: its lock needs no write access.
	var lock *StoreLock
	if opts.DryRun {
		lock, err = ShareLock(dir)
		// A dry run reads only: beside a running broker it reads the
		// store as it is now, and says so.
		var le *LockedError
		if errors.As(err, &le) {
			rep.BrokerPID, lock, err = le.PID, &StoreLock{}, nil
		}
	} else if opts.To != "" {
		// The original is only read: a read lock keeps a broker off
		// it, and needs no write access.
		lock, err = ShareLock(dir)
	} else {
		lock, err = AcquireLock(dir)
		if errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			err = fmt.Errorf("%w (a compaction writes next to the store and swaps it in: it needs write access to %s and its parent; --dry-run needs only read access)", err, dir)
		}
	}
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	// A store of an mKahaDB: its broker locks the mKahaDB root's lock
	// file, not the store's (the stores run with useLock=false).
	if root := store.MKahaDBRoot(dir); root != "" {
		var rootLock *StoreLock
		if opts.DryRun {
			rootLock, err = ShareLock(root)
		} else {
			rootLock, err = AcquireLock(root)
		}
		if err != nil {
			return nil, fmt.Errorf("%s is a store of the mKahaDB %s: %w", dir, root, err)
		}
		defer rootLock.Release()
	}
	opts.crash("locked")

	if !opts.DryRun && opts.To == "" {
		resumed, err := finishInterrupted(dir)
		if err != nil {
			return nil, err
		}
		rep.Resumed = resumed
	}

	st, g, analysis, mfl, err := analyse(dir, max(opts.MaxFileLength, 0), opts.Cache, opts.bytes("analyse"))
	if err != nil {
		return nil, err
	}
	rep.Analysis, rep.MaxFileLength = analysis, mfl
	opts.MaxFileLength = mfl.Value
	rep.Before = journalSize(st)
	if g.Damaged() {
		if !opts.Force {
			return nil, ErrDamaged
		}
		for _, f := range g.Files() {
			for _, d := range f.Damage {
				if !codec.IsTail(d) {
					rep.Dropped = append(rep.Dropped, d.Error())
				}
			}
		}
		for _, why := range g.IndexDamage() {
			rep.Dropped = append(rep.Dropped, "the broker's index (db.data) is damaged, and what it no longer shows is not copied: "+why)
		}
	}
	for _, d := range g.Destinations() {
		for i := range d.Messages {
			if m := &d.Messages[i]; m.Unreadable {
				if !opts.Force {
					return nil, ErrDamaged
				}
				rep.Dropped = append(rep.Dropped, fmt.Sprintf("%s: message %s at %s: the index holds it, its record cannot be read", d, m.ID(), m.Loc))
			}
		}
	}
	p, err := plan(st, g, opts.NoRedelivery)
	if err != nil {
		return nil, err
	}
	rep.Quirks = p.quirks
	rep.Moved = p.counts
	phase("analyse", t0)
	target := filepath.Dir(dir)
	if opts.To != "" && opts.BackupDir != "" {
		return nil, errors.New("--to leaves the original where it is: it has no backup (--backup is for a compaction in place)")
	}
	if opts.To != "" {
		to, err := filepath.Abs(opts.To)
		if err != nil {
			return nil, err
		}
		opts.To = filepath.Clean(to)
		if rel, err := filepath.Rel(dir, opts.To); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
			return nil, fmt.Errorf("--to %s is the store or inside it: give a directory outside %s", opts.To, dir)
		}
		if rel, err := filepath.Rel(opts.To, dir); err == nil && !strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("--to %s holds the store %s: give a new or empty directory", opts.To, dir)
		}
		target = opts.To
		if _, err := os.Stat(target); err != nil {
			target = filepath.Dir(opts.To)
		}
		rep.To = opts.To
	}
	if opts.DryRun {
		// The records are read and laid out exactly as the compaction
		// writes them, into no file: the report is the compaction's.
		t0 = time.Now()
		pf := p.read(st)
		defer pf.close()
		if _, _, err := p.write(pf, "", opts); err != nil {
			return nil, err
		}
		rep.After = p.written
		if sp, err := space(dir, target, p.written.Bytes, true); err == nil {
			rep.Space = sp
		}
		phase("layout", t0)
		rep.Seconds = time.Since(start).Seconds()
		return rep, nil
	}

	// Before writing: does the new store fit? An upper bound of the
	// journal first (every file at its preallocated length, as full as
	// half the file, the last one empty), the exact layout when the
	// bound does not fit.
	sp, err := space(dir, target, 2*p.bytes+2*opts.MaxFileLength, false)
	if err != nil {
		return nil, err
	}
	if sp.Needed > sp.Free {
		lo := opts
		lo.DryRun, lo.crash, lo.Bytes = true, func(string) {}, nil
		lpf := p.read(st)
		_, _, err := p.write(lpf, "", lo)
		lpf.close()
		if err != nil {
			return nil, err
		}
		if sp, err = space(dir, target, p.written.Bytes, true); err != nil {
			return nil, err
		}
		if sp.Needed > sp.Free {
			return nil, sp.noSpace()
		}
	}
	rep.Space = sp
	opts.crash("checked")

	pf := p.read(st) // while the new directory is set up
	defer pf.close()
	if opts.To != "" {
		return compactTo(rep, st, p, pf, opts, start, phase, g)
	}

	parent := filepath.Dir(dir)
	stamp := opts.Now().UTC().Format("20060102T150405Z")
	backup := opts.BackupDir
	root := store.MKahaDBRoot(dir)
	if backup == "" {
		backup = dir + ".backup-" + stamp
		if root != "" {
			backup = filepath.Join(root+".backup-"+stamp, filepath.Base(dir))
			if err := os.MkdirAll(filepath.Dir(backup), 0o755); err != nil {
				return nil, fmt.Errorf("backup directory: %w", err)
			}
		}
	}
	backup, err = filepath.Abs(backup)
	if err != nil {
		return nil, err
	}
	if root != "" {
		absRoot, err := filepath.Abs(root)
		if err != nil {
			return nil, err
		}
		if filepath.Dir(backup) == absRoot {
			return nil, fmt.Errorf("backup path %s is in the mKahaDB directory %s, where a broker with a per-destination filter would take it for a store of its own: give one outside it", backup, root)
		}
	}
	if err := sameFileSystem(parent, filepath.Dir(backup)); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(backup); err == nil {
		return nil, fmt.Errorf("backup path %s already exists", backup)
	}
	tmp := filepath.Join(parent, "."+filepath.Base(dir)+".kahafs-compact-"+stamp)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("new store directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	// The marker goes in first: a directory with it is a new store (to
	// remove if unfinished), one without it is never ours to delete.
	if err := writeMarker(tmp, marker{Original: dir, Backup: backup, Temp: tmp}); err != nil {
		return nil, rep.Space.enospc(err, tmp)
	}
	if err := codec.SyncDir(parent); err != nil {
		return nil, err
	}

	t0 = time.Now()
	written, files, err := p.write(pf, tmp, opts)
	if err != nil {
		return nil, rep.Space.enospc(err, tmp)
	}
	pf.close()
	if err := opts.fault("extras"); err != nil {
		return nil, rep.Space.enospc(err, tmp)
	}
	if err := copyExtras(dir, tmp); err != nil {
		return nil, rep.Space.enospc(err, tmp)
	}
	phase("write", t0)
	if d := rep.Phases[len(rep.Phases)-1].elapsed; d > 0 {
		rep.RecordsPerSecond = float64(written) / d.Seconds()
	}
	opts.crash("written")

	// The new data files and the directory are made durable while the
	// verification replays them (it reads the same bytes either way);
	// the swap waits for both. The wait is part of the verify phase.
	var syncErr error
	synced := make(chan struct{})
	go func() {
		defer close(synced)
		syncErr = syncJournal(tmp, files, opts.fault)
	}()
	defer func() { <-synced }() // never leave it working on tmp

	t0 = time.Now()
	// What the new journal must replay to, taken from the original's
	// graph, which goes before the new one is built: the verification
	// needs the memory of one graph. Its memory is handed back to the
	// system at once (the new graph's allocations rarely fit the old
	// one's spans, which would otherwise stay resident until the
	// runtime's background scavenger returns them).
	want := stateOf(g, opts.NoRedelivery)
	g, p.g = nil, nil
	debug.FreeOSMemory()
	nst, ng, err := replayChecked(tmp, opts.MaxFileLength, p.expected(st), opts.bytes("verify"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVerify, err)
	}
	if err := verify(want, ng); err != nil {
		return nil, err
	}
	<-synced
	if syncErr != nil {
		return nil, rep.Space.enospc(syncErr, tmp)
	}
	rep.Verified = true
	rep.After = journalSize(nst)
	phase("verify", t0)
	opts.crash("verified")

	// Keep a broker off the new store too, from before it has its name.
	newLock, err := AcquireLock(tmp)
	if err != nil {
		return nil, err
	}
	defer newLock.Release()

	t0 = time.Now()
	if err := opts.fault("exchange"); err != nil {
		return nil, fmt.Errorf("swap %s and %s: %w", tmp, dir, err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err != nil {
		return nil, fmt.Errorf("swap %s and %s: %w", tmp, dir, err)
	}
	ok = true // tmp now holds the original: never remove it
	opts.crash("exchanged")
	if err := codec.SyncDir(parent); err != nil {
		return rep, err
	}
	if err := opts.fault("backup"); err != nil {
		return rep, fmt.Errorf("move original store to backup %s: %w (it is safe at %s; rerun compact to finish)", backup, err, tmp)
	}
	if err := finishSwap(dir, marker{Original: dir, Backup: backup, Temp: tmp}, opts.crash); err != nil {
		return rep, err
	}
	rep.Backup = backup
	rep.Space.Frees = diskUsage(backup)
	rep.Space.Reclaim = fmt.Sprintf("once a broker runs well on the compacted store, delete the original kept at %s (rm -r %s)", backup, backup)
	phase("swap", t0)
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// bytes is the Bytes callback of one phase (nil without Bytes).
func (o Options) bytes(phase string) func(done, total int64) {
	if o.Bytes == nil {
		return nil
	}
	return func(done, total int64) { o.Bytes(phase, done, total) }
}

// writeProgress is the journal writer's progress callback for a journal
// of about total bytes (nil without Bytes).
func (o Options) writeProgress(total int64) func(written int64) {
	phase := "write"
	if o.DryRun {
		phase = "layout"
	}
	f := o.bytes(phase)
	if f == nil {
		return nil
	}
	return func(written int64) { f(written, total) }
}

// syncJournal fsyncs the data files ids of the new store in dir, then dir.
func syncJournal(dir string, ids []int32, fault func(string) error) error {
	for _, id := range ids {
		p := filepath.Join(dir, codec.DataFileName(id))
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("fsync %s: %w", p, err)
		}
		err = f.Sync()
		if err == nil {
			err = fault("sync")
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("fsync %s: %w", p, err)
		}
	}
	return codec.SyncDir(dir)
}

// finishSwap moves the original (now at m.Temp) to the backup path and
// removes the marker from the compacted store.
func finishSwap(dir string, m marker, crash func(string)) error {
	if err := os.Rename(m.Temp, m.Backup); err != nil {
		return fmt.Errorf("move original store to backup %s: %w (it is safe at %s)", m.Backup, err, m.Temp)
	}
	crash("backed-up")
	if err := codec.SyncDir(filepath.Dir(m.Temp)); err != nil {
		return err
	}
	if filepath.Dir(m.Backup) != filepath.Dir(m.Temp) {
		if err := codec.SyncDir(filepath.Dir(m.Backup)); err != nil {
			return err
		}
	}
	if err := os.Remove(filepath.Join(dir, markerName)); err != nil {
		return fmt.Errorf("remove marker: %w", err)
	}
	return codec.SyncDir(dir)
}

// finishInterrupted completes or cleans up what an interrupted compaction
// of dir left. It returns a description of what it did ("" for nothing).
func finishInterrupted(dir string) (string, error) {
	parent := filepath.Dir(dir)
	prefix := "." + filepath.Base(dir) + ".kahafs-compact-"
	var did []string
	// The store itself carries the marker: the exchange happened.
	if m, err := readMarker(dir); err == nil {
		if _, err := os.Stat(m.Temp); err == nil {
			if err := finishSwap(dir, m, func(string) {}); err != nil {
				return "", err
			}
			did = append(did, "finished an interrupted swap: original moved to "+m.Backup)
		} else if err := os.Remove(filepath.Join(dir, markerName)); err != nil {
			return "", err
		} else {
			did = append(did, "removed the marker of a finished compaction")
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(parent, e.Name())
		if _, err := readMarker(p); err != nil {
			// No marker: this could be an original store; never delete it.
			did = append(did, "left "+p+" alone (no compaction marker: not ours to delete)")
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return "", err
		}
		did = append(did, "removed the unfinished new store "+p)
	}
	return strings.Join(did, "; "), nil
}

func journalSize(st *codec.Store) FilesBytes {
	var fb FilesBytes
	for _, f := range st.Files {
		fb.Files++
		fb.Bytes += f.Size
	}
	return fb
}

func sameFileSystem(a, b string) error {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return fmt.Errorf("stat %s: %w", a, err)
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return fmt.Errorf("backup directory %s: %w", b, err)
	}
	if sa.Dev != sb.Dev {
		return fmt.Errorf("backup directory %s is on another file system than %s: the swap must be a rename", b, a)
	}
	return nil
}

// copyExtras copies regular files of the store other than the journal and
// the index (the lock file, a scheduler template, ...) into the new store.
func copyExtras(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if _, ok := codec.ParseDataFileName(name); ok || !e.Type().IsRegular() {
			continue
		}
		switch name {
		case "db.data", "db.redo", "db.free", markerName:
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if err := writeFileSync(filepath.Join(dst, name), b); err != nil {
			return err
		}
	}
	return nil
}

func writeFileSync(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

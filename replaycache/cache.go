package replaycache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/binenc"
	"github.com/kahafs/kahafs/refgraph"
)

// EnvDir names the environment variable that overrides the default cache
// directory.
const EnvDir = "KAHAFS_CACHE_DIR"

// racyWindow: a file modified this close to (or after) the moment its
// identity was taken may change again without its identity changing
// (mtime granularity), so that identity is not trusted on its own.
const racyWindow = 2 * time.Second

// variantsPerStore bounds the cache files kept per store (one per set of
// options).
const variantsPerStore = 4

// maxAge: cache files not written for this long are removed.
const maxAge = 30 * 24 * time.Hour

// Options configure the cache.
type Options struct {
	// Dir is the cache directory; "" means DefaultDir().
	Dir string
	// Disable reads the store in full and neither reads nor writes a
	// cache file.
	Disable bool
	// Logf, when set, is told what goes wrong with the cache (a corrupt
	// file ignored, a file that cannot be written). Such problems never
	// fail a Load: the store is read instead.
	Logf func(format string, args ...any)
	// Progress, when set, is called after each data file read with the
	// journal bytes read so far and the bytes to read in all.
	Progress func(done, total int64)
	// Workers for codec.ReadFilesFrom (0: the default).
	Workers int
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// DefaultDir is $KAHAFS_CACHE_DIR when set, else kahafs/ in the user's
// cache directory (os.UserCacheDir).
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "kahafs"), nil
}

// Outcome says how a Load used the cache.
type Outcome string

// Outcomes.
const (
	// Off: the cache was disabled or could not be used; the store was
	// read in full and nothing saved.
	Off Outcome = "off"
	// Miss: no usable cache; the store was read in full.
	Miss Outcome = "miss"
	// Tail: the cache was resumed and only the bytes appended since read.
	Tail Outcome = "tail"
	// Hit: nothing changed; no journal byte was read.
	Hit Outcome = "hit"
)

// FileResult is what reading one data file found.
type FileResult struct {
	// Summary as codec reports it for the whole file (End absolute;
	// Records, Batches and Damage over all of it, however many readings
	// it took).
	Summary codec.FileSummary
	// Counts are the decoded commands by entry type.
	Counts [codec.NumEntryTypes]int64
}

// Commands is the number of decoded commands.
func (f *FileResult) Commands() int64 {
	var n int64
	for _, c := range f.Counts {
		n += c
	}
	return n
}

// Result is an analysis of a store, from the cache or not.
type Result struct {
	Graph *refgraph.Graph
	// Files are the store's data files (codec.Store.Files order).
	Files   []FileResult
	Outcome Outcome
	// Reason says why the cache was not hit (empty on a hit).
	Reason string
	// BytesRead are the journal bytes read (0 on a hit).
	BytesRead int64
	// CacheFile is the cache file used or written ("" when off).
	CacheFile string
	// Saved: the cache file was (re)written.
	Saved bool

	// side: what a side file of this result is valid for (SaveSide);
	// nil when there is no cache file to go with it.
	side *sideKey
	// guessed: the side key of the first analysis of LoadMaxFileLength,
	// with the length guessed from the file system, when it settled
	// another (SaveSide keeps a redirection there).
	guessed *sideKey
}

// Load analyses st: it replays the store with refgraph (options ropts,
// whose Files are set to st.Files) reading it with read, using and
// updating the cache as copts says. Problems with the cache itself are
// logged and never fail the Load; errors reading the store do.
func Load(st *codec.Store, ropts refgraph.Options, read codec.ReadOptions, copts Options) (*Result, error) {
	ropts.Files = st.Files
	l := &loader{st: st, ropts: ropts, read: read, copts: copts}
	res, err := l.load()
	if errors.Is(err, refgraph.ErrIndexRebuild) {
		// the broker would discard this index and replay the whole
		// journal: so does the analysis (and caches that)
		why := err.Error()
		l = &loader{st: st, ropts: refgraph.WithoutIndex(ropts), read: read, copts: copts}
		if res, err = l.load(); res != nil && res.Graph != nil {
			res.Graph.AddWarning(why + ": replayed as a broker rebuilding its index")
		}
	}
	return res, err
}

type loader struct {
	st    *codec.Store
	ropts refgraph.Options
	read  codec.ReadOptions
	copts Options

	file     string // cache file
	store    string // resolved store path
	variant  []byte
	statTime time.Time
	ids      []identity // of st.Files, taken before reading
}

func (l *loader) load() (*Result, error) {
	reason, ok := l.prepare()
	if !ok {
		res, _, err := l.read0(Off)
		if res != nil {
			res.Reason = reason
		}
		return res, err
	}
	c, cb, reason := l.open()
	if c != nil {
		res, why, err := l.use(c)
		if err == nil && res != nil {
			cb.keepFor(res.Graph) // it may still refer to c.State
		} else {
			cb.release()
		}
		if err != nil || res != nil {
			return res, err
		}
		reason = why
	}
	res, save, err := l.read0(Miss)
	if err != nil {
		return nil, err
	}
	res.Reason = reason
	res.CacheFile = l.file
	if save != nil {
		l.save(res, save, 0, -1)
	}
	return res, nil
}

// prepare works out the cache file and takes the identities of the data
// files. It reports false (and why) when the cache cannot be used.
func (l *loader) prepare() (string, bool) {
	if l.copts.Disable {
		return "disabled", false
	}
	if !supported {
		return "file identities not supported on this system", false
	}
	dir := l.copts.Dir
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			l.copts.logf("cache: off: no cache directory: %v", err)
			return "no cache directory", false
		}
		dir = d
	}
	store, err := resolve(l.st.Dir)
	if err != nil {
		l.copts.logf("cache: off: %v", err)
		return "store path not resolved", false
	}
	cdir, err := filepath.Abs(dir)
	if err == nil {
		cdir = resolvePartial(cdir)
	}
	if err != nil || within(cdir, store) {
		l.copts.logf("cache: off: the cache directory %s is inside the store %s, which is never written", dir, store)
		return "cache directory inside the store", false
	}
	l.store = store
	l.variant = variant(l.ropts, l.read)
	l.file = filepath.Join(cdir, fileName(store, l.variant))
	l.statTime = time.Now()
	l.ids = make([]identity, len(l.st.Files))
	for i, fi := range l.st.Files {
		id, err := statIdentity(fi.Path)
		if err != nil {
			// the reading reports it; nothing to cache
			return "data file " + fi.Name + " cannot be stat'ed", false
		}
		l.ids[i] = id
	}
	return "", true
}

// resolve returns the absolute path of dir with symbolic links resolved.
func resolve(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// resolvePartial resolves the symbolic links of the longest existing
// prefix of path (the cache directory may not exist yet).
func resolvePartial(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	parent := filepath.Dir(path)
	if parent == path {
		return path
	}
	return filepath.Join(resolvePartial(parent), filepath.Base(path))
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))))
}

// variant encodes the options the analysis depends on besides the index
// positions (which the state checks by value): they pick the cache file.
func variant(o refgraph.Options, read codec.ReadOptions) []byte {
	o = o.WithDefaults()
	var w binenc.Writer
	w.Byte(1) // variant encoding
	w.Varint(o.MaxFileLength)
	w.Bool(o.Running)
	w.Varint(int64(o.RestartTraceSize))
	w.Int(o.KeepCompleted)
	w.Bool(o.Index != nil)
	w.Bool(read.SkipChecksums)
	return w.B
}

// fileName is the cache file of a store and a variant.
func fileName(store string, variant []byte) string {
	return storePrefix(store) + "-" + hashHex(variant)[:8] + ".kcache"
}

func storePrefix(store string) string { return hashHex([]byte(store))[:32] }

func hashHex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// open reads and decodes the cache file; nil and why when there is none
// or it is not usable.
func (l *loader) open() (*cacheData, *cacheBytes, string) {
	b, err := readFile(l.file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, "no cache file"
		}
		l.copts.logf("cache: ignoring %s: %v", l.file, err)
		return nil, nil, "cache file unreadable"
	}
	paths := make(map[int32]string, len(l.st.Files))
	for _, fi := range l.st.Files {
		paths[fi.ID] = fi.Path
	}
	c, err := decode(b.b, func(id int32) string { return paths[id] })
	if err != nil {
		b.release()
		l.copts.logf("cache: ignoring %s: %v", l.file, err)
		return nil, nil, "cache file not usable"
	}
	if c.Store != l.store || string(c.Variant) != string(l.variant) {
		b.release()
		l.copts.logf("cache: ignoring %s: written for another store or other options", l.file)
		return nil, nil, "cache file of another store"
	}
	return c, b, ""
}

// use tries the cache: a result on a hit or a tail, nil and why it could
// not be used otherwise. Errors are the store's (reading a tail).
func (l *loader) use(c *cacheData) (*Result, string, error) {
	files := l.st.Files
	n := len(c.Files)
	if len(files) < n {
		return nil, "data files deleted", nil
	}
	same := func(i int) bool {
		return files[i].ID == c.Files[i].ID && l.ids[i] == c.Files[i].Id && !c.Files[i].Racy
	}
	for i := 0; i+1 < n; i++ {
		if !same(i) {
			return nil, files[i].Name + " changed", nil
		}
	}
	if n == 0 {
		if len(files) == 0 {
			return l.hit(c)
		}
		return nil, "data files appeared in an empty store", nil
	}
	last := n - 1
	if len(files) == n && same(last) {
		return l.hit(c)
	}
	// tail: the last cached file grew or was written, and/or new files
	lf := &c.Files[last]
	fi := files[last]
	if fi.ID != lf.ID {
		return nil, fi.Name + " replaced", nil
	}
	id := l.ids[last]
	if id.Dev != lf.Id.Dev || id.Ino != lf.Id.Ino || id.Size < lf.Id.Size {
		return nil, fi.Name + " replaced or shrunk", nil
	}
	for _, f := range files[n:] {
		for _, s := range c.Sources {
			if s == f.ID {
				return nil, f.Name + " appeared, the source of an ack-compaction file", nil
			}
		}
	}
	end := lf.Res.Summary.End
	unchanged := same(last)
	if !unchanged {
		crc, err := prefixCRC(fi.Path, 0, 0, end)
		if err != nil || crc != c.LastCRC {
			return nil, fi.Name + " changed before its end", nil
		}
	}
	probe, err := readAt(fi.Path, end, len(codec.BatchMagic))
	if err != nil || !resumableAt(lf, probe, id.Size, unchanged) {
		return nil, fi.Name + " cannot be resumed at its end", nil
	}
	b, err := refgraph.ResumeBuilderBytes(l.ropts, c.State)
	if err != nil {
		return nil, stateWhy(err), nil
	}
	res := &Result{Outcome: Tail, CacheFile: l.file, Files: make([]FileResult, len(files))}
	for i := 0; i < last; i++ {
		res.Files[i] = c.Files[i].Res
		res.Files[i].Summary.Info = files[i]
	}
	prev := lf.Res
	prev.Summary.Info = fi
	v := l.visitor(b, res, last, end, &prev)
	if err := codec.ReadFilesFrom(files[last:], end, l.read, l.copts.Workers, v); err != nil {
		return nil, "", err
	}
	if err := v.finish(); err != nil {
		return nil, "", err
	}
	if res.Graph, err = b.Build(); err != nil {
		return nil, "", err
	}
	res.BytesRead = v.bytes
	if v.state != nil {
		crc := c.LastCRC
		from := end
		if v.lastID != lf.ID {
			crc, from = 0, 0
		}
		l.save(res, v, crc, from)
	}
	return res, "", nil
}

func stateWhy(err error) string {
	if errors.Is(err, refgraph.ErrForwardedBehind) {
		return "an ack-compaction file whose source is gone appeared"
	}
	if errors.Is(err, refgraph.ErrStateMismatch) {
		return "index positions or options changed"
	}
	return "cached state not usable"
}

// hit builds the graph from the cache alone.
func (l *loader) hit(c *cacheData) (*Result, string, error) {
	b, err := refgraph.ResumeBuilderBytes(l.ropts, c.State)
	if err != nil {
		if !errors.Is(err, refgraph.ErrStateMismatch) {
			l.copts.logf("cache: ignoring %s: %v", l.file, err)
		}
		return nil, stateWhy(err), nil
	}
	res := &Result{Outcome: Hit, CacheFile: l.file, Files: make([]FileResult, len(c.Files))}
	for i := range c.Files {
		res.Files[i] = c.Files[i].Res
		res.Files[i].Summary.Info = l.st.Files[i]
	}
	if c.Pending {
		s := res.Files[len(res.Files)-1].Summary
		s.Damage = append([]*codec.CorruptionError(nil), s.Damage...)
		if err := b.FileDone(&s); err != nil {
			return nil, "", err
		}
	}
	if res.Graph, err = b.Build(); err != nil {
		return nil, "", err
	}
	res.side = l.sideKeyOf(func(int) bool { return false }) // a hit: none racy
	return res, "", nil
}

// read0 reads the whole store (a miss, or with the cache off).
func (l *loader) read0(out Outcome) (*Result, *visitor, error) {
	b := refgraph.NewBuilder(l.ropts)
	res := &Result{Outcome: out, Files: make([]FileResult, len(l.st.Files))}
	v := l.visitor(b, res, 0, 0, nil)
	v.keepState = out != Off
	if err := codec.ReadFilesFrom(l.st.Files, 0, l.read, l.copts.Workers, v); err != nil {
		return nil, nil, err
	}
	if err := v.finish(); err != nil {
		return nil, nil, err
	}
	g, err := b.Build()
	if err != nil {
		return nil, nil, err
	}
	res.Graph = g
	res.BytesRead = v.bytes
	if v.state == nil {
		return res, nil, nil
	}
	return res, v, nil
}

// save writes the cache of res. The CRC of the last file's bytes is
// continued from crc over [from, End) (from < 0: computed from 0).
func (l *loader) save(res *Result, v *visitor, crc uint32, from int64) {
	files := l.st.Files
	if len(files) > 0 {
		lastSum := res.Files[len(files)-1].Summary
		if from < 0 {
			crc, from = 0, 0
		}
		var err error
		if crc, err = prefixCRC(lastSum.Info.Path, crc, from, lastSum.End); err != nil {
			l.copts.logf("cache: not saved: %v", err)
			return
		}
	}
	for i := range res.Files {
		for _, d := range res.Files[i].Summary.Damage {
			if errors.Is(d, codec.ErrUnreadable) || errors.Is(d, codec.ErrMissingFile) {
				return // transient: read again next time
			}
		}
	}
	c := &cacheData{Store: l.store, Variant: l.variant, StatTime: l.statTime.UnixNano(),
		LastCRC: crc, Sources: res.Graph.CompactionSources(), Pending: len(files) > 0, State: v.state}
	racyFrom := l.statTime.Add(-racyWindow).UnixNano()
	for i, fi := range files {
		c.Files = append(c.Files, cachedFile{ID: fi.ID, Id: l.ids[i], Racy: l.ids[i].Mtime >= racyFrom, Res: res.Files[i]})
	}
	data, err := c.encode()
	if err != nil {
		l.copts.logf("cache: not saved: %v", err)
		return
	}
	if err := writeAtomic(l.file, data); err != nil {
		l.copts.logf("cache: not saved: %v", err)
		return
	}
	res.Saved = true
	res.side = l.sideKeyOf(func(i int) bool { return c.Files[i].Racy })
	prune(filepath.Dir(l.file), storePrefix(l.store), l.file)
}

// private makes sure only its owner can enter the cache directory dir (the
// cache holds a store's destination names and message ids): one of ours
// that others can enter is made 0700; one of another user's is refused.
func private(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if info.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("cache directory %s is open to other users (%v) and not ours: not saved there", dir, info.Mode().Perm())
	}
	return os.Chmod(dir, 0o700)
}

// writeAtomic writes data to path through a temporary file in the same
// directory (created 0700), fsynced and renamed over path.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := private(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*.kcache") // 0600
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// prune removes the cache files of the store beyond the newest
// variantsPerStore, cache files not written for maxAge, and temporary
// files left by a process that died while writing.
func prune(dir, prefix, keep string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type ent struct {
		path string
		mod  time.Time
	}
	var mine []ent
	now := time.Now()
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".kcache") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		path := filepath.Join(dir, name)
		switch {
		case path == keep:
			continue
		case strings.HasPrefix(name, ".tmp-"):
			if now.Sub(info.ModTime()) > time.Hour {
				os.Remove(path)
			}
		case now.Sub(info.ModTime()) > maxAge:
			os.Remove(path)
		case strings.HasPrefix(name, prefix+"-"):
			mine = append(mine, ent{path, info.ModTime()})
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].mod.After(mine[j].mod) })
	for i, e := range mine {
		if i >= variantsPerStore-1 {
			os.Remove(e.path)
		}
	}
	pruneSides(dir)
}

// visitor counts commands per file, passes
// every call on to the Builder and saves its state before the last file's
// FileDone. Reading from the middle of a file, it merges the summary of
// the cached part into that file's.
type visitor struct {
	b     *refgraph.Builder
	res   *Result
	files []codec.FileInfo // being read
	k     int              // index of files[0] in res.Files
	i     int              // file being read (index into files)

	from int64       // offset files[0] is read from
	prev *FileResult // the cached part of files[0] (nil: read whole)

	keepState bool
	state     []byte
	stateErr  error
	lastID    int32

	progress     func(done, total int64)
	bytes, total int64
}

func (l *loader) visitor(b *refgraph.Builder, res *Result, k int, from int64, prev *FileResult) *visitor {
	v := &visitor{b: b, res: res, files: l.st.Files[k:], k: k, from: from, prev: prev,
		keepState: true, progress: l.copts.Progress}
	for i, fi := range v.files {
		v.total += fi.Size
		if i == 0 {
			v.total -= min(from, fi.Size)
		}
	}
	return v
}

func (v *visitor) cur(id int32) (*FileResult, error) {
	if v.i < len(v.files) && v.files[v.i].ID == id {
		return &v.res.Files[v.k+v.i], nil
	}
	return nil, fmt.Errorf("replaycache: record of data file %d outside the files being read", id)
}

func (v *visitor) Command(rec codec.Record, c *codec.Command) error {
	f, err := v.cur(rec.Loc.File)
	if err != nil {
		return err
	}
	if c.Type.Valid() {
		f.Counts[c.Type]++
	}
	return v.b.Command(rec, c)
}

func (v *visitor) FileDone(sum *codec.FileSummary) error {
	f, err := v.cur(sum.Info.ID)
	if err != nil {
		return err
	}
	s := *sum
	s.Damage = append([]*codec.CorruptionError(nil), sum.Damage...)
	read := s.Size
	if v.i == 0 && v.prev != nil {
		read = max(s.Size-v.from, 0)
		p := &v.prev.Summary
		s.Records += p.Records
		s.Batches += p.Batches
		s.Checksummed += p.Checksummed
		var dmg []*codec.CorruptionError
		for _, d := range p.Damage {
			if d.Offset < v.from { // a torn end at from is read again
				dmg = append(dmg, d)
			}
		}
		s.Damage = append(dmg, s.Damage...)
		for t := range f.Counts {
			f.Counts[t] += v.prev.Counts[t]
		}
	}
	if len(s.Damage) == 0 {
		s.Damage = nil
	}
	f.Summary = s
	if v.i == len(v.files)-1 && v.keepState {
		v.state, v.stateErr = v.b.AppendState(nil)
		v.lastID = s.Info.ID
	}
	v.i++
	v.bytes += read
	if v.progress != nil {
		v.progress(v.bytes, v.total)
	}
	fwd := s
	fwd.Damage = append([]*codec.CorruptionError(nil), s.Damage...)
	return v.b.FileDone(&fwd)
}

// finish checks that every file was read and takes the state of a store
// without data files.
func (v *visitor) finish() error {
	if v.i != len(v.files) {
		return fmt.Errorf("replaycache: %d of %d data files read", v.i, len(v.files))
	}
	if len(v.files) == 0 && v.keepState {
		v.state, v.stateErr = v.b.AppendState(nil)
	}
	if v.stateErr != nil {
		v.state = nil // not representable (unknown damage): not cached
	}
	return nil
}

package replaycache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/binenc"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// past is the mtime of copied stores (brokertest.Past).
var past = brokertest.Past

// logs collects what the cache logs.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

type setup struct {
	maxFile int64
	noIndex bool
	keep    int
	running bool
}

func (s setup) opts(st *codec.Store) refgraph.Options {
	o := refgraph.StoreOptions(st, !s.noIndex, nil)
	o.MaxFileLength, o.KeepCompleted, o.Running = s.maxFile, s.keep, s.running
	return o
}

// load runs Load on the store in dir with the cache in cdir.
func load(t *testing.T, dir, cdir string, s setup, lg *logs) *Result {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	co := Options{Dir: cdir, Disable: cdir == ""}
	if lg != nil {
		co.Logf = lg.logf
	}
	res, err := Load(st, s.opts(st), codec.ReadOptions{}, co)
	require.NoError(t, err)
	require.Len(t, res.Files, len(st.Files))
	return res
}

// summaries records what codec.ReadStore reports per file, and the
// commands per type, as the reference for Result.Files.
type summaries struct {
	files  []FileResult
	byID   map[int32]int
	counts map[int32]*[codec.NumEntryTypes]int64
}

func (s *summaries) Command(rec codec.Record, c *codec.Command) error {
	if s.counts[rec.Loc.File] == nil {
		s.counts[rec.Loc.File] = new([codec.NumEntryTypes]int64)
	}
	s.counts[rec.Loc.File][c.Type]++
	return nil
}

func (s *summaries) FileDone(sum *codec.FileSummary) error {
	f := FileResult{Summary: *sum}
	if c := s.counts[sum.Info.ID]; c != nil {
		f.Counts = *c
	}
	s.files = append(s.files, f)
	return nil
}

// reference reads the store in dir without the cache: the graph (dumped)
// and the files as codec reports them.
func reference(t *testing.T, dir string, s setup) (string, []FileResult) {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	g, err := refgraph.Load(st, s.opts(st), codec.ReadOptions{})
	require.NoError(t, err)
	sm := &summaries{counts: map[int32]*[codec.NumEntryTypes]int64{}}
	require.NoError(t, codec.ReadStore(st, codec.ReadOptions{}, 0, sm))
	return g.Dump(), sm.files
}

// requireSame compares a result with the reference reading.
func requireSame(t *testing.T, res *Result, wantGraph string, wantFiles []FileResult, msg string) {
	t.Helper()
	require.Equal(t, wantGraph, res.Graph.Dump(), "%s: graph", msg)
	require.Equal(t, len(wantFiles), len(res.Files), msg)
	for i := range wantFiles {
		w, g := wantFiles[i], res.Files[i]
		require.Equal(t, w.Counts, g.Counts, "%s: %s counts", msg, w.Summary.Info.Name)
		ws, gs := w.Summary, g.Summary
		wd, gd := ws.Damage, gs.Damage
		ws.Damage, gs.Damage = nil, nil
		require.Equal(t, ws, gs, "%s: %s summary", msg, w.Summary.Info.Name)
		require.Equal(t, len(wd), len(gd), "%s: %s damage", msg, w.Summary.Info.Name)
		for j := range wd {
			require.Equal(t, *wd[j], *gd[j], "%s: %s damage %d", msg, w.Summary.Info.Name, j)
		}
	}
}

// treeState is everything observable about a directory: entries, modes,
// sizes, times and contents.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var sb strings.Builder
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		fmt.Fprintf(&sb, "%s %v %d %d %x\n", e.Name(), info.Mode(), info.Size(), info.ModTime().UnixNano(), sha256.Sum256(b))
	}
	return sb.String()
}

func fixtureSetup(fx brokertest.Fixture) setup {
	return setup{maxFile: int64(fx.Expected.MaxFileLength)}
}

// TestHit: a second Load of an unchanged store reads nothing and gives
// the same graph and files as a reading without the cache; the store
// directory is not touched.
func TestHit(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			dir := brokertest.AgedCopy(t, fx.StoreDir)
			cdir := filepath.Join(t.TempDir(), "cache")
			before := treeState(t, dir)
			for _, s := range []setup{fixtureSetup(fx), {maxFile: fixtureSetup(fx).maxFile, noIndex: true, keep: -1}} {
				wantG, wantF := reference(t, dir, s)
				var lg logs
				first := load(t, dir, cdir, s, &lg)
				assert.Equal(t, Miss, first.Outcome)
				assert.Equal(t, "no cache file", first.Reason)
				assert.True(t, first.Saved, lg.String())
				assert.Positive(t, first.BytesRead)
				requireSame(t, first, wantG, wantF, "miss")

				second := load(t, dir, cdir, s, &lg)
				assert.Equal(t, Hit, second.Outcome, second.Reason)
				assert.Zero(t, second.BytesRead)
				assert.False(t, second.Saved)
				requireSame(t, second, wantG, wantF, "hit")
				assert.Empty(t, lg.String())
			}
			require.Equal(t, before, treeState(t, dir), "the store directory is unchanged")

			// one file per variant, private
			st, err := os.Stat(cdir)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
			ents, err := os.ReadDir(cdir)
			require.NoError(t, err)
			require.Len(t, ents, 2)
			for _, e := range ents {
				info, err := e.Info()
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), e.Name())
				assert.True(t, strings.HasSuffix(e.Name(), ".kcache"))
			}
		})
	}
}

// batchStarts lists the offsets of the batches of a data file.
func batchStarts(t *testing.T, fi codec.FileInfo) []int64 {
	t.Helper()
	var out []int64
	_, err := codec.ScanFile(fi, codec.ReadOptions{}, func(rec codec.Record, _ *codec.Command) error {
		if n := len(out); rec.Batch >= 0 && (n == 0 || out[n-1] != int64(rec.Batch)) {
			out = append(out, int64(rec.Batch))
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// prefixKind says how the last file of a prefix of a store ends.
type prefixKind int

const (
	cutAtBatch prefixKind = iota // truncated at a batch boundary
	zeroFrom                     // bytes from a batch boundary zeroed, size kept (preallocation)
	tornBatch                    // cut in the middle of a batch (a write in progress)
	wholeFiles                   // only whole files (the next ones appear)
)

// makePrefix turns the store in dir into an earlier state of itself:
// files after index j removed, file j ended as kind says at its batch
// number cut. It returns a function that restores the full store (same
// inodes for the files kept).
func makePrefix(t *testing.T, dir string, j, cut int, kind prefixKind) func() {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	saved := map[string][]byte{}
	for i, fi := range st.Files {
		b, err := os.ReadFile(fi.Path)
		require.NoError(t, err)
		switch {
		case i > j:
			saved[fi.Path] = b
			require.NoError(t, os.Remove(fi.Path))
		case i == j && kind != wholeFiles:
			saved[fi.Path] = b
			starts := batchStarts(t, fi)
			require.Greater(t, len(starts), cut)
			at := starts[cut]
			var nb []byte
			switch kind {
			case cutAtBatch:
				nb = b[:at]
			case zeroFrom:
				nb = append(append([]byte(nil), b[:at]...), make([]byte, len(b)-int(at))...)
			case tornBatch:
				nb = append(append([]byte(nil), b[:at+40]...), make([]byte, 64)...)
			}
			f, err := os.OpenFile(fi.Path, os.O_WRONLY|os.O_TRUNC, 0)
			require.NoError(t, err)
			_, err = f.Write(nb)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
	}
	brokertest.Age(t, dir)
	// restore the full store and date the files it writes back (dating
	// changes a file's ctime: the files before j are left alone)
	return func() {
		for path, b := range saved {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			require.NoError(t, err)
			_, err = f.Write(b)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, os.Chtimes(path, past, past))
		}
	}
}

// indexAhead reports whether the reading adopted an index that refers to
// records it could not read.
func indexAhead(r *Result) bool {
	for _, w := range r.Graph.Warnings() {
		if strings.HasPrefix(w, "index: ") || strings.HasPrefix(w, "the index (db.data) holds ") {
			return true
		}
	}
	return false
}

// forwardedBehind reports whether the store in dir has an ack-compaction
// file from file id on (removed or cut by makePrefix) whose source is gone
// and lies before id: a replay of the prefix may have passed where its
// acks belong.
func forwardedBehind(t *testing.T, dir string, id int32) bool {
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	for _, h := range codec.CompactionHeads(st.Files) {
		if _, ok := st.File(h.Source); !ok && h.File >= id && h.Source < id {
			return true
		}
	}
	return false
}

// TestTail: a store that grew since it was cached is read from where the
// cache stopped, and the result is that of a fresh reading.
func TestTail(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			st, err := codec.OpenStore(fx.StoreDir)
			require.NoError(t, err)
			n := len(st.Files)
			type tc struct {
				j, cut int
				kind   prefixKind
			}
			cases := []tc{{n - 1, 1, cutAtBatch}, {n / 2, 1, cutAtBatch}, {n - 1, 1, zeroFrom}, {n - 2, 0, wholeFiles},
				{n - 1, 0, tornBatch}, {0, 1, zeroFrom}}
			for _, c := range cases {
				for _, s := range []setup{fixtureSetup(fx), {maxFile: fixtureSetup(fx).maxFile, noIndex: true}} {
					name := fmt.Sprintf("file%d-batch%d-kind%d-noindex=%v", c.j, c.cut, c.kind, s.noIndex)
					dir := brokertest.AgedCopy(t, fx.StoreDir)
					cdir := t.TempDir()
					if c.kind != wholeFiles && len(batchStarts(t, codec.FileInfo{ID: st.Files[c.j].ID, Path: filepath.Join(dir, st.Files[c.j].Name)})) <= c.cut {
						continue
					}
					restore := makePrefix(t, dir, c.j, c.cut, c.kind)
					var lg logs
					first := load(t, dir, cdir, s, &lg)
					if !first.Saved && indexAhead(first) {
						// the cut hid records the index (not cut) refers
						// to: nothing is cached from such a reading
						restore()
						continue
					}
					require.True(t, first.Saved, "%s: %s", name, lg.String())
					restore()

					wantG, wantF := reference(t, dir, s)
					second := load(t, dir, cdir, s, &lg)
					if second.Outcome == Miss && !s.noIndex && forwardedBehind(t, dir, st.Files[c.j].ID) {
						// the cut hid an ack-compaction file whose source is
						// gone and whose acks belong before the cut: only a
						// full reading applies them there
						require.Equal(t, "an ack-compaction file whose source is gone appeared", second.Reason, name)
						requireSame(t, second, wantG, wantF, name)
						continue
					}
					require.Equal(t, Tail, second.Outcome, "%s: %s", name, second.Reason)
					var total int64
					for _, f := range second.Files {
						total += f.Summary.Size
					}
					assert.Less(t, second.BytesRead, total, name)
					requireSame(t, second, wantG, wantF, name)
					require.True(t, second.Saved, name)

					// and the cache it saved is a hit
					third := load(t, dir, cdir, s, &lg)
					require.Equal(t, Hit, third.Outcome, "%s: %s", name, third.Reason)
					requireSame(t, third, wantG, wantF, name+" hit")
					assert.Empty(t, lg.String())
				}
			}
		})
	}
}

// TestInvalidation: what the cache must not trust.
func TestInvalidation(t *testing.T) {
	fx := brokertest.Fixtures(t)[len(brokertest.Fixtures(t))-1] // tx: index, prepared transaction
	s := fixtureSetup(fx)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string, st *codec.Store)
		setup  setup
		why    string
	}{
		{"touch-middle", func(t *testing.T, dir string, st *codec.Store) {
			require.NoError(t, os.Chtimes(st.Files[1].Path, past.Add(time.Minute), past.Add(time.Minute)))
		}, s, "changed"},
		{"delete", func(t *testing.T, dir string, st *codec.Store) {
			require.NoError(t, os.Remove(st.Files[0].Path))
		}, s, "deleted"},
		{"delete-last", func(t *testing.T, dir string, st *codec.Store) {
			require.NoError(t, os.Remove(st.Files[len(st.Files)-1].Path))
		}, s, "deleted"},
		{"replace-same-size", func(t *testing.T, dir string, st *codec.Store) {
			// a copy renamed over the file: same size and mtime, new inode
			p := st.Files[1].Path
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p+".new", b, 0o644))
			require.NoError(t, os.Chtimes(p+".new", past, past))
			require.NoError(t, os.Rename(p+".new", p))
		}, s, "changed"},
		{"rewrite-last-middle", func(t *testing.T, dir string, st *codec.Store) {
			// the last file changed before its end (same inode, size)
			p := st.Files[len(st.Files)-1].Path
			require.NoError(t, faults.EditFile(p, func(b []byte) []byte { return faults.FlipByte(b, 100) }))
		}, s, "changed before its end"},
		{"max-file-length", func(t *testing.T, dir string, st *codec.Store) {}, setup{maxFile: 4 << 20}, "no cache file"},
		{"no-index", func(t *testing.T, dir string, st *codec.Store) {}, setup{maxFile: s.maxFile, noIndex: true}, "no cache file"},
		{"running", func(t *testing.T, dir string, st *codec.Store) {}, setup{maxFile: s.maxFile, running: true}, "no cache file"},
		{"index-moved", func(t *testing.T, dir string, st *codec.Store) {
			// another db.data (another recovery position): same files
			other := filepath.Join(brokertest.Fixtures(t)[1].StoreDir, "db.data")
			b, err := os.ReadFile(other)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "db.data"), b, 0o644))
			require.NoError(t, os.Remove(filepath.Join(dir, "db.redo")))
		}, s, "index positions or options changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := brokertest.AgedCopy(t, fx.StoreDir)
			cdir := t.TempDir()
			var lg logs
			require.True(t, load(t, dir, cdir, s, &lg).Saved)
			st, err := codec.OpenStore(dir)
			require.NoError(t, err)
			tc.change(t, dir, st)
			wantG, wantF := reference(t, dir, tc.setup)
			res := load(t, dir, cdir, tc.setup, &lg)
			assert.Equal(t, Miss, res.Outcome)
			assert.Contains(t, res.Reason, tc.why)
			requireSame(t, res, wantG, wantF, tc.name)
			assert.Empty(t, lg.String())
		})
	}
}

// TestRacy: files written just before they were cached are not trusted
// by their identity.
func TestRacy(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir) // mtimes: now
	cdir := t.TempDir()
	s := fixtureSetup(fx)
	require.True(t, load(t, dir, cdir, s, nil).Saved)
	res := load(t, dir, cdir, s, nil)
	assert.Equal(t, Miss, res.Outcome)
	assert.Contains(t, res.Reason, "changed")
}

// TestCorruptCacheFile: a damaged, truncated, foreign or empty cache file
// is logged, ignored and replaced.
func TestCorruptCacheFile(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	s := fixtureSetup(fx)
	dir := brokertest.AgedCopy(t, fx.StoreDir)
	cdir := t.TempDir()
	wantG, wantF := reference(t, dir, s)
	first := load(t, dir, cdir, s, nil)
	require.True(t, first.Saved)
	good, err := os.ReadFile(first.CacheFile)
	require.NoError(t, err)
	for name, bad := range map[string][]byte{
		"flipped":   faults.FlipByte(good, len(good)/2),
		"truncated": faults.Truncate(good, len(good)-7),
		"header":    faults.Truncate(good, 10),
		"empty":     {},
		"foreign":   []byte("not a cache file at all, but long enough to have a header"),
		"version":   faults.Put(good, len(magic), 0, 0, 0, 99),
		"extended":  append(append([]byte(nil), good...), 0),
		"commands":  otherCommandTypes(t, good),
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(first.CacheFile, bad, 0o600))
			var lg logs
			res := load(t, dir, cdir, s, &lg)
			assert.Equal(t, Miss, res.Outcome)
			assert.Contains(t, lg.String(), "cache: ignoring "+first.CacheFile)
			requireSame(t, res, wantG, wantF, name)
			require.True(t, res.Saved)
			again := load(t, dir, cdir, s, &lg)
			assert.Equal(t, Hit, again.Outcome)
		})
	}
}

// otherCommandTypes is the cache file good as a kahafs that knows one
// command type more would have written it (its checksum fixed).
func otherCommandTypes(t *testing.T, good []byte) []byte {
	payload := good[headerSize : len(good)-trailerSize]
	r := binenc.NewReader(payload)
	_, _, _ = r.String(), r.Bytes(), r.Varint() // store, variant, stat time
	at := headerSize + len(payload) - r.Len()
	require.Equal(t, uint64(codec.NumEntryTypes), r.Uvarint())
	b := faults.Put(good, at, codec.NumEntryTypes+1) // a one-byte varint
	binary.BigEndian.PutUint32(b[len(b)-trailerSize:], crc32.Checksum(b[headerSize:len(b)-trailerSize], castagnoli))
	return b
}

// TestDamageRoundTrip: damage is reported the same on a hit, with the
// path of the reading.
func TestDamageRoundTrip(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	s := fixtureSetup(fx)
	dir := brokertest.AgedCopy(t, fx.StoreDir)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	mid := st.Files[len(st.Files)/2]
	require.NoError(t, faults.EditFile(mid.Path, func(b []byte) []byte { return faults.FlipByte(b, len(b)/2) }))
	brokertest.Age(t, dir)
	cdir := t.TempDir()
	wantG, wantF := reference(t, dir, s)
	require.True(t, load(t, dir, cdir, s, nil).Saved)
	res := load(t, dir, cdir, s, nil)
	require.Equal(t, Hit, res.Outcome, res.Reason)
	require.True(t, res.Graph.Damaged())
	requireSame(t, res, wantG, wantF, "hit")

	// the same store through a symbolic link: the same cache file, the
	// damage named with the link's path
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	wantG, wantF = reference(t, link, s)
	res = load(t, link, cdir, s, nil)
	require.Equal(t, Hit, res.Outcome, res.Reason)
	requireSame(t, res, wantG, wantF, "hit through a link")
	assert.Contains(t, res.Graph.Dump(), link)
}

// TestNeverInsideStore: a cache directory inside the store is refused.
func TestNeverInsideStore(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.AgedCopy(t, fx.StoreDir)
	before := treeState(t, dir)
	var lg logs
	res := load(t, dir, filepath.Join(dir, "cache"), fixtureSetup(fx), &lg)
	assert.Equal(t, Off, res.Outcome)
	assert.Contains(t, lg.String(), "inside the store")
	res = load(t, dir, dir, fixtureSetup(fx), &lg)
	assert.Equal(t, Off, res.Outcome)
	require.Equal(t, before, treeState(t, dir))

	// disabled: nothing read or written
	res = load(t, dir, "", fixtureSetup(fx), nil)
	assert.Equal(t, Off, res.Outcome)
	assert.False(t, res.Saved)
}

// TestVariantsBounded: at most variantsPerStore cache files per store.
func TestVariantsBounded(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.AgedCopy(t, fx.StoreDir)
	cdir := t.TempDir()
	for i := 0; i < 7; i++ {
		require.True(t, load(t, dir, cdir, setup{maxFile: int64(1<<20 + i)}, nil).Saved)
	}
	ents, err := os.ReadDir(cdir)
	require.NoError(t, err)
	assert.Len(t, ents, variantsPerStore)
}

// TestEmptyStore: a store with an index and no data files.
func TestEmptyStore(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "db.data"), nil, 0o644))
	brokertest.Age(t, dir)
	cdir := t.TempDir()
	s := setup{}
	require.True(t, load(t, dir, cdir, s, nil).Saved)
	res := load(t, dir, cdir, s, nil)
	assert.Equal(t, Hit, res.Outcome)
	assert.Empty(t, res.Graph.Files())
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(EnvDir, "/x/y")
	d, err := DefaultDir()
	require.NoError(t, err)
	assert.Equal(t, "/x/y", d)
	t.Setenv(EnvDir, "")
	d, err = DefaultDir()
	if err == nil {
		assert.Equal(t, "kahafs", filepath.Base(d))
	}
}

// TestResumableAt covers the decision to read the last file again from its
// cached end.
func TestResumableAt(t *testing.T) {
	torn := &codec.CorruptionError{Offset: 100, Err: codec.ErrTornTail}
	mk := func(end, size int64, dmg ...*codec.CorruptionError) *cachedFile {
		return &cachedFile{Id: identity{Size: size}, Res: FileResult{Summary: codec.FileSummary{End: end, Damage: dmg}}}
	}
	magicAt := append(append([]byte(nil), codec.BatchMagic...), 1, 2)
	zeros := make([]byte, 16)
	other := []byte{0, 0, 0, 40, 1, 0, 0, 0}
	for _, c := range []struct {
		f         *cachedFile
		cur       []byte
		size      int64
		unchanged bool
		want      bool
	}{
		{mk(100, 100), magicAt, 200, false, true},
		{mk(100, 1000), zeros, 1000, false, true},
		{mk(100, 1000), codec.EOFRecord, 1000, false, true},
		{mk(100, 100), nil, 100, false, true},
		{mk(100, 1000), other, 1000, false, false},
		{mk(100, 1000), other, 1000, true, true},
		{mk(100, 1000, torn), magicAt, 1000, false, true},
		{mk(100, 1000, torn), other, 1000, true, false},
		{mk(100, 1000, torn), zeros, 1000, false, false},
		{mk(998, 1000), magicAt, 2000, false, false},
	} {
		assert.Equal(t, c.want, resumableAt(c.f, c.cur, c.size, c.unchanged), "%+v cur %x unchanged %v", c.f.Res.Summary, c.cur, c.unchanged)
	}
}

// sortedNames is a helper for debugging listings.
func sortedNames(ents []os.DirEntry) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

var _ = bytes.Equal
var _ = sortedNames

// mappedCacheFiles counts the mappings of cache files in cdir this process
// has (Linux: /proc/self/maps).
func mappedCacheFiles(t *testing.T, cdir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		need.Skip(t, "no /proc/self/maps: %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		// a replaced file shows as "… .kcache (deleted)"
		if strings.Contains(line, cdir+"/") && strings.Contains(line, ".kcache") {
			n++
		}
	}
	return n
}

// TestMappedCacheLifetime: a hit maps the cache file; the graph (whose
// finished transactions still point into the mapping) stays whole through
// garbage collections and a newer cache file replacing the old, and the
// mapping goes once the graph is unreachable.
func TestMappedCacheLifetime(t *testing.T) {
	var fx brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "tx" { // finished transactions, kept encoded
			fx = f
		}
	}
	require.NotEmpty(t, fx.Name, "the tx fixture")
	dir := brokertest.AgedCopy(t, fx.StoreDir)
	cdir := filepath.Join(t.TempDir(), "cache")
	s := setup{maxFile: fixtureSetup(fx).maxFile, noIndex: true, keep: -1}
	wantG, wantF := reference(t, dir, s)
	require.Equal(t, Miss, load(t, dir, cdir, s, nil).Outcome)
	require.Zero(t, mappedCacheFiles(t, cdir), "a miss maps nothing")

	hit := load(t, dir, cdir, s, nil)
	require.Equal(t, Hit, hit.Outcome)
	if runtime.GOOS != "linux" {
		t.Skip("cache files are mapped on Linux only")
	}
	require.Equal(t, 1, mappedCacheFiles(t, cdir), "a hit maps the cache file, and keeps it for the graph")
	// a run that saves a new cache file (the old one is replaced)
	brokertest.Age(t, dir)
	require.NoError(t, os.Remove(filepath.Join(cdir, mustOne(t, cdir))))
	require.Equal(t, Miss, load(t, dir, cdir, s, nil).Outcome)
	for range 3 {
		runtime.GC()
	}
	requireSame(t, hit, wantG, wantF, "hit, after collections and the file's replacement")
	require.NotEmpty(t, hit.Graph.Transactions())

	hit = nil
	deadline := time.Now().Add(5 * time.Second)
	for mappedCacheFiles(t, cdir) > 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	assert.Zero(t, mappedCacheFiles(t, cdir), "the mapping is released with the graph")
}

func mustOne(t *testing.T, cdir string) string {
	t.Helper()
	ents, err := os.ReadDir(cdir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	return ents[0].Name()
}

// TestCacheDirPrivate: a cache directory of ours that others can enter is
// made 0700 when a cache file is saved in it; the files are 0600 and hold
// no message: no OpenWire message of the store appears in them.
func TestCacheDirPrivate(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	cdir := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(cdir, 0o755))
	require.NoError(t, os.Chmod(cdir, 0o777))
	var lg logs
	res := load(t, brokertest.AgedCopy(t, fx.StoreDir), cdir, fixtureSetup(fx), &lg)
	require.True(t, res.Saved, lg.String())
	st, err := os.Stat(cdir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	ents, err := os.ReadDir(cdir)
	require.NoError(t, err)
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), e.Name())
	}
	st2, err := codec.OpenStore(fx.StoreDir)
	require.NoError(t, err)
	var messages [][]byte
	for _, fi := range st2.Files {
		_, err := codec.ScanFile(fi, codec.ReadOptions{}, func(_ codec.Record, c *codec.Command) error {
			if c.Type == codec.AddMessageCommand && len(c.Message) > 64 {
				messages = append(messages, append([]byte(nil), c.Message[len(c.Message)-64:]...))
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, messages)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(cdir, e.Name()))
		require.NoError(t, err)
		for _, m := range messages {
			require.False(t, bytes.Contains(b, m), "%s holds a message's bytes", e.Name())
		}
	}
}

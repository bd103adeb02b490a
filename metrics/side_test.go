package metrics

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sideFixtures are every store fixture (testdata/stores, its layouts, and
// the stores and layouts kept by the differential test), as directories
// store.Locate takes.
func sideFixtures(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, fx := range brokertest.Fixtures(t) {
		out[fx.Name] = fx.StoreDir
	}
	for _, fx := range brokertest.LayoutFixtures(t) {
		out["layout/"+fx.Name] = fx.DataDir
	}
	kept := filepath.Join(brokertest.RepoRoot(), "internal", "difftest", "testdata", "kept")
	ents, err := os.ReadDir(kept)
	require.NoError(t, err)
	for _, e := range ents {
		for _, sub := range []string{"workload/store", "compacted/store", "layout-workload/data", "compacted/data"} {
			p := filepath.Join(kept, e.Name(), sub)
			if _, err := os.Stat(p); err == nil {
				out["kept/"+e.Name()+"/"+sub] = p
			}
		}
	}
	return out
}

// agedTree copies the tree at src into a temporary directory, every file
// and directory dated brokertest.Past (old enough for the cache to trust
// the files' identities).
func agedTree(t *testing.T, src string) string {
	t.Helper()
	dir := brokertest.CopyTree(t, src)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, brokertest.Past, brokertest.Past)
	}))
	return dir
}

// render is what `kahafs metrics` writes of the store at dir through Load
// (with the cache in cacheDir, and the compaction's figure or not), and
// how each store was had.
func render(t *testing.T, dir, cacheDir string, given int64, compaction ...bool) (string, []StoreRun) {
	t.Helper()
	l, err := store.Locate(dir)
	require.NoError(t, err)
	var runs []StoreRun
	o := LoadOptions{Analysis: store.Options{MaxFileLength: given}, Compaction: len(compaction) > 0 && compaction[0],
		Done: func(r StoreRun) { runs = append(runs, r) }}
	if cacheDir != "" {
		o.Analysis.Cache = &replaycache.Options{Dir: cacheDir, Logf: t.Logf}
	}
	snap, err := Load(l, o)
	require.NoError(t, err, dir)
	var b bytes.Buffer
	require.NoError(t, snap.Write(&b, Options{Labels: map[string]string{"store": "b-1"}}))
	return b.String(), runs
}

// fresh is the output of the analysis without the cache (Write, as before
// side files; with the compaction's figure, Load without the cache).
func fresh(t *testing.T, dir string, given int64, compaction ...bool) string {
	t.Helper()
	if len(compaction) > 0 && compaction[0] {
		out, _ := render(t, dir, "", given, true)
		return out
	}
	a, err := store.Open(dir, store.Options{MaxFileLength: given})
	require.NoError(t, err, dir)
	var b bytes.Buffer
	require.NoError(t, Write(&b, a, Options{Labels: map[string]string{"store": "b-1"}}))
	return b.String()
}

// TestSideFileSameOutput: on every fixture, a run answered from the side
// file writes the very bytes of a run that analyses the store (and of
// one without the cache), for the length read off the store and a given
// one; every store whose side file was saved is answered from it the
// next time.
func TestSideFileSameOutput(t *testing.T) {
	cached := 0
	for name, src := range sideFixtures(t) {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			dir := agedTree(t, src)
			if _, err := store.Open(dir, store.Options{}); err != nil {
				t.Skipf("not analysed: %v", err)
			}
			for _, given := range []int64{0, 16384} {
				if given > 0 {
					if _, err := store.Open(dir, store.Options{MaxFileLength: given}); err != nil {
						continue
					}
				}
				want := fresh(t, dir, given)
				wantC := fresh(t, dir, given, true)
				cacheDir := t.TempDir()
				first, runs1 := render(t, dir, cacheDir, given)
				assert.Equal(t, want, first, "analysed, given %d", given)
				second, runs2 := render(t, dir, cacheDir, given)
				assert.Equal(t, want, second, "from the side file, given %d", given)
				require.Len(t, runs2, len(runs1))
				for i, r := range runs1 {
					assert.False(t, r.Cached, r.Layout.Rel)
					if r.SideSaved {
						assert.True(t, runs2[i].Cached, "%s: saved, then not used: %s (given %d, %+v)", r.Layout.Rel, runs2[i].SideReason, given, r.MaxFileLength)
						assert.Equal(t, r.MaxFileLength, runs2[i].MaxFileLength)
						cached++
					}
				}
				// the compaction's figure asked for: analysed again (the
				// side file has none), then from the side file, and the
				// side file with it answers a run without it too
				third, runs3 := render(t, dir, cacheDir, given, true)
				assert.Equal(t, wantC, third, "analysed with the compaction, given %d", given)
				fourth, runs4 := render(t, dir, cacheDir, given, true)
				assert.Equal(t, wantC, fourth, "from the side file with the compaction, given %d", given)
				fifth, runs5 := render(t, dir, cacheDir, given)
				assert.Equal(t, want, fifth, "from the side file with the compaction, without it, given %d", given)
				for i, r := range runs1 {
					if r.SideSaved {
						assert.False(t, runs3[i].Cached, r.Layout.Rel)
						assert.True(t, runs4[i].Cached, r.Layout.Rel)
						assert.True(t, runs5[i].Cached, r.Layout.Rel)
					}
				}
			}
		})
	}
	assert.Greater(t, cached, 10, "stores answered from a side file")
}

// TestSideFileStale: a store changed after its side file was written is
// never answered from it, and its metrics are those of the changed store.
func TestSideFileStale(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	later := brokertest.Past.Add(time.Minute)
	changes := map[string]func(t *testing.T, st *codec.Store){
		"append to the last file": func(t *testing.T, st *codec.Store) {
			f, err := os.OpenFile(st.Files[len(st.Files)-1].Path, os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.Write(make([]byte, 4096))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			ageFile(t, st.Files[len(st.Files)-1].Path)
		},
		"truncate a file": func(t *testing.T, st *codec.Store) {
			fi := st.Files[0]
			require.NoError(t, os.Truncate(fi.Path, fi.Size/2))
			ageFile(t, fi.Path)
		},
		"touch a file": func(t *testing.T, st *codec.Store) {
			require.NoError(t, os.Chtimes(st.Files[1].Path, later, later))
		},
		"rewrite a file with the same bytes and times": func(t *testing.T, st *codec.Store) {
			// a new inode, the same length, mtime: a changed identity
			p := st.Files[1].Path
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.WriteFile(p, b, 0o644))
			ageFile(t, p)
		},
		"delete the first file": func(t *testing.T, st *codec.Store) {
			require.NoError(t, os.Remove(st.Files[0].Path))
		},
		"a new data file": func(t *testing.T, st *codec.Store) {
			last := st.Files[len(st.Files)-1]
			p := filepath.Join(st.Dir, codec.DataFileName(last.ID+1))
			require.NoError(t, os.WriteFile(p, nil, 0o644))
			ageFile(t, p)
		},
		"db.data touched": func(t *testing.T, st *codec.Store) {
			require.NoError(t, os.Chtimes(filepath.Join(st.Dir, "db.data"), later, later))
		},
		"db.data changed": func(t *testing.T, st *codec.Store) {
			p := filepath.Join(st.Dir, "db.data")
			require.NoError(t, os.Truncate(p, 0))
			ageFile(t, p)
		},
		"db.data deleted": func(t *testing.T, st *codec.Store) {
			require.NoError(t, os.Remove(filepath.Join(st.Dir, "db.data")))
		},
	}
	for name, change := range changes {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			dir := agedTree(t, fx.StoreDir)
			cacheDir := t.TempDir()
			_, runs := render(t, dir, cacheDir, 0)
			require.True(t, runs[0].SideSaved)
			_, runs = render(t, dir, cacheDir, 0)
			require.True(t, runs[0].Cached)
			st, err := codec.OpenStore(dir)
			require.NoError(t, err)
			change(t, st)
			got, runs := render(t, dir, cacheDir, 0)
			assert.False(t, runs[0].Cached, "answered from a stale side file")
			assert.NotEmpty(t, runs[0].SideReason)
			assert.Equal(t, fresh(t, dir, 0), got)
		})
	}
}

// TestSideFileCacheRewritten: a cache file rewritten after its side file
// (another analysis saved it) makes the side file stale; a corrupt side
// file is ignored; another --max-file-length has its own.
func TestSideFileCacheRewritten(t *testing.T) {
	dir := agedTree(t, brokertest.Named(t, "topics").StoreDir)
	cacheDir := t.TempDir()
	want := fresh(t, dir, 0)
	render(t, dir, cacheDir, 0)
	kc, err := filepath.Glob(filepath.Join(cacheDir, "*.kcache"))
	require.NoError(t, err)
	require.Len(t, kc, 1)
	sides, err := filepath.Glob(filepath.Join(cacheDir, "*"+"."+SideKind+".kside"))
	require.NoError(t, err)
	require.Len(t, sides, 1)

	// the cache file replaced (same bytes, a new inode)
	b, err := os.ReadFile(kc[0])
	require.NoError(t, err)
	require.NoError(t, os.Remove(kc[0]))
	require.NoError(t, os.WriteFile(kc[0], b, 0o600))
	got, runs := render(t, dir, cacheDir, 0)
	assert.False(t, runs[0].Cached)
	assert.Equal(t, "cache file changed", runs[0].SideReason)
	assert.Equal(t, want, got)
	_, runs = render(t, dir, cacheDir, 0)
	assert.True(t, runs[0].Cached, runs[0].SideReason)

	// a flipped byte in the side file
	sb, err := os.ReadFile(sides[0])
	require.NoError(t, err)
	sb[len(sb)/2] ^= 0x40
	require.NoError(t, os.WriteFile(sides[0], sb, 0o600))
	got, runs = render(t, dir, cacheDir, 0)
	assert.False(t, runs[0].Cached)
	assert.Equal(t, want, got)

	// a given length is another cache file, with its own side file
	got, runs = render(t, dir, cacheDir, 1<<20)
	assert.False(t, runs[0].Cached)
	assert.Equal(t, fresh(t, dir, 1<<20), got)
	_, runs = render(t, dir, cacheDir, 1<<20)
	assert.True(t, runs[0].Cached)

	// without the cache: no side file read or written
	l, err := store.Locate(dir)
	require.NoError(t, err)
	_, err = Load(l, LoadOptions{Done: func(r StoreRun) {
		assert.False(t, r.Cached)
		assert.False(t, r.SideSaved)
	}})
	require.NoError(t, err)
}

// TestSideFileRacy: a store whose files were written within the cache's
// racy window gets no side file (its identities are not trusted).
func TestSideFileRacy(t *testing.T) {
	dir := brokertest.CopyStore(t, brokertest.Named(t, "queues").StoreDir)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	now := time.Now()
	brokertest.Age(t, dir)
	require.NoError(t, os.Chtimes(st.Files[0].Path, now, now))
	cacheDir := t.TempDir()
	_, runs := render(t, dir, cacheDir, 0)
	assert.False(t, runs[0].SideSaved)
	_, runs = render(t, dir, cacheDir, 0)
	assert.False(t, runs[0].Cached)
}

func ageFile(t *testing.T, p string) {
	t.Helper()
	require.NoError(t, os.Chtimes(p, brokertest.Past, brokertest.Past))
}

// FuzzDecodeStore: a side file's snapshot that decodes, whatever its
// bytes, round-trips (encoded again, it decodes to the same) and renders
// without panicking; the fixtures' snapshots round-trip byte for byte.
func FuzzDecodeStore(f *testing.F) {
	for _, name := range []string{"queues", "topics", "tx"} {
		a, err := store.Open(brokertest.Named(f, name).StoreDir, store.Options{})
		if err != nil {
			f.Fatal(err)
		}
		snap, err := Take(a)
		if err != nil {
			f.Fatal(err)
		}
		b := snap.stores[0].encode()
		c, err := decodeStore(b)
		if err != nil {
			f.Fatal(err)
		}
		if string(c.encode()) != string(b) {
			f.Fatalf("%s: the snapshot does not round-trip", name)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeStore(b)
		if err != nil {
			return
		}
		// what decodes encodes again to what decodes to the same
		e := c.encode()
		c2, err := decodeStore(e)
		if err != nil {
			t.Fatalf("a decoded snapshot, encoded again, does not decode: %v", err)
		}
		if string(c2.encode()) != string(e) {
			t.Fatal("a decoded snapshot does not round-trip")
		}
		c.dir = "/nonexistent-kahafs-fuzz" // its files' disk space: their lengths
		s := &Snapshot{stores: []*storeSnap{c}}
		var out bytes.Buffer
		_ = s.Write(&out, Options{Labels: map[string]string{"store": "x"}})
	})
}

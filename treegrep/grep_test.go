package treegrep

import (
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treePatterns reach every kind of file: command JSON (ids, types),
// bodies (compressed ones inflated: "Compressed text", the object's
// class), holders and summary.json ("pinned", "free"), stats.json, and
// lines as such (the empty pattern counts them, ^$ the empty ones).
var treePatterns = []pattern{
	{Fixed, "ID:", false},
	{Basic, "KAHA_[A-Z]*_MESSAGE", false},
	{Basic, `^free\|"pinned": true`, false},
	{Basic, "Compressed text", false},
	{Fixed, "ÉTÉ", true},
	{Basic, "kahafs.fixture.Parcel", false},
	{Extended, `"brokerCount": [1-9]|^ack`, false},
	{Basic, "", false},
	{Basic, "^$", false},
	{Fixed, "nosuchtext", false},
}

// store is a fixture the tests search.
type store struct {
	name, dir string
	mfl       int64
	clean     bool // no damage: every command file renders from its record
}

func fixtures(t *testing.T) []store {
	var out []store
	for _, fx := range brokertest.Fixtures(t) {
		out = append(out, store{fx.Name, fx.StoreDir, int64(fx.Expected.MaxFileLength), fx.Name != "crash" && fx.Name != "hostile"})
	}
	for _, fx := range brokertest.LayoutFixtures(t) {
		out = append(out, store{fx.Name, fx.DataDir, int64(fx.Expected.MaxFileLength), true})
	}
	return out
}

func open(t *testing.T, st store) *fsnode.FS {
	t.Helper()
	var opts fsnode.Options
	opts.MaxFileLength = st.mfl
	fsys, err := fsnode.Open(st.dir, opts)
	require.NoError(t, err)
	return fsys
}

// roots are the PATHs searched: the whole tree and its first directory
// with files of commands (by-destination, or a layout's first store).
func roots(t *testing.T, s *fsnode.Snapshot) []string {
	t.Helper()
	es, err := s.ReadDir("")
	require.NoError(t, err)
	out := []string{""}
	for _, e := range es {
		if e.Dir && (e.Name == "by-destination" || e.Name != "by-transaction" && e.Name != "by-message-id" && e.Name != "by-file") {
			return append(out, e.Name)
		}
	}
	return out
}

// grepTree runs Grep (counting every line) and returns what grep -r -l
// and grep -r -c print for it.
func grepTree(t *testing.T, s *fsnode.Snapshot, root string, p pattern, opts Options) (list, counts []string, st Stats) {
	t.Helper()
	opts.Matcher, opts.Count = p.compile(t), true
	st, err := Grep(s, root, opts, func(r Result) error {
		require.NoError(t, r.Err, r.Path())
		counts = append(counts, countLine(r.Path(), r.Count))
		if r.Count > 0 {
			list = append(list, r.Path())
		}
		return nil
	})
	require.NoError(t, err)
	return list, counts, st
}

// searches are the searches a test makes: every pattern on the whole
// tree, a few on a directory of it.
func searches(t *testing.T, s *fsnode.Snapshot) (out []struct {
	root string
	p    pattern
}) {
	for i, root := range roots(t, s) {
		for k, p := range treePatterns {
			if i == 0 || k < 3 {
				out = append(out, struct {
					root string
					p    pattern
				}{root, p})
			}
		}
	}
	return out
}

// TestGrepAgreesWithGrepOnTheTree: Grep names the files grep -r -l (and
// counts the lines grep -r -c counts) in a copy of the tree written to
// disk file by file through ReadDir and ReadFile (kahafs ls and cat), for
// every fixture and layout, the whole tree and a directory of it; its
// paths come in the order of that walk. No FUSE: the second oracle.
func TestGrepAgreesWithGrepOnTheTree(t *testing.T) {
	for _, st := range fixtures(t) {
		t.Run(st.name, func(t *testing.T) {
			s := open(t, st).Snapshot()
			dir := t.TempDir()
			order := copyTree(t, s, "", dir)
			require.NotEmpty(t, order)
			for _, x := range searches(t, s) {
				// Reads of many records (1 KiB chunks with any gap), on
				// three workers.
				list, counts, stats := grepTree(t, s, x.root, x.p, Options{Workers: 3, ChunkSize: 1 << 10, MaxGap: 1 << 20})
				for _, mode := range []struct {
					flag string
					got  []string
				}{{"-l", list}, {"-c", counts}} {
					want := systemGrep(t, dir+"/", append(append(x.p.grepFlags(), "-r", mode.flag, "-e", x.p.expr, "--"), filepath.Join(dir, x.root))...)
					assert.ElementsMatch(t, want, mode.got, "grep -r %s %s %s", mode.flag, x.p, x.root)
					assert.True(t, inOrder(mode.got, order, mode.flag == "-c"), "%s %s: not in tree order", x.p, x.root)
				}
				if st.clean {
					assert.Zero(t, stats.Fallback, "%s: command files rendered one at a time", x.root)
				}
				if x.root == "" {
					assert.NotZero(t, stats.Records, "no record read")
				}
			}
		})
	}
}

// copyTree writes the tree below p to dir through ReadDir and ReadFile
// and returns its files' paths in walk order.
func copyTree(t *testing.T, s *fsnode.Snapshot, p, dir string) []string {
	t.Helper()
	es, err := s.ReadDir(p)
	require.NoError(t, err)
	var order []string
	for _, e := range es {
		q := path.Join(p, e.Name)
		if e.Link != "" {
			// a symbolic link stays one, so that grep -r meets it as it
			// does on the mount (and does not follow it)
			require.NoError(t, os.Symlink(e.Link, filepath.Join(dir, q)))
			continue
		}
		if e.Dir {
			require.NoError(t, os.Mkdir(filepath.Join(dir, q), 0o755))
			order = append(order, copyTree(t, s, q, dir)...)
			continue
		}
		b, err := s.ReadFile(q)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, q), b, 0o644))
		order = append(order, q)
	}
	return order
}

// inOrder: the paths of lines come in the order of order.
func inOrder(lines, order []string, count bool) bool {
	pos := map[string]int{}
	for i, p := range order {
		pos[p] = i
	}
	last := -1
	for _, l := range lines {
		if count {
			l = l[:len(l)-len(countSuffix(l))]
		}
		i, ok := pos[l]
		if !ok || i <= last {
			return false
		}
		last = i
	}
	return true
}

// countSuffix is the ":N" ending a grep -c line.
func countSuffix(l string) string {
	i := len(l)
	for i > 0 && l[i-1] >= '0' && l[i-1] <= '9' {
		i--
	}
	return l[i-1:]
}

// TestGrepAgreesWithMount: Grep prints what grep -r -l and grep -r -c
// print over the mount of the same snapshot, in the same order, for every
// fixture and layout, the whole tree and a directory of it.
func TestGrepAgreesWithMount(t *testing.T) {
	need.FUSE(t, fsnode.CheckFUSE())
	for _, st := range fixtures(t) {
		t.Run(st.name, func(t *testing.T) {
			fsys := open(t, st)
			mnt := filepath.Join(t.TempDir(), "mnt")
			require.NoError(t, os.Mkdir(mnt, 0o755))
			require.NoError(t, fsys.Mount(mnt))
			defer func() { assert.NoError(t, fsys.Unmount()) }()
			s := fsys.Snapshot()
			for _, x := range searches(t, s) {
				list, counts, _ := grepTree(t, s, x.root, x.p, Options{})
				for _, mode := range []struct {
					flag string
					got  []string
				}{{"-l", list}, {"-c", counts}} {
					want := systemGrep(t, mnt+"/", append(append(x.p.grepFlags(), "-r", mode.flag, "-e", x.p.expr, "--"), filepath.Join(mnt, x.root))...)
					assert.Equal(t, want, mode.got, "grep -r %s %s %s", mode.flag, x.p, x.root)
				}
			}
		})
	}
}

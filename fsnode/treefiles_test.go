package fsnode

import (
	"os"
	"path"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWalkFilesAndRecordRenderer: WalkFiles meets the files ReadDir lists,
// in the order of a depth-first walk of the listings, and every command
// file's content rendered by a RecordRenderer from its record's bytes (its
// JSON and body together, and each alone) is what ReadFile serves, on
// every fixture and layout.
func TestWalkFilesAndRecordRenderer(t *testing.T) {
	type fixture struct {
		name, dir string
		mfl       int
	}
	var fxs []fixture
	for _, fx := range brokertest.Fixtures(t) {
		fxs = append(fxs, fixture{fx.Name, fx.StoreDir, fx.Expected.MaxFileLength})
	}
	for _, fx := range brokertest.LayoutFixtures(t) {
		fxs = append(fxs, fixture{fx.Name, fx.DataDir, fx.Expected.MaxFileLength})
	}
	for _, fx := range fxs {
		t.Run(fx.name, func(t *testing.T) {
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.mfl)
			fsys, err := Open(fx.dir, opts)
			require.NoError(t, err)
			s := fsys.Snapshot()
			want := listFiles(t, s, "")
			var got []string
			rendered, commands := 0, 0
			renderers := map[*Snapshot]*RecordRenderer{}
			require.NoError(t, s.WalkFiles("", func(f TreeFile) error {
				require.NoError(t, f.Err)
				got = append(got, f.Path())
				content, err := s.ReadFile(f.Path())
				if err != nil {
					_, cerr := f.Content()
					assert.Error(t, cerr, f.Path())
					return nil
				}
				c, err := f.Content()
				require.NoError(t, err)
				assert.Equal(t, string(content), string(c), f.Path())
				src, loc, body, ok := f.Record()
				if !ok {
					return nil
				}
				commands++
				r := renderers[src]
				if r == nil {
					r = src.NewRecordRenderer()
					renderers[src] = r
				}
				p, ok := src.DataFilePath(loc.File)
				require.True(t, ok, f.Path())
				rec := readAt(t, p, int64(loc.Offset), int(loc.Size))
				if !r.Render(loc, rec, true, body) {
					return nil // damaged: Content it is
				}
				rendered++
				if body {
					assert.Equal(t, string(content), string(r.Body), "%s: body rendered with the JSON", f.Path())
					require.True(t, r.Render(loc, rec, false, true))
					assert.Equal(t, string(content), string(r.Body), "%s: body alone", f.Path())
				} else {
					assert.Equal(t, string(content), string(r.JSON), f.Path())
				}
				fc, err := r.Content(loc, body)
				require.NoError(t, err)
				assert.Equal(t, string(content), string(fc), f.Path())
				return nil
			}))
			assert.Equal(t, want, got)
			assert.NotZero(t, commands)
			assert.Greater(t, rendered, commands/2, "most command files render from their records")

			sub := "by-file"
			if s.layout != nil {
				sub = s.layout.stores[0].name
			}
			var below []string
			require.NoError(t, s.WalkFiles(sub, func(f TreeFile) error {
				below = append(below, f.Path())
				return nil
			}))
			assert.Equal(t, listFiles(t, s, sub), below)
			require.NoError(t, s.WalkFiles("/"+nameSummary, func(f TreeFile) error {
				assert.Equal(t, nameSummary, f.Path())
				return nil
			}))
			assert.Error(t, s.WalkFiles("no-such-dir", func(TreeFile) error { return nil }))
		})
	}
}

// listFiles lists the files below p, depth first, through ReadDir.
func listFiles(t *testing.T, s *Snapshot, p string) []string {
	t.Helper()
	es, err := s.ReadDir(p)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		q := path.Join(p, e.Name)
		if e.Link != "" {
			continue // grep -r does not follow a link met in the walk
		}
		if e.Dir {
			out = append(out, listFiles(t, s, q)...)
		} else {
			out = append(out, q)
		}
	}
	return out
}

func readAt(t *testing.T, p string, off int64, n int) []byte {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, off)
	require.NoError(t, err)
	return b
}

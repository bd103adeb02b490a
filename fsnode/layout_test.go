package fsnode

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/openwire"
	"github.com/kahafs/kahafs/scheduler"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayoutTreeWithoutFUSE mounts each layout fixture (a broker data
// directory with an mKahaDB store and a scheduler store) and walks the
// whole tree through the kernel and through the FUSE-free API: the same
// names, kinds, inode numbers and bytes. Inode numbers are unique across
// stores (each store's commands are numbered its own way), and every
// store's subtree is, name for name and byte for byte, the tree of that
// store read alone (README and summary.json aside: they say when).
func TestLayoutTreeWithoutFUSE(t *testing.T) {
	for _, fx := range brokertest.LayoutFixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, mnt := mountStore(t, fx.DataDir, opts)
			s := fsys.Snapshot()
			dirs, files := compareTree(t, mnt, s, "")
			t.Logf("%d directories, %d files agree", dirs, files)

			l, err := store.Locate(fx.DataDir)
			require.NoError(t, err)
			top, err := s.ReadDir("")
			require.NoError(t, err)
			var names []string
			for _, e := range top {
				names = append(names, e.Name)
			}
			require.Equal(t, "README summary.json pinned free metrics by-transaction by-message-id plan plan.json", strings.Join(names[:9], " "))
			require.Len(t, names, 9+len(l.Children))

			// Which store each inode number belongs to.
			owner := map[uint64]string{}
			for i, c := range l.Children {
				name := names[9+i]
				assert.Equal(t, EscapeName(c.Title()), name)
				if !c.Analysable() {
					// the job scheduler's store: its holders, as holders
					// of it alone says them
					require.Equal(t, store.KindScheduler, c.Kind)
					ents, err := s.ReadDir(name)
					require.NoError(t, err)
					require.Len(t, ents, 3)
					r, err := store.AnalyseScheduler(c, opts.Options)
					require.NoError(t, err)
					jobs, err := s.ReadDir(path.Join(name, nameJobs))
					require.NoError(t, err)
					require.Len(t, jobs, len(r.Model.Jobs()))
					for k, j := range r.Model.Jobs() {
						want, err := scheduler.JobJSON(r.Store, j, openwire.JSONOptions{})
						require.NoError(t, err)
						b, err := s.ReadFile(path.Join(name, nameJobs, jobs[k].Name))
						require.NoError(t, err)
						assert.Equal(t, string(want)+"\n", string(b), jobs[k].Name)
					}
					b, err := s.ReadFile(path.Join(name, nameHolders))
					require.NoError(t, err)
					assert.Equal(t, strings.Join(append(r.Header(), r.Table()...), "\n")+"\n", string(b))
					b, err = s.ReadFile(path.Join(name, nameHoldersJSON))
					require.NoError(t, err)
					assert.Contains(t, string(b), `"kind":"scheduler"`)
					continue
				}
				alone, err := Open(c.Dir(), opts)
				require.NoError(t, err)
				n := compareStoreTree(t, alone.Snapshot(), s, name, "", owner)
				t.Logf("%s: %d entries alike", name, n)
			}
		})
	}
}

// compareStoreTree compares the directory p of a store read alone with
// the same directory below prefix in the layout's tree, and everything
// below it; it records which store each inode number is of and fails
// when one is of two.
func compareStoreTree(t *testing.T, alone, layout *Snapshot, prefix, p string, owner map[uint64]string) int {
	t.Helper()
	want, err := alone.ReadDir(p)
	require.NoError(t, err)
	got, err := layout.ReadDir(path.Join(prefix, p))
	require.NoError(t, err)
	require.Equal(t, len(want), len(got), p)
	n := 0
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.Name, g.Name, p)
		require.Equal(t, w.Dir, g.Dir, p)
		require.Equal(t, w.Link, g.Link, p)
		q := path.Join(p, w.Name)
		if o, ok := owner[g.Ino]; ok && o != prefix {
			t.Fatalf("inode %d of %s/%s is also one of %s", g.Ino, prefix, q, o)
		}
		owner[g.Ino] = prefix
		n++
		if w.Dir {
			if p == "" && w.Name == nameByMessageID {
				continue
			}
			n += compareStoreTree(t, alone, layout, prefix, q, owner)
			continue
		}
		if p == "" && (w.Name == nameReadme || w.Name == nameSummary) || w.Link != "" {
			continue
		}
		wb, err := alone.ReadFile(q)
		require.NoError(t, err)
		gb, err := layout.ReadFile(path.Join(prefix, q))
		require.NoError(t, err)
		require.Equal(t, string(wb), string(gb), q)
	}
	return n
}

// TestLayoutTop: the top of a layout's tree: pinned and free are every
// store's, relative to the layout's directory, and are what the broker
// kept and deleted (layout.json); summary.json agrees; by-message-id/
// finds a message in whichever store holds it.
func TestLayoutTop(t *testing.T) {
	for _, fx := range brokertest.LayoutFixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, err := Open(fx.DataDir, opts)
			require.NoError(t, err)
			s := fsys.Snapshot()
			var wantFree, wantPinned []string
			for rel, st := range fx.Expected.Inspect.Stores {
				// every store's, the job scheduler's too (its own model)
				for _, id := range st.FilesBefore {
					name := path.Join(rel, "db-"+itoa(int(id))+".log")
					if contains(st.Deleted, id) {
						wantFree = append(wantFree, name)
					} else {
						wantPinned = append(wantPinned, name)
					}
				}
			}
			require.NotEmpty(t, wantFree)
			for name, want := range map[string][]string{namePinned: wantPinned, nameFree: wantFree} {
				b, err := s.ReadFile(name)
				require.NoError(t, err)
				assert.ElementsMatch(t, want, strings.Fields(string(b)), name)
			}
			b, err := s.ReadFile(nameSummary)
			require.NoError(t, err)
			var sum struct {
				Pinned []string `json:"pinned"`
				Free   []string `json:"free"`
				Stores []struct {
					Name        string   `json:"name"`
					Dir         string   `json:"dir"`
					Tree        string   `json:"tree"`
					NotAnalysed string   `json:"notAnalysed"`
					Free        []string `json:"free"`
				} `json:"stores"`
			}
			require.NoError(t, json.Unmarshal(b, &sum))
			assert.ElementsMatch(t, wantPinned, sum.Pinned)
			assert.ElementsMatch(t, wantFree, sum.Free)
			for _, st := range sum.Stores {
				if st.Name == "scheduler" {
					assert.Empty(t, st.NotAnalysed)
					continue
				}
				_, err := s.ReadDir(st.Tree)
				assert.NoError(t, err, st.Tree)
				assert.Equal(t, filepath.Base(st.Dir), st.Name)
			}

			// Every pending message of every store is found from the top.
			found := 0
			for _, ls := range s.layout.stores {
				if ls.snap == nil {
					continue
				}
				for _, d := range ls.snap.graph.Destinations() {
					for i := range d.Messages {
						id := d.Messages[i].ID()
						paths, err := s.FindMessage(id, FindOptions{})
						require.NoError(t, err, id)
						for _, p := range paths {
							_, err := s.Stat(p)
							require.NoError(t, err, p)
						}
						assert.True(t, strings.HasPrefix(paths[0], ls.name+"/"), "%s: %v", id, paths)
						mine, err := ls.snap.FindMessage(id, FindOptions{})
						require.NoError(t, err)
						assert.Subset(t, paths, prefixed(ls.name, mine))
						dir := path.Join(nameByMessageID, EscapeName(id))
						listed, err := s.ReadFile(path.Join(dir, nameMessagePaths))
						require.NoError(t, err)
						assert.Equal(t, strings.Join(paths, "\n")+"\n", string(listed))
						want, err := ls.snap.ReadFile(path.Join(dir, nameMessageBody))
						require.NoError(t, err)
						got, err := s.ReadFile(path.Join(dir, nameMessageBody))
						require.NoError(t, err)
						assert.Equal(t, want, got)
						found++
					}
				}
			}
			assert.Greater(t, found, 10)
			_, err = s.FindMessage("ID:no-such-message:1:1:1:1", FindOptions{})
			assert.ErrorIs(t, err, ErrNoMessage)
			_, err = s.Stat(path.Join(nameByMessageID, "ID:no-such-message:1:1:1:1"))
			assert.ErrorIs(t, err, syscall.ENOENT)
		})
	}
}

func prefixed(prefix string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = prefix + "/" + p
	}
	return out
}

func contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestLayoutRefresh: a store of a layout that changes is read again on
// refresh.
func TestLayoutRefresh(t *testing.T) {
	fx := brokertest.LayoutFixtures(t)[0]
	dir := brokertest.CopyTree(t, fx.DataDir)
	opts := quietOpts(t)
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	fsys, err := Open(dir, opts)
	require.NoError(t, err)
	changed, err := fsys.Refresh(false)
	require.NoError(t, err)
	assert.False(t, changed)
	victim := filepath.Join(dir, "mKahaDB", "queue#3a#2f#2fORDERS.#3e", "db-1.log")
	require.NoError(t, os.Remove(victim)) // the broker's cleanup
	changed, err = fsys.Refresh(false)
	require.NoError(t, err)
	assert.True(t, changed)
	b, err := fsys.Snapshot().ReadFile(nameFree)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "mKahaDB/queue#3a#2f#2fORDERS.#3e/db-1.log")
	assert.Contains(t, string(b), "mKahaDB/queue#3a#2f#2fORDERS.#3e/db-2.log")
}

// TestLayoutTransactions: by-transaction/ at the top of an mKahaDB lists
// the transactions that span stores: the XA transaction the fixture left
// prepared (the one the real broker recovers) in every store it touches,
// prepared in each; the local transaction across stores that the txStore
// recorded as completed; each store's path to it exists.
func TestLayoutTransactions(t *testing.T) {
	for _, fx := range brokertest.LayoutFixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, err := Open(fx.DataDir, opts)
			require.NoError(t, err)
			s := fsys.Snapshot()
			ents, err := s.ReadDir(nameByTransaction)
			require.NoError(t, err)
			require.Len(t, fx.Expected.Inspect.Prepared, 1)
			prepared := fx.Expected.Inspect.Prepared[0]
			states := map[string]string{}
			for _, e := range ents {
				b, err := s.ReadFile(path.Join(nameByTransaction, e.Name, nameInfo))
				require.NoError(t, err)
				var info struct {
					ID      string `json:"id"`
					State   string `json:"state"`
					TxStore string `json:"txStore"`
					Stores  []struct {
						State string `json:"state"`
						Path  string `json:"path"`
					} `json:"stores"`
				}
				require.NoError(t, json.Unmarshal(b, &info))
				assert.Equal(t, EscapeName(info.ID), e.Name)
				st, err := s.ReadFile(path.Join(nameByTransaction, e.Name, nameState))
				require.NoError(t, err)
				assert.Equal(t, info.State+"\n", string(st))
				assert.True(t, len(info.Stores) >= 2 || info.TxStore != "", info.ID)
				for _, x := range info.Stores {
					got, err := s.ReadFile(path.Join(x.Path, nameState))
					require.NoError(t, err, x.Path)
					assert.Equal(t, x.State+"\n", string(got))
				}
				states[info.ID] = info.State + "/" + info.TxStore
				if info.ID == prepared {
					assert.GreaterOrEqual(t, len(info.Stores), 2)
				}
			}
			assert.Equal(t, "prepared/", states[prepared])
			completed := 0
			for id, st := range states {
				if strings.HasPrefix(id, "XID:[61616,") {
					assert.Equal(t, "committed/completed", st, id)
					completed++
				}
			}
			assert.Equal(t, 1, completed, "the local transaction across stores")
		})
	}
}

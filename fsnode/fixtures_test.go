package fsnode

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/deliver"
	holdersdoc "github.com/kahafs/kahafs/holders"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replay builds the replay graph of a store the way `kahafs holders` does,
// independently of the mount.
func replay(t testing.TB, dir string, maxFileLength int64) *refgraph.Graph {
	t.Helper()
	l, err := store.Locate(dir)
	require.NoError(t, err)
	ro := store.ReplayOptions(l, storeOptions(dir, &mountState{logger: quietOpts(t).Logger}, Options{Options: store.Options{MaxFileLength: maxFileLength}}))
	g, err := refgraph.Load(l.Journal, ro, codec.ReadOptions{})
	require.NoError(t, err)
	return g
}

// pendingIDs reads the message ids of a pending/ directory, in listing
// order, checking the names carry positions 1, 2, ... and that each
// message's .json has its .body.
func pendingIDs(t testing.TB, dir string) []string {
	t.Helper()
	ids := []string{}
	all := names(t, dir)
	bodies := map[string]bool{}
	for _, n := range all {
		if strings.HasSuffix(n, suffixBody) {
			bodies[strings.TrimSuffix(n, suffixBody)] = true
		}
	}
	for _, n := range all {
		if !strings.HasSuffix(n, suffixJSON) {
			continue
		}
		var m struct {
			ID string `json:"messageId"`
		}
		readJSON(t, filepath.Join(dir, n), &m)
		assert.Equal(t, pendingName(len(ids), m.ID, false), n)
		assert.True(t, bodies[strings.TrimSuffix(n, suffixJSON)], "%s has no .body", n)
		ids = append(ids, m.ID)
	}
	assert.Len(t, bodies, len(ids), "one .body per message")
	return ids
}

// TestFixtures mounts every real-broker fixture and checks the tree
// against what the broker itself recovered (expected.json) and against
// the replay graph.
func TestFixtures(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			before := storeState(t, fx.StoreDir)
			opts := quietOpts(t)
			opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
			fsys, mnt := mountStore(t, fx.StoreDir, opts)
			g := replay(t, fx.StoreDir, int64(fx.Expected.MaxFileLength))

			// pinned and free: one db-N.log a line, as the replay says.
			var pinned, free []string
			for _, f := range g.Files() {
				if f.Pinned {
					pinned = append(pinned, f.Name)
				} else {
					free = append(free, f.Name)
				}
			}
			assert.Equal(t, lines(pinned), readString(t, filepath.Join(mnt, "pinned")))
			assert.Equal(t, lines(free), readString(t, filepath.Join(mnt, "free")))
			gcNames := []string{}
			for _, id := range g.GCCandidates() {
				gcNames = append(gcNames, codec.DataFileName(id))
			}
			assert.Equal(t, lines(gcNames), readString(t, filepath.Join(mnt, "free")), "free = gcCandidates")

			// by-file: a directory per data file, holders agree, one JSON
			// file per command.
			st, err := codec.OpenStore(fx.StoreDir)
			require.NoError(t, err)
			jsonFiles := 0
			for _, fi := range st.Files {
				fdir := filepath.Join(mnt, "by-file", fi.Name)
				holders := strings.Split(strings.TrimSuffix(readString(t, filepath.Join(fdir, "holders")), "\n"), "\n")
				gf, ok := g.File(fi.ID)
				require.True(t, ok, fi.Name)
				if gf.Pinned {
					assert.Equal(t, "pinned", holders[0], fi.Name)
					assert.NotEmpty(t, gf.Reasons, fi.Name)
				} else {
					assert.True(t, strings.HasPrefix(holders[0], "free"), "%s: %q", fi.Name, holders[0])
				}
				chain := 0
				if len(gf.ChainStart) > 0 {
					chain = 1 // the chain-start line
					assert.True(t, strings.HasPrefix(holders[len(holders)-1], "chain-start: "), "%s: %q", fi.Name, holders[len(holders)-1])
				}
				assert.Len(t, holders, 1+len(gf.Reasons)+len(gf.Notes)+chain, fi.Name)
				for i, r := range gf.Reasons {
					assert.True(t, strings.HasPrefix(holders[1+i], string(r.Kind)+": "), "%s: %q", fi.Name, holders[1+i])
				}
				var hj holdersdoc.File
				readJSON(t, filepath.Join(fdir, "holders.json"), &hj)
				assert.Equal(t, gf.Pinned, hj.Pinned)
				assert.Equal(t, len(gf.Reasons), len(hj.Reasons))
				for _, n := range names(t, fdir) {
					if strings.HasSuffix(n, ".json") && n[0] >= '0' && n[0] <= '9' {
						jsonFiles++
					}
				}
			}
			assert.Equal(t, len(dumpLines(t, fx.StoreDir)), jsonFiles, "one JSON file per command")
			if fx.Expected.Counts != nil {
				total := 0
				for _, n := range fx.Expected.Counts {
					total += n
				}
				assert.Equal(t, total, jsonFiles, "the broker's own record count")
			}

			in := fx.Expected.Inspect
			require.NotNil(t, in, "expected.json has the broker's inspection")
			// Queues: exactly the broker's, each with the broker's pending
			// messages in order.
			// The broker lists a queue under brokertest.ListedName of its
			// journal name and finds nothing under a name it changed.
			listed := map[string]string{} // listed name -> journal name
			for _, n := range names(t, filepath.Join(mnt, "by-destination", "queue")) {
				var st struct {
					Name string `json:"name"`
				}
				readJSON(t, filepath.Join(mnt, "by-destination", "queue", n, "stats.json"), &st)
				assert.Equal(t, EscapeName(st.Name), n)
				l := brokertest.ListedName(st.Name)
				if prev, ok := listed[l]; !ok || prev != l {
					listed[l] = st.Name
				}
			}
			var wantQueues, gotQueues []string
			for q, ids := range in.Queues {
				wantQueues = append(wantQueues, q)
				if listed[q] != q {
					assert.Empty(t, ids, "queue %s: the broker finds nothing under a name it changed (journal: %q)", q, listed[q])
					continue
				}
				qdir := filepath.Join(mnt, "by-destination", "queue", EscapeName(q))
				got := pendingIDs(t, filepath.Join(qdir, "pending"))
				if brokertest.IndexOnlyOrder(fx.Name, q) {
					assert.ElementsMatch(t, nonNil(ids), got, "queue %s", q)
				} else {
					// Inspect gives the store's order; a prioritized queue
					// is dispatched by priority, page by page
					assert.Equal(t, dispatched(t, qdir, nonNil(ids)), got, "queue %s", q)
				}
				var st struct {
					BrokerCount int `json:"brokerCount"`
					Deliverable int `json:"deliverable"`
					InDoubt     int `json:"inDoubt"`
				}
				readJSON(t, filepath.Join(qdir, "stats.json"), &st)
				assert.Equal(t, in.QueueCounts[q], st.BrokerCount, "queue %s: the count the broker reports", q)
				assert.Equal(t, len(ids), st.Deliverable, "queue %s", q)
				// in-doubt/: what the broker's prepared transactions acknowledge
				var doubt []string
				for _, p := range in.Prepared {
					for i, id := range p.Acks {
						if p.AckDestinations[i] == "queue://"+q {
							doubt = append(doubt, id)
						}
					}
				}
				assert.ElementsMatch(t, doubt, pendingIDs(t, filepath.Join(qdir, "in-doubt")), "queue %s: messages acked in prepared transactions", q)
				assert.Equal(t, len(doubt), st.InDoubt, "queue %s", q)
			}
			for l := range listed {
				gotQueues = append(gotQueues, l)
			}
			sort.Strings(wantQueues)
			sort.Strings(gotQueues)
			assert.Equal(t, nonNil(wantQueues), nonNil(gotQueues), "queues")
			// Durable subscriptions.
			for key, sub := range in.Subscriptions {
				dest, subKey, ok := strings.Cut(key, "|")
				require.True(t, ok, key)
				topic := strings.TrimPrefix(dest, "topic://")
				sdir := filepath.Join(mnt, "by-destination", "topic", EscapeName(topic), "subscriptions", EscapeName(subKey))
				got := pendingIDs(t, filepath.Join(sdir, "pending"))
				// Inspect gives the store's candidates; the broker delivers
				// those the selector matches (package deliver)
				assert.Equal(t, selectorFiltered(t, fx, key, nonNil(sub.Pending)), got, "subscription %s", key)
				var info struct {
					ClientID    string `json:"clientId"`
					Name        string `json:"subscriptionName"`
					BrokerCount int    `json:"brokerCount"`
					Deliverable int    `json:"deliverable"`
				}
				readJSON(t, filepath.Join(sdir, "info.json"), &info)
				assert.Equal(t, sub.ClientID, info.ClientID)
				assert.Equal(t, sub.SubscriptionName, info.Name)
				assert.Equal(t, sub.Count, info.BrokerCount, "subscription %s: the count the broker reports", key)
				assert.Equal(t, len(got), info.Deliverable, "subscription %s", key)
			}
			// Prepared transactions show "prepared".
			for _, p := range in.Prepared {
				assert.Equal(t, "prepared\n", readString(t, filepath.Join(mnt, "by-transaction", EscapeName(p.XID), "state")), p.XID)
			}
			prepared := 0
			for _, n := range names(t, filepath.Join(mnt, "by-transaction")) {
				if readString(t, filepath.Join(mnt, "by-transaction", n, "state")) == "prepared\n" {
					prepared++
				}
			}
			assert.Equal(t, len(in.Prepared), prepared, "no other transaction is prepared")

			// 8 readers at once see the same tree.
			var wg sync.WaitGroup
			res := make([]map[string]string, 8)
			for r := range res {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					res[r] = walkTree(t, mnt)
				}(r)
			}
			wg.Wait()
			for r := 1; r < len(res); r++ {
				assert.Equal(t, res[0], res[r], "reader %d", r)
			}
			assert.Equal(t, fsys.Snapshot().Commands(), int64(jsonFiles))
			// Nothing under the store is open for writing, and after a
			// re-read and another full walk every file is as it was
			// (content, size, mode, mtime; no file added or removed).
			assert.Positive(t, storeFDs(t, fx.StoreDir), "the walk read the data files")
			_, err = fsys.Refresh(true)
			require.NoError(t, err)
			assert.Len(t, walkTree(t, mnt), len(res[0]), "the same files after a re-read")
			storeFDs(t, fx.StoreDir)
			assert.Equal(t, before, storeState(t, fx.StoreDir), "the store is never written")
		})
	}
}

func readString(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err, p)
	return string(b)
}

func lines(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return strings.Join(ss, "\n") + "\n"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// dispatched is the order a broker dispatches the messages ids (store
// order) of the queue mounted at qdir in: refgraph.DispatchOrder when they
// were stored with prioritySupported (read from their files), else as is.
func dispatched(t *testing.T, qdir string, ids []string) []string {
	t.Helper()
	byID := map[string]struct {
		Priority          int32 `json:"priority"`
		PrioritySupported bool  `json:"prioritySupported"`
	}{}
	for _, dir := range []string{"pending", "in-doubt"} {
		ents, err := os.ReadDir(filepath.Join(qdir, dir))
		require.NoError(t, err)
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			var m struct {
				ID                string `json:"messageId"`
				Priority          int32  `json:"priority"`
				PrioritySupported bool   `json:"prioritySupported"`
			}
			readJSON(t, filepath.Join(qdir, dir, e.Name()), &m)
			byID[m.ID] = struct {
				Priority          int32 `json:"priority"`
				PrioritySupported bool  `json:"prioritySupported"`
			}{m.Priority, m.PrioritySupported}
		}
	}
	prios, prioritized := make([]int32, len(ids)), false
	for i, id := range ids {
		prios[i] = byID[id].Priority
		prioritized = prioritized || byID[id].PrioritySupported
	}
	if !prioritized {
		return ids
	}
	out := make([]string, 0, len(ids))
	for _, i := range refgraph.DispatchOrder(prios, refgraph.MaxPageSize, refgraph.DefaultQueuePrefetch, nil) {
		out = append(out, ids[i])
	}
	return out
}

// selectorFiltered is the broker's candidates ids for the subscription key
// ("topic://NAME|client:sub") of fixture fx, less those its selector does
// not match (package deliver on the fixture's own replay).
func selectorFiltered(t *testing.T, fx brokertest.Fixture, key string, ids []string) []string {
	t.Helper()
	st, err := codec.OpenStore(fx.StoreDir)
	require.NoError(t, err)
	opts := refgraph.StoreOptions(st, true, nil)
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	g, err := refgraph.Load(st, opts, codec.ReadOptions{})
	require.NoError(t, err)
	for _, s := range g.Subscriptions() {
		if s.Destination.String()+"|"+s.ClientID+":"+s.SubscriptionName != key || !s.HasSelector {
			continue
		}
		_, skipped, err := deliver.Subscription(s, deliver.StoreReader(st), kahaindex.StoreOpenWireVersion(st.Dir))
		require.NoError(t, err)
		drop := map[string]bool{}
		for _, k := range skipped {
			drop[k.Message.ID()] = true
		}
		out := []string{}
		for _, id := range ids {
			if !drop[id] {
				out = append(out, id)
			}
		}
		return out
	}
	return ids
}

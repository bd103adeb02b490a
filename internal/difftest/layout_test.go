package difftest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// DefaultLayoutSeeds are the layout seeds TestLayoutDifferential runs of
// each kind without KAHAFS_DIFF_MKAHADB_SEEDS / KAHAFS_DIFF_SCHEDULER_SEEDS:
// a few seconds each (CI).
const DefaultLayoutSeeds = "1-3"

// DefaultLayoutOps is a layout workload's length without KAHAFS_DIFF_LAYOUT_OPS.
const DefaultLayoutOps = 30

// TestLayoutDifferential runs seeded workloads on the multi-store layouts
// (an mKahaDB with cross-store transactions; a KahaDB store with a job
// scheduler store) on a real broker and compares kahafs with it store by
// store: each store's first cleanup (the scheduler's by its own model),
// what each queue and durable subscription holds, in order, the prepared
// transactions across stores, the scheduled jobs; and the broker's view of
// kahafs's compaction of the layout with its view of the original. Knobs:
// KAHAFS_DIFF_MKAHADB_SEEDS, KAHAFS_DIFF_SCHEDULER_SEEDS ("" runs the
// default, "none" none), KAHAFS_DIFF_LAYOUT_OPS; failing seeds are kept
// under KeepRoot (KAHAFS_DIFF_KEEP: every disagreeing one; replay with
// KAHAFS_DIFF_REPLAY and -run TestLayoutReplay).
func TestLayoutDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the real broker")
	}
	brokertest.Require(t)
	ops := DefaultLayoutOps
	if s := os.Getenv("KAHAFS_DIFF_LAYOUT_OPS"); s != "" {
		var err error
		ops, err = strconv.Atoi(s)
		require.NoError(t, err, "KAHAFS_DIFF_LAYOUT_OPS")
	}
	type job struct {
		kind string
		seed int64
	}
	var perKind [2][]job
	for i, k := range []struct{ kind, env string }{{LayoutMKahaDB, "KAHAFS_DIFF_MKAHADB_SEEDS"}, {LayoutScheduler, "KAHAFS_DIFF_SCHEDULER_SEEDS"}} {
		spec := os.Getenv(k.env)
		if spec == "none" {
			continue
		}
		if spec == "" {
			spec = DefaultLayoutSeeds
		}
		seeds, err := ParseSeeds(spec)
		require.NoError(t, err, k.env)
		for _, s := range seeds {
			perKind[i] = append(perKind[i], job{k.kind, s})
		}
	}
	var jobs []job // the kinds taken in turn
	for i := 0; i < max(len(perKind[0]), len(perKind[1])); i++ {
		for _, pk := range perKind {
			if i < len(pk) {
				jobs = append(jobs, pk[i])
			}
		}
	}
	cfg := LayoutConfig{Repo: brokertest.RepoRoot(), Work: t.TempDir(), Ops: ops}
	var mu sync.Mutex
	count := map[string][2]int{} // kind -> agreed, failed
	var failed []string
	sem := make(chan struct{}, 2)
	t.Run("seeds", func(t *testing.T) {
		for _, j := range jobs {
			t.Run(fmt.Sprintf("%s-%d", j.kind, j.seed), func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				r := RunLayoutSeed(context.Background(), cfg, j.kind, j.seed)
				ok := judgeLayout(t, r)
				mu.Lock()
				c := count[j.kind]
				if ok {
					c[0]++
				} else {
					c[1]++
					failed = append(failed, fmt.Sprintf("%s-%d", j.kind, j.seed))
				}
				count[j.kind] = c
				mu.Unlock()
				_ = os.RemoveAll(r.Dir) // kept when it matters (judgeLayout)
			})
		}
	})
	sort.Strings(failed)
	var lines []string
	for _, k := range sortedKeys(count) {
		lines = append(lines, fmt.Sprintf("%s: %d seeds agree, %d fail", k, count[k][0], count[k][1]))
	}
	t.Logf("layout seeds (%d operations): %s; failing: %s", ops, strings.Join(lines, "; "), strings.Join(failed, " "))
}

// judgeLayout prints the seed's report, keeps it when it fails (or with
// KAHAFS_DIFF_KEEP set and any finding; KAHAFS_DIFF_KEEP_ALL=1: always)
// and fails the test for a disagreement or a seed that could not be
// compared. It reports whether the seed agreed.
func judgeLayout(t reporter, r *LayoutResult) bool {
	rep := LayoutReport(r)
	t.Logf("\n%s", rep)
	failing := r.Err != nil || r.Unexplained() > 0
	if failing || os.Getenv("KAHAFS_DIFF_KEEP_ALL") == "1" || len(r.Findings) > 0 && os.Getenv("KAHAFS_DIFF_KEEP") != "" {
		dir, err := KeepLayout(KeepRoot(), r, rep)
		if err != nil {
			t.Errorf("layout seed %d: %v", r.Seed, err)
		}
		t.Logf("layout %s seed %d: KEPT in %s (replay: KAHAFS_DIFF_REPLAY=%s go test ./internal/difftest -run TestLayoutReplay -v)", r.Kind, r.Seed, dir, dir)
	}
	switch {
	case r.Err != nil:
		t.Errorf("layout %s seed %d could not be compared: %v", r.Kind, r.Seed, r.Err)
	case r.Unexplained() > 0:
		t.Errorf("layout %s seed %d: kahafs disagrees with the broker (%d findings, report above)", r.Kind, r.Seed, r.Unexplained())
	}
	return !failing
}

// TestLayoutReplay replays the layout seed kept in $KAHAFS_DIFF_REPLAY.
func TestLayoutReplay(t *testing.T) {
	dir := os.Getenv("KAHAFS_DIFF_REPLAY")
	if dir == "" || !IsKeptLayout(dir) {
		t.Skip("KAHAFS_DIFF_REPLAY is not a kept layout seed")
	}
	judgeLayout(t, ReplayLayout(context.Background(), dir, t.TempDir(), nil))
}

// layoutFixtureDirs are the kept layout seeds under testdata/kept.
func layoutFixtureDirs(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join("testdata", "kept", "*", keptLayoutWorkload))
	require.NoError(t, err)
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Dir(d))
	}
	return out
}

// TestLayoutReplayFixtures replays every kept layout seed under
// testdata/kept with its broker answers (no broker): kahafs must give the
// findings its fixture.json expects, the compaction round trip included;
// a replay writes nothing into the kept seed.
func TestLayoutReplayFixtures(t *testing.T) {
	dirs := layoutFixtureDirs(t)
	require.NotEmpty(t, dirs, "testdata/kept holds kept layout seeds of both kinds")
	kinds := map[string]bool{}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var fx Fixture
			require.NoError(t, readJSON(filepath.Join(dir, "fixture.json"), &fx))
			require.NotEmpty(t, fx.Found)
			require.NotEmpty(t, fx.Why)
			before := treeDigest(t, dir)
			r := ReplayLayout(context.Background(), dir, t.TempDir(), nil)
			require.NoError(t, r.Err)
			kinds[r.Kind] = true
			if fx.Expect == nil {
				fx.Expect = []ExpectedFinding{}
			}
			assert.Equal(t, fx.Expect, expected(r.Findings), "replay of %s:\n%s", dir, LayoutReport(r))
			for _, n := range r.Notes {
				assert.NotContains(t, n, "REPLAY:", "the whole comparison is replayed, the compaction's too")
			}
			assert.Equal(t, before, treeDigest(t, dir), "a replay does not write to the kept seed")
		})
	}
	assert.True(t, kinds[LayoutMKahaDB] && kinds[LayoutScheduler], "fixtures of both layout kinds: %v", kinds)
}

// TestLayoutKeepAndReplay breaks the comparison on purpose (kahafs's
// cleanup of one store deletes one file more) on kept layout seeds: the
// seed fails, is kept whole, and the replay of the kept seed finds the
// same; a store with no file to add is left alone.
func TestLayoutKeepAndReplay(t *testing.T) {
	dirs := layoutFixtureDirs(t)
	require.NotEmpty(t, dirs)
	for _, src := range dirs {
		t.Run(filepath.Base(src), func(t *testing.T) {
			var target string
			var extra int32
			fault := func(rel string, del []int32) []int32 {
				if target == "" {
					target = rel
				}
				if rel != target {
					return del
				}
				extra = 1_000_000
				return append(append([]int32{}, del...), extra)
			}
			broken := ReplayLayout(context.Background(), src, t.TempDir(), fault)
			require.NoError(t, broken.Err)
			var injected *Finding
			for i, f := range broken.Findings {
				if f.Kind == KindLayoutCleanup && f.Where == target {
					injected = &broken.Findings[i]
				}
			}
			require.NotNil(t, injected, "the broken cleanup of %s is found", target)
			assert.Contains(t, injected.Kahafs, strconv.Itoa(int(extra)))
			root := t.TempDir()
			t.Setenv("KAHAFS_DIFF_KEEP", root)
			rec := &recorder{}
			assert.False(t, judgeLayout(rec, broken))
			require.NotEmpty(t, rec.errs, "the seed fails")
			kept, err := filepath.Glob(filepath.Join(root, "layout-*"))
			require.NoError(t, err)
			require.Len(t, kept, 1)
			assert.Contains(t, strings.Join(rec.logs, "\n"), "KEPT in "+kept[0])
			for _, f := range []string{keptLayoutWorkload + "/workload.json", keptLayoutWorkload + "/data", keptOracle + "/view.json",
				keptCompacted + "/data", keptLayoutAnswer, keptFindings, keptReport} {
				assert.True(t, exists(filepath.Join(kept[0], f)), "kept %s", f)
			}
			target = ""
			again := ReplayLayout(context.Background(), kept[0], t.TempDir(), fault)
			require.NoError(t, again.Err)
			assert.Equal(t, expected(broken.Findings), expected(again.Findings), "the replay of the kept seed finds the same")
		})
	}
}

// TestCompareLayoutFinds: each part of a layout comparison finds a
// difference planted in a copy of a kept broker view (no broker): a
// store's cleanup, a queue's order, a subscription's messages, a prepared
// transaction's operations, a job's schedule and a missing job.
func TestCompareLayoutFinds(t *testing.T) {
	dirs := layoutFixtureDirs(t)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			a, err := AnalyseLayout(filepath.Join(dir, keptLayoutWorkload, "data"))
			require.NoError(t, err)
			read := func() *LayoutView {
				var v LayoutView
				require.NoError(t, readJSON(filepath.Join(dir, keptOracle, "view.json"), &v))
				return &v
			}
			require.Empty(t, CompareLayout(a, read()), "the kept seed agrees")
			kinds := func(fs []Finding) []Kind {
				var out []Kind
				for _, f := range fs {
					out = append(out, f.Kind)
				}
				return out
			}
			v := read()
			for rel, s := range v.Stores {
				s.Deleted = append(s.Deleted, 999)
				v.Stores[rel] = s
				break
			}
			assert.Equal(t, []Kind{KindLayoutCleanup}, kinds(CompareLayout(a, v)))
			planted := 0
			v = read()
			for n, q := range v.Queues {
				if len(q.Pending) > 1 {
					q.Pending[0], q.Pending[1] = q.Pending[1], q.Pending[0]
					v.Queues[n] = q
					fs := CompareLayout(a, v)
					require.Equal(t, []Kind{KindLayoutQueue}, kinds(fs))
					assert.Equal(t, "the same messages in another order", fs[0].Detail[0])
					planted++
					break
				}
			}
			v = read()
			for n, s := range v.Subscriptions {
				if len(s.Pending) > 0 {
					s.Pending = s.Pending[1:]
					v.Subscriptions[n] = s
					assert.Equal(t, []Kind{KindLayoutSub}, kinds(CompareLayout(a, v)))
					planted++
					break
				}
			}
			v = read()
			for x, ops := range v.PreparedOps {
				ops.Adds = append(ops.Adds, "ID:planted")
				v.PreparedOps[x] = ops
				assert.Equal(t, []Kind{KindLayoutPrepared}, kinds(CompareLayout(a, v)))
				planted++
				break
			}
			v = read()
			if len(v.Jobs) > 0 {
				v.Jobs[0].Repeat++
				assert.Equal(t, []Kind{KindLayoutJobs}, kinds(CompareLayout(a, v)))
				v.Jobs = v.Jobs[1:]
				assert.Equal(t, []Kind{KindLayoutJobs}, kinds(CompareLayout(a, v)))
				planted++
			}
			assert.GreaterOrEqual(t, planted, 2, "the kept seed has queues, subscriptions, prepared transactions or jobs to plant in")
		})
	}
}

package compact

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixedNow() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// hashDir hashes every regular file of dir by name.
func hashDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		h := sha256.Sum256(b)
		out[e.Name()] = hex.EncodeToString(h[:])
	}
	return out
}

func maxLen(fx brokertest.Fixture) int {
	if fx.Expected.MaxFileLength > 0 {
		return fx.Expected.MaxFileLength
	}
	return codec.DefaultMaxFileLength
}

// TestCompactFixturesBrokerAgrees compacts a copy of every fixture, starts a
// real broker adapter on the result and compares what it recovers with
// what it recovers from the original.
func TestCompactFixturesBrokerAgrees(t *testing.T) {
	brokertest.Require(t)
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			want := brokertest.Inspect(t, brokertest.CopyStore(t, fx.StoreDir), maxLen(fx))
			dir := brokertest.CopyStore(t, fx.StoreDir)
			before := hashDir(t, dir)
			rep, err := Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: fixedNow})
			require.NoError(t, err)
			assert.True(t, rep.Verified)
			assert.Equal(t, before, hashDir(t, rep.Backup), "the backup is the untouched original")
			_, err = os.Stat(filepath.Join(dir, "db.data"))
			assert.True(t, errors.Is(err, os.ErrNotExist), "index not carried over")
			// preallocated as the broker's own files: journalMaxFileLength each
			st, err := codec.OpenStore(dir)
			require.NoError(t, err)
			for _, f := range st.Files {
				assert.Equal(t, int64(maxLen(fx)), f.Size, "%s is preallocated", f.Name)
			}
			assert.LessOrEqual(t, rep.After.Files, rep.Before.Files, "no more files")

			brokerAgrees(t, fx, want, dir)
		})
	}
}

// brokerAgrees: a real broker started on the store in dir holds what want
// (its view of the original) holds.
func brokerAgrees(t *testing.T, fx brokertest.Fixture, want *brokertest.Inspection, dir string) {
	t.Helper()
	got := brokertest.Inspect(t, dir, maxLen(fx))
	for q, ids := range want.Queues {
		if brokertest.IndexOnlyOrder(fx.Name, q) {
			assert.ElementsMatch(t, ids, got.Queues[q], "pending messages of %s", q)
			want.Queues[q], got.Queues[q] = nil, nil
		}
	}
	assert.Equal(t, want.Queues, got.Queues, "pending messages per queue, in order")
	require.Equal(t, len(want.Subscriptions), len(got.Subscriptions))
	for k, ws := range want.Subscriptions {
		gs, ok := got.Subscriptions[k]
		require.True(t, ok, "subscription %s survives", k)
		assert.Equal(t, ws.Pending, gs.Pending, "pending of %s", k)
		assert.Equal(t, ws.Selector, gs.Selector)
		assert.Equal(t, ws.NoLocal, gs.NoLocal)
		assert.Equal(t, ws.Count, gs.Count, "count of %s", k)
	}
	assert.Equal(t, len(want.Prepared), len(got.Prepared))
	for i := range want.Prepared {
		assert.Equal(t, want.Prepared[i].XID, got.Prepared[i].XID)
		assert.ElementsMatch(t, want.Prepared[i].Adds, got.Prepared[i].Adds)
		assert.ElementsMatch(t, want.Prepared[i].Acks, got.Prepared[i].Acks)
	}
	assert.ElementsMatch(t, want.Destinations, got.Destinations)
}

func TestCompactDryRunWritesNothing(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir)
	before := hashDir(t, dir)
	rep, err := Compact(dir, Options{DryRun: true, MaxFileLength: int64(maxLen(fx))})
	require.NoError(t, err)
	assert.True(t, rep.DryRun)
	assert.Positive(t, rep.Moved.Records)
	assert.Equal(t, before, hashDir(t, dir))
	ents, _ := os.ReadDir(filepath.Dir(dir))
	assert.Len(t, ents, 1, "no new directory next to the store")
}

func TestCompactRefusesRunningBroker(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir)
	pid, release := brokertest.HoldStore(t, dir)
	holder, err := LockHolder(dir)
	require.NoError(t, err)
	assert.Equal(t, int32(pid), holder)
	before := hashDir(t, dir)
	_, err = Compact(dir, Options{MaxFileLength: int64(maxLen(fx))})
	var le *LockedError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, ErrLocked)
	assert.Equal(t, int32(pid), le.PID)
	assert.Contains(t, err.Error(), "process "+strconv.Itoa(pid))
	release()
	after := hashDir(t, dir)
	delete(before, "lock")
	delete(after, "lock")
	assert.NotEmpty(t, after)
	holder, err = LockHolder(dir)
	require.NoError(t, err)
	assert.Zero(t, holder)
}

func TestCompactRefusesDamagedStore(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	require.NoError(t, faults.EditFile(st.Files[0].Path, func(b []byte) []byte { return faults.FlipByte(b, 40) }))
	before := hashDir(t, dir)
	_, err = Compact(dir, Options{MaxFileLength: int64(maxLen(fx))})
	require.ErrorIs(t, err, ErrDamaged)
	assert.Equal(t, before, hashDir(t, dir))
	rep, err := Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Force: true, Now: fixedNow})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Dropped)
	assert.Contains(t, rep.Dropped[0], st.Files[0].Name)
}

// crashPoints are where the kill test stops the compactor.
var crashPoints = []string{"locked", "writing", "written", "verified", "exchanged", "backed-up"}

// TestCompactHelperProcess is the compactor run by TestCompactSurvivesKill
// in a child process, which it kills at KAHAFS_TEST_CRASH_AT.
func TestCompactHelperProcess(t *testing.T) {
	dir := os.Getenv("KAHAFS_TEST_COMPACT_DIR")
	if dir == "" {
		t.Skip("only run as a child of TestCompactSurvivesKill")
	}
	at := os.Getenv("KAHAFS_TEST_CRASH_AT")
	_, err := Compact(dir, Options{MaxFileLength: 16384, Now: fixedNow, crash: func(p string) {
		if p == at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
	}})
	require.NoError(t, err)
}

func TestCompactSurvivesKill(t *testing.T) {
	var fx brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "topics" {
			fx = f
		}
	}
	require.NotEmpty(t, fx.Name)
	_, og, err := load(fx.StoreDir, maxLen(fx))
	require.NoError(t, err)
	want := stateOf(og)
	for _, point := range crashPoints {
		t.Run(point, func(t *testing.T) {
			dir := brokertest.CopyStore(t, fx.StoreDir)
			orig := hashDir(t, dir)
			cmd := exec.Command(os.Args[0], "-test.run=^TestCompactHelperProcess$")
			cmd.Env = append(os.Environ(), "KAHAFS_TEST_COMPACT_DIR="+dir, "KAHAFS_TEST_CRASH_AT="+point)
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the child was killed")
			assert.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())

			// The store path holds the intact original or a complete
			// compacted store with the same live state.
			now := hashDir(t, dir)
			if _, isNew := now[markerName]; !isNew && equalMaps(now, orig) {
				t.Logf("%s: original intact", point)
			} else {
				_, g, err := load(dir, maxLen(fx))
				require.NoError(t, err)
				assert.Equal(t, want, stateOf(g), "compacted store at %s", point)
				// The original is kept somewhere next to it.
				assert.True(t, originalKept(t, filepath.Dir(dir), orig), "original kept after %s", point)
			}
			// A rerun works and loses nothing.
			rep, err := Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: func() time.Time { return fixedNow().Add(time.Hour) }})
			require.NoError(t, err)
			_, g, err := load(dir, maxLen(fx))
			require.NoError(t, err)
			assert.Equal(t, want, stateOf(g))
			assert.True(t, originalKept(t, filepath.Dir(dir), orig), "original kept after the rerun")
			ents, _ := os.ReadDir(filepath.Dir(dir))
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			for _, n := range names {
				assert.NotContains(t, n, ".kahafs-compact-", "no leftovers: %v (resumed: %s)", names, rep.Resumed)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// originalKept reports whether some directory in parent holds exactly the
// original files.
func originalKept(t *testing.T, parent string, orig map[string]string) bool {
	ents, err := os.ReadDir(parent)
	require.NoError(t, err)
	for _, e := range ents {
		if e.IsDir() && equalMaps(hashDir(t, filepath.Join(parent, e.Name())), orig) {
			return true
		}
	}
	return false
}

// TestCompactNoRedelivery: with NoRedelivery a durable subscription that a
// restarted broker hands acknowledged messages again (the topics
// fixture's c-sel:s-sel, whose unmatched acks were processed out of
// order) is handed only the messages of its ack-position set after
// compaction, by a real broker; its count and every other subscription
// stay as they were, and the report says so.
func TestCompactNoRedelivery(t *testing.T) {
	brokertest.Require(t)
	var fx brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "topics" {
			fx = f
		}
	}
	require.NotEmpty(t, fx.Name)
	_, og, err := load(fx.StoreDir, maxLen(fx))
	require.NoError(t, err)
	again := map[string][]string{}
	for _, s := range og.Subscriptions() {
		for _, m := range s.DeliveredAgain() {
			again[s.Destination.String()+"|"+s.ClientID+":"+s.SubscriptionName] = append(again[s.Destination.String()+"|"+s.ClientID+":"+s.SubscriptionName], m.ID())
		}
	}
	require.NotEmpty(t, again, "the fixture has a subscription delivered acked messages again")

	want := brokertest.Inspect(t, brokertest.CopyStore(t, fx.StoreDir), maxLen(fx))
	dir := brokertest.CopyStore(t, fx.StoreDir)
	rep, err := Compact(dir, Options{MaxFileLength: int64(maxLen(fx)), Now: fixedNow, NoRedelivery: true})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Quirks)
	assert.Contains(t, strings.Join(rep.Quirks, "\n"), "does not (--no-redelivery)")
	got := brokertest.Inspect(t, dir, maxLen(fx))
	require.Equal(t, len(want.Subscriptions), len(got.Subscriptions))
	for k, ws := range want.Subscriptions {
		gs := got.Subscriptions[k]
		assert.Equal(t, ws.Count, gs.Count, "count of %s", k)
		drop := map[string]bool{}
		for _, id := range again[k] {
			drop[id] = true
		}
		var expect []string
		for _, id := range ws.Pending {
			if !drop[id] {
				expect = append(expect, id)
			}
		}
		assert.Equal(t, nonNilIDs(expect), nonNilIDs(gs.Pending), "delivered to %s", k)
	}
	assert.Equal(t, want.Queues, got.Queues)
}

func nonNilIDs(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// A damaged index (db.data) is damage too: the messages its order index
// no longer shows are still in the journal, and a broker made to rebuild
// the index would find them again; a compaction that follows the index
// would drop them for good. Seed 340's store with one page of
// topic://T.1's order index marked free: 274 of its 302 messages gone
// from the order index, all of them in the location index.
func TestCompactRefusesDamagedIndex(t *testing.T) {
	dir := brokertest.CopyStore(t, filepath.Join(brokertest.RepoRoot(), "internal", "difftest", "testdata", "kept",
		"seed-340-cleanup-stale-location-index-key", "workload", "store"))
	data, err := os.ReadFile(filepath.Join(dir, "db.data"))
	require.NoError(t, err)
	require.Equal(t, byte(2), data[70*4096], "page 69 as the test expects it")
	data[70*4096] = 0 // PAGE_FREE_TYPE
	require.NoError(t, os.WriteFile(filepath.Join(dir, "db.data"), data, 0o644))
	before := hashDir(t, dir)
	_, err = Compact(dir, Options{MaxFileLength: 24576})
	require.ErrorIs(t, err, ErrDamaged)
	assert.Equal(t, before, hashDir(t, dir))
	rep, err := Compact(dir, Options{MaxFileLength: 24576, Force: true, Now: fixedNow, DryRun: true})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Dropped)
	assert.Contains(t, rep.Dropped[0], `the broker's index (db.data) is damaged`)
	assert.Contains(t, rep.Dropped[0], `page 69 is marked free`)
}

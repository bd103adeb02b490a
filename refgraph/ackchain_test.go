package refgraph

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAckChainsUnit: a chain of files kept by acks alone starts at the
// file kept by something else; a free file ends no chain; the reverse
// edges are the edges.
func TestAckChainsUnit(t *testing.T) {
	pend := Reason{Kind: KindPendingMessages}
	acks := Reason{Kind: KindAcks}
	files := []*File{
		{ID: 1, Pinned: true, Reasons: []Reason{pend}},
		{ID: 2, Pinned: true, Reasons: []Reason{acks}},
		{ID: 3, Pinned: true, Reasons: []Reason{acks}},
		{ID: 4, Pinned: false},
		{ID: 5, Pinned: true, Reasons: []Reason{pend, acks}},
		{ID: 6, Pinned: true, Reasons: []Reason{acks}},
	}
	byID := map[int32]*File{}
	for _, f := range files {
		byID[f.ID] = f
	}
	// 2 acks 1; 3 acks 2 and the gone file 0 and itself; 4 acks 3;
	// 6 acks 5 and 3 (whose chain starts at 1); 5 acks 4.
	ackChains(files, byID, map[int32][]int32{2: {1}, 3: {2, 0, 3}, 4: {3}, 6: {5, 3}, 5: {4}})
	assert.Equal(t, []int32{1}, files[1].ChainStart)
	assert.Equal(t, []int32{1}, files[2].ChainStart, "through 2, kept by acks alone")
	assert.Equal(t, []int32{2}, files[2].AcksFor, "gone files and itself left out")
	assert.Nil(t, files[3].ChainStart, "a free file is in no chain")
	assert.Nil(t, files[4].ChainStart, "5 is kept by its pending messages: it starts chains, it is in none")
	assert.Equal(t, []int32{1, 5}, files[5].ChainStart)
	assert.Equal(t, []int32{6}, files[4].AckedBy)
	assert.Equal(t, []int32{5}, files[3].AckedBy, "a free file is acked all the same")
	assert.Equal(t, []int32{4, 6}, files[2].AckedBy)
}

// checkAckChains: the chain fields agree with each other, with the ack
// map and with the holders.
func checkAckChains(t *testing.T, g *Graph) {
	t.Helper()
	for _, f := range g.Files() {
		var want []int32
		for _, r := range g.AckMap()[f.ID] {
			if _, ok := g.File(r); ok && r != f.ID && !slices.Contains(want, r) {
				want = append(want, r)
			}
		}
		slices.Sort(want)
		assert.Equal(t, want, f.AcksFor, "%s: acks-for is the ack map's entry, of the store's files", f.Name)
		for _, b := range f.AcksFor {
			fb, _ := g.File(b)
			assert.Contains(t, fb.AckedBy, f.ID, "%s acked by %s", fb.Name, f.Name)
		}
		for _, a := range f.AckedBy {
			fa, _ := g.File(a)
			assert.Contains(t, fa.AcksFor, f.ID)
		}
		acksReason := -1
		for i, r := range f.Reasons {
			if r.Kind == KindAcks {
				acksReason = i
			}
		}
		if acksReason < 0 {
			assert.Empty(t, f.ChainStart, "%s is not kept by acks", f.Name)
			continue
		}
		for _, k := range f.Reasons[acksReason].Files {
			assert.Contains(t, f.AcksFor, k, "%s: the holders' kept file is an ack edge", f.Name)
		}
		require.NotEmpty(t, f.ChainStart, "%s is kept by acks: its chain starts somewhere", f.Name)
		for _, s := range f.ChainStart {
			fs, ok := g.File(s)
			require.True(t, ok)
			assert.True(t, fs.Pinned, "%s: chain start %s is kept", f.Name, fs.Name)
			assert.True(t, startsChain(fs), "%s: chain start %s is kept by something else than acks", f.Name, fs.Name)
		}
	}
}

// TestAckChainsFixtures: on every real-broker store.
func TestAckChainsFixtures(t *testing.T) {
	chains := 0
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			g := replayDir(t, fx.StoreDir, fixtureMaxFile(fx))
			checkAckChains(t, g)
			for _, f := range g.Files() {
				if len(f.ChainStart) > 0 {
					chains++
				}
			}
		})
	}
	t.Logf("%d files kept by an ack chain", chains)
	assert.NotZero(t, chains, "the fixtures have files kept by acks")
}

// ackMapLineRE is the broker's TRACE line of its ack-message-file map at
// a cleanup (MessageDatabase.checkpointUpdate), and ackMapEntryRE one
// entry of it: "4=[2, 3]".
var (
	ackMapLineRE  = regexp.MustCompile(`ackMessageFileMap: (\{.*\})`)
	ackMapEntryRE = regexp.MustCompile(`(\d+)=\[([\d, ]*)\]`)
)

// brokerAckMap is the ack map the broker logged at its first cleanup in
// the log at path; false when it logged none.
func brokerAckMap(t *testing.T, path string) (map[int32][]int32, bool) {
	b, err := os.ReadFile(path)
	require.NoError(t, err, "the broker's log")
	m := ackMapLineRE.FindSubmatch(b)
	if m == nil {
		return nil, false
	}
	out := map[int32][]int32{}
	for _, e := range ackMapEntryRE.FindAllStringSubmatch(string(m[1]), -1) {
		k, err := strconv.Atoi(e[1])
		require.NoError(t, err)
		vals := []int32{}
		for _, v := range strings.Split(e[2], ",") {
			if v = strings.TrimSpace(v); v != "" {
				n, err := strconv.Atoi(v)
				require.NoError(t, err)
				vals = append(vals, int32(n))
			}
		}
		slices.Sort(vals)
		out[int32(k)] = vals
	}
	return out, true
}

// sortedAckMap is m with its values sorted.
func sortedAckMap(m map[int32][]int32) map[int32][]int32 {
	out := map[int32][]int32{}
	for k, v := range m {
		v = slices.Clone(v)
		slices.Sort(v)
		out[k] = slices.Compact(v)
	}
	return out
}

// compareAckMap: the ack map of the emulated cleanup is the one the
// broker logged at its cleanup (the broker's own), and the chain's edges
// (File.AcksFor) are its entries among the store's files.
func compareAckMap(t *testing.T, g *Graph, log string) {
	t.Helper()
	bm, ok := brokerAckMap(t, log)
	if !ok {
		t.Errorf("the broker logged no ackMessageFileMap line in %s", log)
		return
	}
	assert.Equal(t, bm, sortedAckMap(g.AckMap()), "the ack map at the cleanup: the broker's, kahafs's")
	for _, f := range g.Files() {
		var want []int32
		for _, r := range bm[f.ID] {
			if _, ok := g.File(r); ok && r != f.ID {
				want = append(want, r)
			}
		}
		assert.Equal(t, want, f.AcksFor, "%s: files its acks are for, as the broker's map says", f.Name)
	}
}

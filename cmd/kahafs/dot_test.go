package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The digraph's node and edge lines (holders.WriteDot).
var (
	dotNodeRE = regexp.MustCompile(`^\s*(s\d+_)?f(\d+) \[label="db-(\d+)\.log\\n[^"]* (pinned|free)(\\n[^"]*)?", fillcolor=\w+(, penwidth=3, color=red)?\];$`)
	dotEdgeRE = regexp.MustCompile(`^\s*(s\d+_)?f(\d+) -> (s\d+_)?f(\d+) \[label="acks for", style=(solid|dashed, color=gray)\];$`)
)

// dotGraph is what a digraph of holders --dot shows of one store: the
// files pinned or free, the edges "from acks for to", the chain starts.
type dotGraph struct {
	pinned map[int32]bool
	edges  []string
	starts []int32
}

func parseDot(t *testing.T, out string) map[string]*dotGraph {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, "digraph kahafs {", lines[0])
	require.Equal(t, "}", lines[len(lines)-1])
	stores := map[string]*dotGraph{}
	get := func(p string) *dotGraph {
		if stores[p] == nil {
			stores[p] = &dotGraph{pinned: map[int32]bool{}, edges: []string{}}
		}
		return stores[p]
	}
	for _, l := range lines[1 : len(lines)-1] {
		if m := dotNodeRE.FindStringSubmatch(l); m != nil {
			require.Equal(t, m[2], m[3], "node name and label: %s", l)
			id, _ := strconv.Atoi(m[2])
			g := get(m[1])
			g.pinned[int32(id)] = m[4] == "pinned"
			if m[6] != "" {
				g.starts = append(g.starts, int32(id))
			}
			continue
		}
		if m := dotEdgeRE.FindStringSubmatch(l); m != nil {
			require.Equal(t, m[1], m[3], "an edge within a store: %s", l)
			g := get(m[1])
			g.edges = append(g.edges, m[2]+"->"+m[4])
			continue
		}
		assert.Regexp(t, `^\s*(label=|labelloc=|rankdir=|node \[|subgraph cluster_\d+ \{$|\}$)`, l, "a line of the digraph")
	}
	return stores
}

// dotWant is what holders --json says the digraph shows.
func dotWant(t *testing.T, raw json.RawMessage) *dotGraph {
	var doc struct {
		Files []struct {
			ID         int32   `json:"id"`
			Pinned     bool    `json:"pinned"`
			AcksFor    []int32 `json:"acksFor"`
			ChainStart []int32 `json:"chainStart"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	g := &dotGraph{pinned: map[int32]bool{}, edges: []string{}}
	starts := map[int32]bool{}
	for _, f := range doc.Files {
		g.pinned[f.ID] = f.Pinned
		for _, b := range f.AcksFor {
			g.edges = append(g.edges, strconv.Itoa(int(f.ID))+"->"+strconv.Itoa(int(b)))
		}
		for _, s := range f.ChainStart {
			starts[s] = true
		}
	}
	for s := range starts {
		g.starts = append(g.starts, s)
	}
	sort.Slice(g.starts, func(i, j int) bool { return g.starts[i] < g.starts[j] })
	return g
}

// dotParses runs Graphviz on the digraph (when installed: .ci/run
// installs it).
func dotParses(t *testing.T, out string) {
	t.Helper()
	bin, err := exec.LookPath("dot")
	if err != nil {
		need.Skip(t, "graphviz's dot is not installed (apt-get install -y graphviz): the digraph is not parsed")
		return
	}
	cmd := exec.Command(bin, "-Tsvg")
	cmd.Stdin = strings.NewReader(out)
	svg, err := cmd.CombinedOutput()
	require.NoError(t, err, "dot -Tsvg: %s", svg)
	assert.Contains(t, string(svg), "<svg")
}

// TestHoldersDot: on every real-broker fixture the digraph has a node per
// data file, pinned or free as holders says, an edge for every file its
// acks are for, and the chain starts holders names; Graphviz parses it.
func TestHoldersDot(t *testing.T) {
	edges := 0
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			mfl := strconv.Itoa(fx.Expected.MaxFileLength)
			out, stderr, code := runCLI(t, "holders", "--dot", "--max-file-length", mfl, fx.StoreDir)
			require.Equal(t, exitOK, code, stderr)
			js, stderr, code := runCLI(t, "holders", "--json", "--max-file-length", mfl, fx.StoreDir)
			require.Equal(t, exitOK, code, stderr)
			got := parseDot(t, out)
			require.Len(t, got, 1)
			want := dotWant(t, json.RawMessage(js))
			assert.Equal(t, want, got[""])
			edges += len(want.edges)
			dotParses(t, out)
		})
	}
	assert.NotZero(t, edges, "the fixtures have ack edges")
}

// TestHoldersDotLayout: a layout of several stores is a cluster each,
// every store's as holders --json says.
func TestHoldersDotLayout(t *testing.T) {
	for _, fx := range brokertest.LayoutFixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			mfl := strconv.Itoa(fx.Expected.MaxFileLength)
			out, stderr, code := runCLI(t, "holders", "--dot", "--max-file-length", mfl, fx.DataDir)
			require.Equal(t, exitOK, code, stderr)
			js, stderr, code := runCLI(t, "holders", "--json", "--max-file-length", mfl, fx.DataDir)
			require.Equal(t, exitOK, code, stderr)
			var doc struct {
				Stores []json.RawMessage `json:"stores"`
			}
			require.NoError(t, json.Unmarshal([]byte(js), &doc))
			got := parseDot(t, out)
			n := 0
			for i, raw := range doc.Stores {
				var sd struct {
					Files []json.RawMessage `json:"files"`
					Kind  string            `json:"kind"`
				}
				require.NoError(t, json.Unmarshal(raw, &sd))
				if sd.Kind == "scheduler" || sd.Files == nil {
					assert.Nil(t, got["s"+strconv.Itoa(i)+"_"], "store %d has no digraph", i)
					continue
				}
				want := dotWant(t, raw)
				if len(want.pinned) == 0 {
					continue
				}
				n++
				assert.Equal(t, want, got["s"+strconv.Itoa(i)+"_"], "store %d", i)
			}
			assert.Len(t, got, n)
			dotParses(t, out)
		})
	}
}

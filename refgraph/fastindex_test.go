package refgraph

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/require"
)

// TestStreamFastAdoption: the replay adopts an index read with
// kahaindex.StreamFast (StoreOptions) as one read with Stream, on every
// fixture store with an index and on copies whose db.data is damaged
// where StreamFast's passes read it (the adoption then starts again).
func TestStreamFastAdoption(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(brokertest.RepoRoot(), "testdata", "stores", "*", "store"))
	n, restarts := 0, 0
	var takes takeCounts
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "db.data"))
		if err != nil {
			continue
		}
		for k := 0; k <= 16; k++ {
			at := 4096 + k*(len(data)-4096)/16
			if k > 0 && at+64 > len(data) {
				continue
			}
			work := t.TempDir()
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				require.NoError(t, err)
				if e.Name() == "db.data" && k > 0 {
					for i := at; i < at+64; i++ {
						b[i] ^= 0x5a
					}
				}
				require.NoError(t, os.WriteFile(filepath.Join(work, e.Name()), b, 0o644))
			}
			st, err := codec.OpenStore(work)
			require.NoError(t, err)
			fast := StoreOptions(st, true, nil)
			seq := fast
			fast.LoadIndex = func(sink kahaindex.Sink) (*kahaindex.Index, error) {
				restart := sink.Restart
				sink.Restart = func() { restarts++; restart() }
				return kahaindex.StreamFast(work, sink)
			}
			seq.LoadIndex = func(sink kahaindex.Sink) (*kahaindex.Index, error) { return kahaindex.Stream(work, sink) }
			g1, err1 := Load(st, fast, codec.ReadOptions{})
			g2, err2 := Load(st, seq, codec.ReadOptions{})
			require.Equal(t, err2, err1, "%s, damage at %d", dir, at)
			sameGraphs(t, g1, g2, "%s, damage at %d", dir, at)
			// and without the feed (which splits the ids ahead)
			seq.readAtPosition = true
			g3, err3 := Load(st, seq, codec.ReadOptions{})
			require.Equal(t, err2, err3, "%s, damage at %d, no feed", dir, at)
			sameGraphs(t, g3, g2, "%s, damage at %d, no feed", dir, at)
			// and without taking the replay's indexes
			fast.takes = &takes
			g4, err4 := Load(st, fast, codec.ReadOptions{})
			fast.takes, fast.noTake = nil, true
			g5, err5 := Load(st, fast, codec.ReadOptions{})
			require.Equal(t, err2, err4, "%s, damage at %d", dir, at)
			require.Equal(t, err2, err5, "%s, damage at %d, no take", dir, at)
			sameGraphs(t, g5, g4, "%s, damage at %d, no take", dir, at)
			n++
		}
	}
	require.NotZero(t, n, "no fixture store with an index")
	require.NotZero(t, restarts, "no damage made the adoption start again: the test misses that path")
	require.NotZero(t, takes.took, "no destination took the replay's indexes: the test misses that path")
	require.NotZero(t, takes.unmatched, "no destination matched messages and then one it could not: the test misses that path")
	t.Logf("%d stores, %d adoptions started again, %d destinations took the replay's indexes, %d matched some and then not",
		n, restarts, takes.took, takes.unmatched)
}

// sameGraphs fails t when g1 and g2 tell different things (describeGraph).
func sameGraphs(t *testing.T, g1, g2 *Graph, format string, args ...any) {
	t.Helper()
	if d1, d2 := describeGraph(g1), describeGraph(g2); !reflect.DeepEqual(d1, d2) {
		i := 0
		for i < min(len(d1), len(d2)) && d1[i] == d2[i] {
			i++
		}
		t.Fatalf("%s: the graphs differ at line %d: %q / %q", fmt.Sprintf(format, args...), i, d1[min(i, len(d1)-1)], d2[min(i, len(d2)-1)])
	}
}

// describeGraph is what a graph tells, as text: what makes the tree, the
// holders and the summary (not how the replay numbered its ids).
func describeGraph(g *Graph) []string {
	if g == nil {
		return nil
	}
	out := []string{fmt.Sprintf("summary %+v", g.Summary()), fmt.Sprintf("gc %v", g.GCCandidates())}
	out = append(out, g.Warnings()...)
	out = append(out, g.GCLog()...)
	for _, d := range g.IndexDiffs() {
		out = append(out, fmt.Sprintf("diff %+v", d))
	}
	for _, f := range g.Files() {
		out = append(out, fmt.Sprintf("file %d %s pinned %v commands %d", f.ID, f.Name, f.Pinned, f.Commands))
		for _, r := range append(f.Reasons, f.Notes...) {
			out = append(out, fmt.Sprintf("  %v %s %d %d %s %s", r.Kind, r.Text, r.Messages, r.Bytes, r.FirstMessageID, r.LastMessageID))
		}
	}
	for _, d := range g.Destinations() {
		out = append(out, fmt.Sprintf("dest %s next %d stats %+v", d.Key, d.NextSeq, d.Stats))
		for i := range d.Messages {
			m := &d.Messages[i]
			out = append(out, fmt.Sprintf("  %d %s %v prio %d %v size %d %v %v %q", m.Seq, m.ID(), m.Loc, m.Priority, m.PrioritySupported, m.Size, m.Updated, m.Unreadable, d.AckedInPreparedTx(m)))
		}
		for _, m := range d.Pending() {
			out = append(out, "  pending "+m.ID())
		}
		for _, s := range d.Subscriptions {
			out = append(out, fmt.Sprintf("  sub %s count %d last %d %v", s.Key, s.Count, s.LastAck, s.AckPositions))
		}
	}
	return out
}

// TestAdoptionTakesOnlyWhatItWouldMake: an adopted destination takes the
// replay's indexes only when keyed would have made the same entries of
// the index's messages. The index of every fixture store is streamed
// with one of its messages changed the ways a damaged or foreign index
// could (another class, another record size, listed twice, left out,
// another id, out of order), in each destination with messages, or a
// destination listed twice; the adoption with the take and without it
// must tell the same.
func TestAdoptionTakesOnlyWhatItWouldMake(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(brokertest.RepoRoot(), "testdata", "stores", "*", "store"))
	type change func(sink kahaindex.Sink, d *kahaindex.Destination, m *kahaindex.StreamMessage, next func())
	changes := map[string]change{
		"class": func(sink kahaindex.Sink, d *kahaindex.Destination, m *kahaindex.StreamMessage, _ func()) {
			c := *m
			c.Class = (m.Class + 1) % 3
			sink.Message(d, &c)
		},
		"size": func(sink kahaindex.Sink, d *kahaindex.Destination, m *kahaindex.StreamMessage, _ func()) {
			c := *m
			c.Loc.Size++
			sink.Message(d, &c)
		},
		"twice": func(sink kahaindex.Sink, d *kahaindex.Destination, m *kahaindex.StreamMessage, _ func()) {
			sink.Message(d, m)
			sink.Message(d, m)
		},
		"left out": func(kahaindex.Sink, *kahaindex.Destination, *kahaindex.StreamMessage, func()) {},
		"another id": func(sink kahaindex.Sink, d *kahaindex.Destination, m *kahaindex.StreamMessage, _ func()) {
			c := *m
			c.ID = append(append([]byte(nil), m.ID...), '0')
			sink.Message(d, &c)
		},
		"late": func(sink kahaindex.Sink, d *kahaindex.Destination, m *kahaindex.StreamMessage, next func()) {
			next() // the message after it first
			sink.Message(d, m)
		},
	}
	n := 0
	var takes takeCounts
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "db.data")); err != nil {
			continue
		}
		st, err := codec.OpenStore(dir)
		require.NoError(t, err)
		for name, ch := range changes {
			for _, which := range []int{0, 1} { // a destination's first message, its second
				opts := StoreOptions(st, true, nil)
				opts.readAtPosition = true
				opts.LoadIndex = func(sink kahaindex.Sink) (*kahaindex.Index, error) {
					i := 0
					var held *kahaindex.StreamMessage // "late": the changed one, held back
					var heldD *kahaindex.Destination
					s := sink
					s.Destination = func(d *kahaindex.Destination) { i = 0; sink.Destination(d) }
					s.Message = func(d *kahaindex.Destination, m *kahaindex.StreamMessage) {
						i++
						if held != nil {
							h := held
							held = nil
							ch(sink, heldD, h, func() { sink.Message(d, m) })
							return
						}
						if i-1 != which {
							sink.Message(d, m)
							return
						}
						if name == "late" {
							c := *m
							c.ID = append([]byte(nil), m.ID...)
							held, heldD = &c, d
							return
						}
						ch(sink, d, m, nil)
					}
					s.Done = func(d *kahaindex.Destination) {
						if held != nil { // the last one: nothing to go after
							sink.Message(heldD, held)
							held = nil
						}
						sink.Done(d)
					}
					if name == "twice" && which == 1 {
						// instead: the first destination with messages, twice
						var msgs []kahaindex.StreamMessage
						twice := false
						s.Destination = func(d *kahaindex.Destination) { msgs = msgs[:0]; sink.Destination(d) }
						s.Message = func(d *kahaindex.Destination, m *kahaindex.StreamMessage) {
							c := *m
							c.ID = append([]byte(nil), m.ID...)
							msgs = append(msgs, c)
							sink.Message(d, m)
						}
						s.Done = func(d *kahaindex.Destination) {
							sink.Done(d)
							if len(msgs) > 0 && !twice {
								twice = true
								sink.Destination(d)
								for i := range msgs {
									sink.Message(d, &msgs[i])
								}
								sink.Done(d)
							}
						}
					}
					return kahaindex.Stream(dir, s)
				}
				opts.takes = &takes
				g1, err1 := Load(st, opts, codec.ReadOptions{})
				opts.takes, opts.noTake = nil, true
				g2, err2 := Load(st, opts, codec.ReadOptions{})
				require.Equal(t, err2, err1, "%s: %s, message %d", dir, name, which)
				sameGraphs(t, g1, g2, "%s: %s, message %d", dir, name, which)
				n++
			}
		}
	}
	require.NotZero(t, n, "no fixture store with an index")
	require.NotZero(t, takes.took, "no destination took the replay's indexes")
	require.NotZero(t, takes.unmatched, "no destination matched messages and then one it could not")
	t.Logf("%d adoptions, %d destinations took the replay's indexes, %d matched some and then not", n, takes.took, takes.unmatched)
}

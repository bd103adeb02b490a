package refgraph

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synthStream is a LoadIndex that streams dests destinations of perDest
// messages each (ids of varying lengths, reusing one message as Stream
// does) and then fails with err, if any.
func synthStream(dests, perDest int, err error) func(kahaindex.Sink) (*kahaindex.Index, error) {
	return func(sink kahaindex.Sink) (*kahaindex.Index, error) {
		ix := &kahaindex.Index{}
		var m kahaindex.StreamMessage
		for i := range dests {
			d := &kahaindex.Destination{Key: fmt.Sprintf("0:Q%d", i), Type: codec.Queue, Name: fmt.Sprintf("Q%d", i), NextSeq: int64(perDest)}
			if sink.Destination != nil {
				sink.Destination(d)
			}
			for j := range perDest {
				m.Seq, m.Class = int64(j), kahaindex.Class(j%3)
				m.Loc = codec.Location{File: int32(i), Offset: int32(j), Size: int32(100 + j%7)}
				m.ID = fmt.Appendf(m.ID[:0], "ID:%s:%d", strings.Repeat("p", j%50), j)
				if sink.Message != nil {
					sink.Message(d, &m)
				}
			}
			d.Subscriptions = []kahaindex.Subscription{{Key: "c:s"}} // set while reading, as Stream does
			if sink.Done != nil {
				sink.Done(d)
			}
			ix.Destinations = append(ix.Destinations, d)
		}
		return ix, err
	}
}

// recordSink records the calls of a sink as text.
func recordSink(out *[]string) kahaindex.Sink {
	return kahaindex.Sink{
		Destination: func(d *kahaindex.Destination) { *out = append(*out, "dest "+d.Key) },
		Message: func(d *kahaindex.Destination, m *kahaindex.StreamMessage) {
			*out = append(*out, fmt.Sprintf("msg %s %d %s %v %v", d.Key, m.Seq, m.ID, m.Loc, m.Class))
		},
		Done: func(d *kahaindex.Destination) {
			*out = append(*out, fmt.Sprintf("done %s %d", d.Key, len(d.Subscriptions)))
		},
		Restart: func() { *out = append(*out, "restart") },
	}
}

// TestFeedRestartAndCheck: a stream that starts again (StreamFast after
// its passes met something) reaches the adoption with its restart in
// place; the stream's second pass may start once the adoption takes the
// batches, or once nothing will (halted), not before.
func TestFeedRestartAndCheck(t *testing.T) {
	first, again := synthStream(2, feedBatchEvents+5, nil), synthStream(3, 7, nil)
	load := func(sink kahaindex.Sink) (*kahaindex.Index, error) {
		first(sink)
		sink.Restart()
		return again(sink)
	}
	var want, got []string
	_, _ = load(recordSink(&want))
	checks := make(chan (<-chan struct{}), 1)
	f := startFeed(func(sink kahaindex.Sink) (*kahaindex.Index, error) {
		checks <- sink.CheckAfter
		return load(sink)
	})
	check := <-checks
	require.NotNil(t, check)
	time.Sleep(20 * time.Millisecond)
	select {
	case <-check:
		t.Fatal("the second pass may start before the adoption takes the batches")
	default:
	}
	ix, err := f.replay(recordSink(&got), nil)
	require.NoError(t, err)
	assert.Len(t, ix.Destinations, 3)
	assert.Equal(t, want, got)
	assert.Contains(t, got, "restart")
	select {
	case <-check:
	default:
		t.Fatal("the second pass still waits after the adoption")
	}

	f = startFeed(func(sink kahaindex.Sink) (*kahaindex.Index, error) {
		checks <- sink.CheckAfter
		<-sink.CheckAfter // as StreamFast's second pass does
		return nil, nil
	})
	check = <-checks
	f.halt()
	select {
	case <-check:
	case <-time.After(10 * time.Second):
		t.Fatal("a halted feed's stream waits for its second pass forever")
	}
}

// TestFeedReplaysStream: the sink gets from a feed exactly the calls the
// stream made, in order, over many batches, and the stream's result and
// error; a stream read ahead while the consumer is not there yet is held
// in at most feedBatches batches.
func TestFeedReplaysStream(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		dests, per int
		err        error
	}{{0, 0, nil}, {1, 0, nil}, {3, 10, nil}, {5, 3*feedBatchEvents + 17, nil}, {2, feedBatchEvents, boom}} {
		var want, got []string
		wix, werr := synthStream(c.dests, c.per, c.err)(recordSink(&want))
		ended := make(chan struct{})
		load := synthStream(c.dests, c.per, c.err)
		f := startFeed(func(sink kahaindex.Sink) (*kahaindex.Index, error) {
			defer close(ended)
			return load(sink)
		})
		if c.dests*c.per > (feedBatches+2)*feedBatchEvents {
			// the reader is held back until the batches are taken
			time.Sleep(50 * time.Millisecond)
			select {
			case <-ended:
				t.Errorf("%+v: the stream was read whole before anything took it", c)
			default:
			}
		}
		gix, gerr := f.replay(recordSink(&got), nil)
		require.Equal(t, len(want), len(got), "%+v", c)
		assert.Equal(t, want, got, "%+v", c)
		assert.Equal(t, werr, gerr, "%+v", c)
		assert.Equal(t, len(wix.Destinations), len(gix.Destinations), "%+v", c)
	}
}

// TestFeedHalt: a feed whose batches nobody takes ends its stream once
// halted, and so does the feed of a Builder dropped before it adopted
// the index (a replay that failed).
func TestFeedHalt(t *testing.T) {
	ended := make(chan struct{})
	load := synthStream(4, 4*feedBatchEvents, nil)
	f := startFeed(func(sink kahaindex.Sink) (*kahaindex.Index, error) {
		defer close(ended)
		return load(sink)
	})
	time.Sleep(20 * time.Millisecond)
	select {
	case <-ended:
		t.Fatal("the stream ran on with nobody taking its batches")
	default:
	}
	f.halt()
	f.halt() // twice is harmless
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("a halted feed did not end")
	}

	ended2 := make(chan struct{})
	first := codec.Location{File: 2}
	func() {
		b := NewBuilder(Options{
			Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &first}},
			LoadIndex: func(sink kahaindex.Sink) (*kahaindex.Index, error) {
				defer close(ended2)
				return load(sink)
			},
		})
		c := codec.Command{Type: codec.TraceCommand}
		require.NoError(t, b.Command(codec.Record{Loc: codec.Location{File: 1, Offset: 10, Size: 50}}, &c))
		require.NotNil(t, b.feed, "the index is read from the first record on")
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		runtime.GC()
		select {
		case <-ended2:
			return
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the feed of a dropped Builder did not end")
		}
	}
}

// TestSortFile: a file's pending details are put in the order a sort
// puts them, whether they come as one run, a few (merged) or many.
func TestSortFile(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, runs := range []int{0, 1, 2, 3, 7, maxRuns - 1, maxRuns, maxRuns + 5, 1000} {
		for _, n := range []int{0, 1, 2, 5, 100, 3000} {
			var p []pendingDetail
			ord := uint32(0)
			for r := 0; r < max(runs, 1); r++ {
				off := int32(rng.Intn(50))
				for range n / max(runs, 1) {
					off += int32(rng.Intn(3)) // equal offsets too: ord decides
					p = append(p, pendingDetail{loc: codec.Location{File: 1, Offset: off}, ord: ord})
					ord++
				}
			}
			if runs == 0 {
				rng.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
			}
			want := slices.Clone(p)
			slices.SortFunc(want, func(x, y pendingDetail) int {
				if c := cmp.Compare(x.loc.Offset, y.loc.Offset); c != 0 {
					return c
				}
				return cmp.Compare(x.ord, y.ord)
			})
			sortFile(p, make([]pendingDetail, len(p)))
			require.Equal(t, want, p, "runs %d n %d", runs, n)
		}
	}
}

// TestFeedPrefixes: the feed numbers an id's prefix as the id table
// splits it; a prefix keeps its number while it keeps its slot, and the
// adoption's intern through the numbers gives the keys and references
// the id table gives without them — producers that come and go by the
// thousand (slots taken over, numbers given again) included.
func TestFeedPrefixes(t *testing.T) {
	var fp feedPrefixes
	a1, a2, b1 := fp.key([]byte("ID:a:1:1:1:7")), fp.key([]byte("ID:a:1:1:1:8")), fp.key([]byte("ID:b:1:1:1:7"))
	assert.Equal(t, a1.prefix, a2.prefix)
	assert.NotZero(t, a1.prefix)
	assert.NotEqual(t, a1.prefix, b1.prefix)
	assert.Equal(t, int64(8), a2.seq)
	assert.Equal(t, feedKey{}, fp.key([]byte("not-a-producer-id")))
	assert.Equal(t, feedKey{}, fp.key([]byte("ID:a:1:1:1:007")), "a sequence the id table keeps whole")

	var ids [][]byte
	for i := range 3 * feedPrefixSlots {
		ids = append(ids, []byte(fmt.Sprintf("ID:host-%d-1:1:1:%d", i%7, i)))   // a few producers
		ids = append(ids, []byte(fmt.Sprintf("ID:conn-%d-1:1:1:1", i)))         // one a connection
		ids = append(ids, []byte(fmt.Sprintf("ID:host-%d-1:1:1:%d", i%7, i+1))) // again
	}
	ids = append(ids, []byte("plain"), []byte("ID:host-1-1:1:1:1"))
	plain := newIDTable()
	var want []msgKey
	for _, id := range ids {
		want = append(want, plain.intern(id))
	}
	b := NewBuilder(Options{})
	a := b.newAdoption()
	var fp2 feedPrefixes
	var got []msgKey
	for _, id := range ids {
		got = append(got, a.intern(id, fp2.key(id)))
	}
	a.dropPrefixes()
	assert.Equal(t, want, got)
	assert.Equal(t, plain.refs, b.ids.refs)
	assert.Equal(t, plain.names, b.ids.names)
}

// TestFeedEventSize: a feed event is 40 bytes (840 k of them pass from
// the feed to the adoption on a big store).
func TestFeedEventSize(t *testing.T) {
	if n := unsafe.Sizeof(feedEvent{}); n != 40 {
		t.Fatalf("feedEvent is %d bytes", n)
	}
}

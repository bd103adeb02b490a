package refgraph

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAdoptionDetails: the details of the messages an adopted index holds
// come from their records, whether the replay meets the record after the
// recovery position (adoption.meet) or it is read (readDetails); records
// that do not read, or are not a message's, are warned about in the order
// the index lists their messages, before the warnings of the replay after
// the position, as when each record was read while the index was adopted.
func TestAdoptionDetails(t *testing.T) {
	q := codec.Destination{Type: codec.Queue, Name: []byte("Q"), HasType: true, HasName: true}
	add := func(id string, prio int32, body int) codec.Command {
		return codec.Command{Type: codec.AddMessageCommand, Dest: q, MessageID: []byte(id), Message: make([]byte, body), Priority: prio, PrioritySupported: true}
	}
	loc := func(off int32) codec.Location { return codec.Location{File: 1, Offset: off, Size: 100} }
	// the journal: a trace (the recovery position), then the adds the
	// index holds, one of them not an add, then an add of another
	// destination with an unknown type (a warning of the replay)
	journal := []journalRecord{
		{loc(10), codec.Command{Type: codec.TraceCommand}},
		{loc(200), add("ID:p:1", 7, 11)},
		{loc(300), codec.Command{Type: codec.TraceCommand}}, // where the index says ID:p:2 is
		{loc(400), add("ID:p:3", 2, 33)},
		{loc(500), codec.Command{Type: codec.AddMessageCommand, Dest: codec.Destination{Type: 9, Name: []byte("X")}, MessageID: []byte("ID:x:1")}},
	}
	byLoc := map[codec.Location]codec.Command{}
	for _, r := range journal {
		byLoc[r.loc] = r.c
	}
	// ID:p:0 is before the position (read), ID:p:4 in a record that does
	// not read
	byLoc[loc(100)] = add("ID:p:0", 5, 5)
	index := []kahaindex.StreamMessage{
		{Seq: 1, ID: []byte("ID:p:0"), Loc: loc(100), Class: kahaindex.High},
		{Seq: 2, ID: []byte("ID:p:1"), Loc: loc(200), Class: kahaindex.High},
		{Seq: 3, ID: []byte("ID:p:2"), Loc: loc(300), Class: kahaindex.Default},
		{Seq: 4, ID: []byte("ID:p:3"), Loc: loc(400), Class: kahaindex.Low},
		{Seq: 5, ID: []byte("ID:p:4"), Loc: loc(450), Class: kahaindex.Default},
		// two classes hold sequence 6: the second replaces the first,
		// whose record does not read (its warning is still told)
		{Seq: 6, ID: []byte("ID:p:5"), Loc: loc(470), Class: kahaindex.High},
		{Seq: 6, ID: []byte("ID:p:6"), Loc: loc(480), Class: kahaindex.Default},
	}
	byLoc[loc(480)] = add("ID:p:6", 4, 44)
	var reads []codec.Location
	first := loc(10)
	for _, batch := range []bool{false, true} {
		reads = reads[:0]
		opts := Options{
			Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &first}},
			LoadIndex: func(sink kahaindex.Sink) (*kahaindex.Index, error) {
				xd := &kahaindex.Destination{Key: "0:Q", Type: codec.Queue, Name: "Q", NextSeq: 7}
				sink.Destination(xd)
				for i := range index {
					m := index[i]
					sink.Message(xd, &m)
				}
				sink.Done(xd)
				return &kahaindex.Index{Destinations: []*kahaindex.Destination{xd}, LocationShapes: leafShapes(xd)}, nil
			},
			ReadRecord: func(l codec.Location, c *codec.Command) (codec.Location, error) {
				reads = append(reads, l)
				if got, ok := byLoc[l]; ok {
					*c = got
					return l, nil
				}
				return l, errors.New("boom")
			},
		}
		if batch {
			read := opts.ReadRecord
			opts.ReadRecords = func(locs []codec.Location, fn func(int, *codec.Command, error)) {
				var c codec.Command
				for i, l := range locs {
					_, err := read(l, &c)
					fn(i, &c, err)
				}
			}
		}
		g := replayJournal(t, opts, journal, 600)
		// only the records the replay did not meet are read
		assert.Equal(t, []codec.Location{loc(100), loc(300), loc(450), loc(470), loc(480)}, reads, "batch %v", batch)
		got := messageDetails(t, g, "0:Q")
		assert.Equal(t, map[string]string{
			"ID:p:0": "prio 5 size 5 unreadable false",
			"ID:p:1": "prio 7 size 11 unreadable false",
			"ID:p:2": "prio 4 size 0 unreadable true",
			"ID:p:3": "prio 2 size 33 unreadable false",
			"ID:p:4": "prio 4 size 0 unreadable true",
			"ID:p:6": "prio 4 size 44 unreadable false",
		}, got, "batch %v", batch)
		w := g.Warnings()
		require.GreaterOrEqual(t, len(w), 4, "%q", w)
		assert.Contains(t, w[0], "index: ID:p:2 of 0:Q at ")
		assert.Contains(t, w[0], "not a message")
		assert.Contains(t, w[1], "index: ID:p:4 of 0:Q at ")
		assert.Contains(t, w[1], "boom")
		assert.Contains(t, w[2], "index: ID:p:5 of 0:Q at ")
		assert.Contains(t, w[2], "boom")
		assert.Contains(t, w[3], "unknown destination type 9", "%q", w)
	}
}

// journalRecord is a record of a journal of one file made by a test.
type journalRecord struct {
	loc codec.Location
	c   codec.Command
}

// replayJournal replays journal, data file 1 ending at end, with opts.
func replayJournal(t *testing.T, opts Options, journal []journalRecord, end int64) *Graph {
	t.Helper()
	b := NewBuilder(opts)
	for _, r := range journal {
		c := r.c
		require.NoError(t, b.Command(codec.Record{Loc: r.loc}, &c))
	}
	require.NoError(t, b.FileDone(&codec.FileSummary{Info: codec.FileInfo{ID: 1}, Size: 1000, End: end}))
	g, err := b.Build()
	require.NoError(t, err)
	return g
}

// messageDetails are the priority, size and readability of the messages
// of destination key in g, by id.
func messageDetails(t *testing.T, g *Graph, key string) map[string]string {
	t.Helper()
	d, ok := g.Destination(key)
	require.True(t, ok, key)
	got := map[string]string{}
	for i := range d.Messages {
		m := &d.Messages[i]
		got[m.ID()] = fmt.Sprintf("prio %d size %d unreadable %v", m.Priority, m.Size, m.Unreadable)
	}
	return got
}

// TestLocKey: locKey orders locations as Location.Less does, negative
// files and offsets (a damaged index's) included, and tells them apart.
func TestLocKey(t *testing.T) {
	vals := []int32{math.MinInt32, -70000, -1, 0, 1, 65535, 1 << 20, math.MaxInt32}
	for _, f1 := range vals {
		for _, o1 := range vals {
			for _, f2 := range vals {
				for _, o2 := range vals {
					x, y := codec.Location{File: f1, Offset: o1}, codec.Location{File: f2, Offset: o2}
					require.Equal(t, x.Less(y), locKey(x) < locKey(y), "%v %v", x, y)
					require.Equal(t, x.File == y.File && x.Offset == y.Offset, locKey(x) == locKey(y), "%v %v", x, y)
				}
			}
		}
	}
}

// TestAdoptionKnownByLocation: a message the index holds under an id the
// replay does not know, at a location where the replay holds a message,
// takes the replay's details without its record being read — whether the
// recovery position is within the journal (readEarly looks it up) or
// past its end (knownAt); the ids the replay holds are found (the largest
// of a producer's too), the others are the index's own.
func TestAdoptionKnownByLocation(t *testing.T) {
	q := codec.Destination{Type: codec.Queue, Name: []byte("Q"), HasType: true, HasName: true}
	loc := func(off int32) codec.Location { return codec.Location{File: 1, Offset: off, Size: 100} }
	add := func(id string, prio int32, body int) codec.Command {
		return codec.Command{Type: codec.AddMessageCommand, Dest: q, MessageID: []byte(id), Message: make([]byte, body), Priority: prio, PrioritySupported: true}
	}
	journal := []journalRecord{
		{loc(100), add("ID:p:0", 7, 5)},
		{loc(150), add("ID:p:1", 3, 6)},
		{loc(200), codec.Command{Type: codec.TraceCommand}},
		{loc(300), add("ID:p:2", 4, 9)},
	}
	for _, at := range []codec.Location{loc(200), loc(900)} {
		var reads []codec.Location
		position := at
		opts := Options{
			Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &position}},
			LoadIndex: func(sink kahaindex.Sink) (*kahaindex.Index, error) {
				xd := &kahaindex.Destination{Key: "0:Q", Type: codec.Queue, Name: "Q", NextSeq: 4}
				sink.Destination(xd)
				for _, m := range []kahaindex.StreamMessage{
					{Seq: 1, ID: []byte("ID:x:1"), Loc: loc(100), Class: kahaindex.High}, // where the replay holds ID:p:0
					{Seq: 2, ID: []byte("ID:p:1"), Loc: loc(150), Class: kahaindex.Low},
					{Seq: 3, ID: []byte("ID:p:2"), Loc: loc(300), Class: kahaindex.Default},
				} {
					sink.Message(xd, &m)
				}
				sink.Done(xd)
				return &kahaindex.Index{Destinations: []*kahaindex.Destination{xd}, LocationShapes: leafShapes(xd)}, nil
			},
			ReadRecord: func(l codec.Location, c *codec.Command) (codec.Location, error) {
				reads = append(reads, l)
				for _, r := range journal {
					if r.loc == l {
						*c = r.c
						return l, nil
					}
				}
				return l, errors.New("boom")
			},
		}
		g := replayJournal(t, opts, journal, 400)
		assert.Empty(t, reads, "position %v", at)
		got := messageDetails(t, g, "0:Q")
		assert.Equal(t, map[string]string{
			"ID:x:1": "prio 7 size 5 unreadable false",
			"ID:p:1": "prio 3 size 6 unreadable false",
			"ID:p:2": "prio 4 size 9 unreadable false",
		}, got, "position %v", at)
		assert.Empty(t, g.Warnings(), "position %v", at)
		// the index's own: ID:x:1, and ID:p:2 when the replay had not
		// met it at the position
		only := []string{"ID:p:2", "ID:x:1"}
		if at == loc(900) {
			only = only[1:]
		}
		assert.Equal(t, []IndexDiff{
			{Kind: "messages", Destination: "queue://Q", Count: 1, MessageIDs: []string{"ID:p:0"}},
			{Kind: "index-only-messages", Destination: "queue://Q", Count: len(only), MessageIDs: only},
		}, g.IndexDiffs(), "position %v", at)
	}
}

// TestAdoptionTakesAndReadsEarly: at a recovery position within the
// journal, an adopted destination that takes the replay's indexes (all
// of R's messages are the replay's) goes on with the replay after the
// position, while the details of another's message (Q's, of an id the
// replay does not hold) are looked up by location in the replayed state,
// R's included: with -race, the look-up must not run beside the replay.
func TestAdoptionTakesAndReadsEarly(t *testing.T) {
	dq := codec.Destination{Type: codec.Queue, Name: []byte("Q"), HasType: true, HasName: true}
	dr := codec.Destination{Type: codec.Queue, Name: []byte("R"), HasType: true, HasName: true}
	loc := func(off int32) codec.Location { return codec.Location{File: 1, Offset: off, Size: 100} }
	add := func(d codec.Destination, id string, prio int32, body int) codec.Command {
		return codec.Command{Type: codec.AddMessageCommand, Dest: d, MessageID: []byte(id), Message: make([]byte, body), Priority: prio, PrioritySupported: true}
	}
	journal := []journalRecord{
		{loc(100), add(dq, "ID:q:0", 7, 5)},
		{loc(150), add(dr, "ID:r:0", 4, 6)},
		{loc(200), codec.Command{Type: codec.TraceCommand}},
		{loc(300), add(dr, "ID:r:1", 4, 9)},
		{loc(400), codec.Command{Type: codec.RemoveMessageCommand, Dest: dr, MessageID: []byte("ID:r:0")}},
	}
	for _, take := range []bool{true, false} {
		position := loc(200)
		var takes takeCounts
		opts := Options{
			Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &position}},
			LoadIndex: func(sink kahaindex.Sink) (*kahaindex.Index, error) {
				xq := &kahaindex.Destination{Key: "0:Q", Type: codec.Queue, Name: "Q", NextSeq: 1}
				xr := &kahaindex.Destination{Key: "0:R", Type: codec.Queue, Name: "R", NextSeq: 1}
				sink.Destination(xq)
				sink.Message(xq, &kahaindex.StreamMessage{Seq: 0, ID: []byte("ID:x:1"), Loc: loc(100), Class: kahaindex.High})
				sink.Done(xq)
				sink.Destination(xr)
				sink.Message(xr, &kahaindex.StreamMessage{Seq: 0, ID: []byte("ID:r:0"), Loc: loc(150), Class: kahaindex.Default})
				sink.Done(xr)
				return &kahaindex.Index{Destinations: []*kahaindex.Destination{xq, xr}, LocationShapes: leafShapes(xq, xr)}, nil
			},
			ReadRecord: func(l codec.Location, c *codec.Command) (codec.Location, error) {
				return l, errors.New("not read: the replay knows it")
			},
			takes:  &takes,
			noTake: !take,
		}
		g := replayJournal(t, opts, journal, 500)
		if take {
			assert.Equal(t, 1, takes.took, "R takes the replay's indexes")
		} else {
			assert.Zero(t, takes.took)
		}
		assert.Equal(t, map[string]string{"ID:x:1": "prio 7 size 5 unreadable false"}, messageDetails(t, g, "0:Q"), "take %v", take)
		assert.Equal(t, map[string]string{"ID:r:1": "prio 4 size 9 unreadable false"}, messageDetails(t, g, "0:R"), "take %v", take)
		assert.Empty(t, g.Warnings(), "take %v", take)
	}
}

// leafShapes: the location index of each of ds is one leaf, as a reader
// gives for an index that read whole.
func leafShapes(ds ...*kahaindex.Destination) map[string]*kahaindex.LocationNode {
	m := map[string]*kahaindex.LocationNode{}
	for _, d := range ds {
		m[d.Key] = &kahaindex.LocationNode{}
	}
	return m
}

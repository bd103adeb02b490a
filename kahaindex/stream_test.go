package kahaindex

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
)

// streamAgrees checks that StreamBytes on data, redo and free gives what
// Parse gave (ix, err): the same error, or the same index with the
// messages handed to the sink in Read's order, and the notes but those
// of checkMessages (which Stream does not make).
func streamAgrees(t *testing.T, data, redo, free []byte, ix *Index, err error) {
	t.Helper()
	var got []Message
	var began, done []string
	var order []string
	sx, serr := StreamBytes(data, redo, free, Sink{
		Destination: func(d *Destination) { began = append(began, d.Key); order = append(order, "begin "+d.Key) },
		Message: func(d *Destination, m *StreamMessage) {
			got = append(got, Message{Seq: m.Seq, ID: string(m.ID), Loc: m.Loc, Class: m.Class})
			order = append(order, "message "+d.Key)
		},
		Done: func(d *Destination) { done = append(done, d.Key); order = append(order, "done "+d.Key) },
	})
	if fmt.Sprint(err) != fmt.Sprint(serr) {
		t.Fatalf("Read: %v\nStream: %v", err, serr)
	}
	if err != nil {
		return
	}
	var want []Message
	var keys []string
	for _, d := range ix.Destinations {
		want = append(want, d.Messages...)
		keys = append(keys, d.Key)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed %d messages, Read %d; first streamed %v", len(got), len(want), got[:min(len(got), 3)])
	}
	if !reflect.DeepEqual(began, keys) || !reflect.DeepEqual(done, keys) {
		t.Fatalf("destinations begun %v, done %v; Read has %v", began, done, keys)
	}
	for i, o := range order { // begin, its messages, done
		if strings.HasPrefix(o, "message ") && i > 0 && strings.HasPrefix(order[i-1], "done ") {
			t.Fatalf("a message after a destination was done: %v", order[max(i-3, 0):i+1])
		}
	}
	if len(sx.Destinations) != len(ix.Destinations) || sx.Fresh != ix.Fresh || !reflect.DeepEqual(sx.Meta, ix.Meta) || !reflect.DeepEqual(sx.PageFile, ix.PageFile) {
		t.Fatalf("Stream's index differs from Read's")
	}
	for i, d := range ix.Destinations {
		s := sx.Destinations[i]
		if s.Messages != nil || s.Indexes.MessageIDs != nil || s.Indexes.Locations != nil {
			t.Fatalf("%s: Stream kept messages", s.Key)
		}
		if s.Key != d.Key || s.NextSeq != d.NextSeq || !reflect.DeepEqual(s.Subscriptions, d.Subscriptions) || !reflect.DeepEqual(s.Stats, d.Stats) {
			t.Fatalf("%s: Stream's destination differs from Read's", d.Key)
		}
	}
	var notes []Note
	for _, n := range ix.Notes {
		if !checkMessagesNote(n) {
			notes = append(notes, n)
		}
	}
	if !reflect.DeepEqual(notes, sx.Notes) {
		t.Fatalf("notes: Read (without its message checks) %v, Stream %v", notes, sx.Notes)
	}
	if !reflect.DeepEqual(sx.shape, ix.shape) {
		t.Fatalf("Stream read other structures than Read: %+v, %+v", sx.shape, ix.shape)
	}
}

// fixtureIndex is the index files of a fixture store.
type fixtureIndex struct {
	dir              string
	data, redo, free []byte
}

// fixtureIndexes are the index files of every fixture store that has
// db.data (a missing db.redo or db.free: nil).
func fixtureIndexes() []fixtureIndex {
	root := brokertest.RepoRoot()
	var out []fixtureIndex
	for _, pattern := range []string{"testdata/stores/*/store", "refgraph/testdata/*/store"} {
		dirs, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, d := range dirs {
			data, err := os.ReadFile(filepath.Join(d, "db.data"))
			if err != nil {
				continue
			}
			redo, _ := os.ReadFile(filepath.Join(d, "db.redo"))
			free, _ := os.ReadFile(filepath.Join(d, "db.free"))
			out = append(out, fixtureIndex{d, data, redo, free})
		}
	}
	return out
}

// checkMessagesNote: a note checkMessages makes.
func checkMessagesNote(n Note) bool {
	return n.Kind == Mismatch && (strings.HasPrefix(n.Text, "message-id index: ") || strings.HasPrefix(n.Text, "location index: ") ||
		strings.Contains(n.Text, "sequences appear in more than one priority class"))
}

// TestStreamAgreesWithRead: on every fixture store's index (and the
// damaged variants the table tests make), Stream gives what Read gives.
func TestStreamAgreesWithRead(t *testing.T) {
	n := 0
	for _, fx := range fixtureIndexes() {
		data, redo, free := fx.data, fx.redo, fx.free
		ix, err := Parse(data, redo, free)
		streamAgrees(t, data, redo, free, ix, err)
		n++
		// and damaged: a page of the order index's region overwritten
		for _, at := range []int{4096 + 3*len(data)/8, 4096 + len(data)/2} {
			if at+64 > len(data) {
				continue
			}
			bad := append([]byte(nil), data...)
			for i := at; i < at+64; i++ {
				bad[i] ^= 0x5a
			}
			ix, err := Parse(bad, redo, free)
			streamAgrees(t, bad, redo, free, ix, err)
		}
	}
	if n == 0 {
		t.Fatal("no fixture index found")
	}
	x := testIndex()
	ix, err := x.parse()
	streamAgrees(t, x.bytes(), x.redo, x.free, ix, err)
}

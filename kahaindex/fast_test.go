package kahaindex

import (
	"fmt"
	"reflect"
	"testing"
)

// recorded is what a sink was handed, as text, from its last Restart on.
type recorded struct {
	events   []string
	restarts int
}

func (r *recorded) sink() Sink {
	return Sink{
		Destination: func(d *Destination) { r.events = append(r.events, "begin "+d.Key) },
		Message: func(d *Destination, m *StreamMessage) {
			r.events = append(r.events, fmt.Sprintf("message %s %d %s %v %v", d.Key, m.Seq, m.ID, m.Loc, m.Class))
		},
		Done: func(d *Destination) {
			r.events = append(r.events, fmt.Sprintf("done %s %+v", d.Key, d.Subscriptions))
		},
		Restart: func() { r.events, r.restarts = nil, r.restarts+1 },
	}
}

// fastAgrees checks that StreamBytesFast gives what StreamBytes gives on
// data, redo and free: the same error, or the same sink calls (from the
// last Restart on) and the same index. It returns how often the sink was
// restarted.
func fastAgrees(t *testing.T, data, redo, free []byte) int {
	t.Helper()
	var want, got recorded
	wx, werr := StreamBytes(data, redo, free, want.sink())
	gx, gerr := StreamBytesFast(data, redo, free, got.sink())
	if fmt.Sprint(werr) != fmt.Sprint(gerr) {
		t.Fatalf("Stream: %v\nStreamFast: %v", werr, gerr)
	}
	if want.restarts != 0 || got.restarts > 1 {
		t.Fatalf("restarts: Stream %d, StreamFast %d", want.restarts, got.restarts)
	}
	if werr != nil {
		return got.restarts
	}
	if !reflect.DeepEqual(want.events, got.events) {
		n := 0
		for n < min(len(want.events), len(got.events)) && want.events[n] == got.events[n] {
			n++
		}
		t.Fatalf("sink calls differ after %d of %d (StreamFast %d): %q", n, len(want.events), len(got.events), want.events[n:min(n+2, len(want.events))])
	}
	if !reflect.DeepEqual(wx, gx) {
		t.Fatalf("StreamFast's index differs from Stream's:\n%+v\n%+v", wx, gx)
	}
	return got.restarts
}

// TestStreamFastAgreesWithStream: on every fixture store's index StreamFast
// gives what Stream gives without reading it twice; on damaged copies
// (bytes of the message-id and location indexes' region overwritten),
// what Stream gives, reading it again where its passes meet the damage.
func TestStreamFastAgreesWithStream(t *testing.T) {
	clean, redone := 0, 0
	for _, fx := range fixtureIndexes() {
		d, data, redo, free := fx.dir, fx.data, fx.redo, fx.free
		ix, err := Parse(data, redo, free)
		if restarts := fastAgrees(t, data, redo, free); err == nil && !ix.Fresh && len(ix.Notes) == 0 && len(ix.Destinations) > 0 {
			if restarts != 0 {
				t.Errorf("%s: a clean index read twice", d)
			}
			clean++
		}
		for at := 4096 + len(data)/64; at+64 <= len(data); at += len(data) / 32 {
			bad := append([]byte(nil), data...)
			for i := at; i < at+64; i++ {
				bad[i] ^= 0x5a
			}
			redone += fastAgrees(t, bad, redo, free)
		}
	}
	if clean == 0 || redone == 0 {
		t.Fatalf("%d clean indexes read in one go, %d damaged ones read again: the test reads neither path", clean, redone)
	}
	t.Logf("%d clean indexes, %d damaged copies read again", clean, redone)
	x := testIndex()
	fastAgrees(t, x.bytes(), x.redo, x.free)
}

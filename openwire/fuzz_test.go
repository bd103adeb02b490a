package openwire_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/jsonw"
	"github.com/kahafs/kahafs/openwire"
)

// FuzzDecodeMessage: any blob decodes without panic, within its bounds
// (a small MaxBodySize keeps inflation cheap); every error is a
// *DecodeError wrapping a sentinel at an offset inside what it names; the
// JSON of whatever decoded is valid, and so is a map or stream body file.
// And the input, read as the fields of a message (structuredMsg), makes a
// blob through the test encoder that decodes to those fields
// (checkRoundTrip). Seeds: every message of every real-broker fixture, and the synthetic
// messages of the unit tests.
func FuzzDecodeMessage(f *testing.F) {
	stores, _ := filepath.Glob(filepath.Join(brokertest.RepoRoot(), "testdata", "stores", "*", "store"))
	for _, dir := range stores {
		all, _ := fixtureMessages(f, dir)
		for i, b := range all {
			if i < 40 {
				f.Add(b.blob, uint8(11))
			}
		}
	}
	for _, m := range []msg{fullMsg(), {kind: 26, content: javaObject("a.B")}, {kind: 24, compressed: true, content: compressedBytes([]byte("xyz"))},
		{kind: 29, blobURL: "u"}, {kind: 25, dataStructure: 5}, {kind: 27, compressed: true, content: deflate([]byte{1, 1, 9, 0, 1, 'x'})}} {
		f.Add(m.build(), uint8(11))
	}
	old := fullMsg()
	old.version = 6
	f.Add(old.build(), uint8(6))
	sentinels := []error{openwire.ErrTruncated, openwire.ErrMalformed, openwire.ErrNotMessage, openwire.ErrUnsupportedVersion,
		openwire.ErrIncomplete, openwire.ErrInflate, openwire.ErrTooLarge}
	f.Fuzz(func(t *testing.T, blob []byte, version uint8) {
		checkRoundTrip(t, blob, version)
		m, err := openwire.Decoder{Version: int(version % 16), MaxBodySize: 1 << 20}.Decode(blob)
		for _, e := range []error{err, partErr(m, true), partErr(m, false)} {
			if e == nil {
				continue
			}
			var de *openwire.DecodeError
			if !errors.As(e, &de) {
				t.Fatalf("%T is not a *DecodeError: %v", e, e)
			}
			found := false
			for _, s := range sentinels {
				found = found || errors.Is(e, s)
			}
			if !found {
				t.Fatalf("no sentinel in %v", e)
			}
			if de.Offset < 0 || !de.Inflated && de.Offset > len(blob) || de.Inflated && de.Offset > 1<<20 {
				t.Fatalf("offset %d outside the blob (%d bytes): %v", de.Offset, len(blob), e)
			}
		}
		if m == nil {
			if err == nil {
				t.Fatal("no message and no error")
			}
			return
		}
		w := jsonw.Object(nil)
		m.AppendJSON(&w, err, openwire.JSONOptions{BodyLimit: 64})
		if out := w.End(); !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		body := m.AppendRawBody(nil)
		if m.Body.Err == nil && (m.Body.Kind == openwire.BodyMap || m.Body.Kind == openwire.BodyStream) && !json.Valid(body) {
			t.Fatalf("invalid body JSON: %s", body)
		}
	})
}

func partErr(m *openwire.Message, props bool) error {
	switch {
	case m == nil:
		return nil
	case props:
		return m.PropertiesErr
	}
	return m.Body.Err
}

// fuzzSource draws the fields of a structured message from fuzz input
// (zeros once it runs out).
type fuzzSource struct{ b []byte }

func (s *fuzzSource) u8() byte {
	if len(s.b) == 0 {
		return 0
	}
	v := s.b[0]
	s.b = s.b[1:]
	return v
}

func (s *fuzzSource) i64() int64 {
	var v uint64
	for i := 0; i < 8; i++ {
		v = v<<8 | uint64(s.u8())
	}
	return int64(v)
}

func (s *fuzzSource) i32() int32 { return int32(s.i64() >> 32) }

// str is a short printable ASCII string, "" as often as not.
func (s *fuzzSource) str() string {
	n := int(s.u8() % 12)
	out := make([]byte, n)
	for i := range out {
		out[i] = 0x20 + s.u8()%0x5f
	}
	return string(out)
}

// structuredMsg is a message the test encoder writes, its fields drawn
// from b; with the properties it carries, in order.
func structuredMsg(b []byte, version uint8) (msg, [][2]any) {
	s := &fuzzSource{b: b}
	m := msg{
		kind:          23 + s.u8()%7,
		version:       []int{6, 9, 10, 11, 12}[version%5],
		producerConn:  s.str(),
		dest:          s.str(),
		origDest:      s.str(),
		textView:      s.str(),
		seq:           s.i64(),
		groupID:       s.str(),
		groupSeq:      s.i32(),
		correlationID: s.str(),
		persistent:    s.u8()%2 == 1,
		expiration:    s.i64(),
		priority:      s.u8() % 10,
		replyTo:       s.str(),
		timestamp:     s.i64(),
		jmsType:       s.str(),
		redeliveries:  s.i32(),
		userID:        s.str(),
		brokerIn:      s.i64(),
		brokerOut:     s.i64(),
		groupFirst:    s.u8()%2 == 1,
		blobURL:       s.str(),
		blobMimeType:  s.str(),
	}
	if s.u8()%2 == 1 {
		m.localTx = 1 + int64(uint32(s.i32()))
	}
	if n := s.u8() % 4; n > 0 {
		m.brokerPath = make([]string, n-1)
		for i := range m.brokerPath {
			m.brokerPath[i] = s.str()
		}
	}
	switch m.kind {
	case 24:
		m.content = []byte(s.str())
	case 28:
		m.content = textContent(s.str())
	}
	var props [][2]any
	if n := int(s.u8() % 4); n > 0 {
		p := newPM(n)
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("p%d", i)
			p.name(name)
			if s.u8()%2 == 0 {
				v := s.i32()
				p.int_(v)
				props = append(props, [2]any{name, openwire.Value{Type: openwire.TypeInt, Int: int64(v)}})
			} else {
				v := s.str()
				p.string_(v)
				props = append(props, [2]any{name, openwire.Value{Type: openwire.TypeString, Str: v}})
			}
		}
		m.props = p.done()
	}
	return m, props
}

// checkRoundTrip: a message the test encoder writes decodes to what it
// was written from, field by field.
func checkRoundTrip(t *testing.T, b []byte, version uint8) {
	m0, props := structuredMsg(b, version)
	blob := m0.build()
	m, err := openwire.Decoder{Version: m0.version}.Decode(blob)
	if err != nil {
		t.Fatalf("%+v: %v", m0, err)
	}
	fail := func(field string, got, want any) {
		t.Helper()
		t.Fatalf("%s: decoded %#v, written %#v (message %+v)", field, got, want, m0)
	}
	dest := func(typ, name string) string {
		if name == "" {
			return ""
		}
		return typ + "://" + name
	}
	v10 := m0.version >= 10
	textView := ""
	if v10 {
		textView = m0.textView
	}
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"complete", m.Complete, true},
		{"kind", m.Kind, openwire.Kind(m0.kind)},
		{"producer", m.ProducerID.String(), m0.producerConn + ":1:1"},
		{"destination", m.Destination.String(), dest("queue", m0.dest)},
		{"original destination", m.OriginalDestination.String(), dest("queue", m0.origDest)},
		{"reply to", m.ReplyTo.String(), dest("topic", m0.replyTo)},
		{"transaction", m.TransactionID == nil, m0.localTx == 0},
		{"message id text view", m.MessageID.TextView, textView},
		{"producer sequence", m.MessageID.ProducerSequence, m0.seq},
		{"group", m.GroupID, m0.groupID},
		{"group sequence", m.GroupSequence, m0.groupSeq},
		{"correlation id", m.CorrelationID, m0.correlationID},
		{"persistent", m.Persistent, m0.persistent},
		{"expiration", m.Expiration, m0.expiration},
		{"priority", m.Priority, int8(m0.priority)},
		{"timestamp", m.Timestamp, m0.timestamp},
		{"type", m.Type, m0.jmsType},
		{"redeliveries", m.RedeliveryCounter, m0.redeliveries},
		{"broker path", fmt.Sprintf("%q", m.BrokerPath), fmt.Sprintf("%q", m0.brokerPath)},
		{"user", m.UserID, m0.userID},
		{"broker in", m.BrokerInTime, m0.brokerIn},
		{"broker out", m.BrokerOutTime, m0.brokerOut},
		{"group first", m.JMSXGroupFirstForConsumer, v10 && m0.groupFirst},
		{"blob", m.Blob != nil, m0.kind == 29},
		{"properties error", m.PropertiesErr, nil},
		{"body error", m.Body.Err, nil},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			fail(c.field, c.got, c.want)
		}
	}
	if m0.localTx != 0 && (m.TransactionID.XA || m.TransactionID.ConnectionID != m0.producerConn || m.TransactionID.Value != m0.localTx) {
		fail("transaction", m.TransactionID, m0.localTx)
	}
	if m0.kind == 29 && (m.Blob.RemoteBlobURL != m0.blobURL || m.Blob.MimeType != m0.blobMimeType || !m.Blob.DeletedByBroker) {
		fail("blob", m.Blob, [2]string{m0.blobURL, m0.blobMimeType})
	}
	if got := m.Properties.Len(); got != len(props) {
		fail("properties", got, len(props))
	}
	for _, p := range props {
		if v, ok := m.Properties.Get(p[0].(string)); !ok || !reflect.DeepEqual(v, p[1]) {
			fail("property "+p[0].(string), v, p[1])
		}
	}
	switch m0.kind {
	case 24:
		if m.Body.Kind != openwire.BodyBytes || string(m.Body.Bytes) != string(m0.content) {
			fail("bytes body", m.Body, m0.content)
		}
	case 28:
		if m.Body.Kind != openwire.BodyText || m.Body.StoredSize != len(m0.content) || string(textContent(m.Body.Text)) != string(m0.content) {
			fail("text body", m.Body, m0.content)
		}
	}
}

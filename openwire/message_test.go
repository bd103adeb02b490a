package openwire_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/kahafs/kahafs/internal/jsonw"
	"github.com/kahafs/kahafs/openwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fullMsg() msg {
	return msg{kind: 28, producerConn: "ID:host-1-2-3:1", dest: "Q.A", localTx: 9, origDest: "Q.SRC", seq: 5,
		groupID: "g", groupSeq: 2, correlationID: "c-1", persistent: true, expiration: 1796133993447 + 1000,
		priority: 7, replyTo: "T.R", timestamp: 1796133993447, jmsType: "kind.X", content: textContent("hello"),
		props: newPM(1).raw().name2("k", func(p *pm) { p.int_(42) }), redeliveries: 2, brokerPath: []string{"b1", "b2"},
		userID: "admin", brokerIn: 1796133993448, brokerOut: 1796133993449, groupFirst: true}
}

// name2 appends an entry: its name and, through v, its value.
func (p *pm) name2(name string, v func(*pm)) []byte { p.name(name); v(p); return p.b }

func TestDecodeHeaders(t *testing.T) {
	for _, v := range []int{6, 9, 10, 11, 12} {
		m0 := fullMsg()
		m0.version = v
		blob := m0.build()
		m, err := openwire.Decoder{Version: v}.Decode(blob)
		require.NoError(t, err, "version %d", v)
		assert.True(t, m.Complete)
		assert.Equal(t, openwire.KindTextMessage, m.Kind)
		assert.Equal(t, "TextMessage", m.Kind.String())
		assert.Equal(t, "ID:host-1-2-3:1:1:1", m.ProducerID.String())
		assert.Equal(t, "queue://Q.A", m.Destination.String())
		assert.Equal(t, "TX:ID:host-1-2-3:1:9", m.TransactionID.String())
		assert.Equal(t, "queue://Q.SRC", m.OriginalDestination.String())
		assert.Equal(t, "ID:host-1-2-3:1:1:1:5", m.MessageID.String())
		assert.Nil(t, m.OriginalTransactionID)
		assert.Equal(t, "g", m.GroupID)
		assert.Equal(t, int32(2), m.GroupSequence)
		assert.Equal(t, "c-1", m.CorrelationID)
		assert.True(t, m.Persistent)
		assert.Equal(t, int64(1796133994447), m.Expiration)
		assert.Equal(t, int8(7), m.Priority)
		assert.Equal(t, "topic://T.R", m.ReplyTo.String())
		assert.Equal(t, int64(1796133993447), m.Timestamp)
		assert.Equal(t, "kind.X", m.Type)
		assert.Equal(t, int32(2), m.RedeliveryCounter)
		assert.True(t, m.Redelivered())
		assert.Equal(t, []string{"b1", "b2"}, m.BrokerPath)
		assert.Equal(t, "admin", m.UserID)
		assert.Equal(t, int64(1796133993448), m.BrokerInTime)
		assert.Equal(t, int64(1796133993449), m.BrokerOutTime)
		assert.Equal(t, v >= 10, m.JMSXGroupFirstForConsumer, "only version 10 and later have the flag")
		p, ok := m.Properties.Get("k")
		require.True(t, ok)
		assert.Equal(t, openwire.Value{Type: openwire.TypeInt, Int: 42}, p)
		assert.Equal(t, openwire.BodyText, m.Body.Kind)
		assert.Equal(t, "hello", m.Body.Text)
		assert.Equal(t, 9, m.Body.StoredSize)
	}
}

func TestDecodeTextView(t *testing.T) {
	m0 := fullMsg()
	m0.textView = "ID:from-stomp-42"
	m, err := openwire.DecodeMessage(m0.build())
	require.NoError(t, err)
	assert.Equal(t, "ID:from-stomp-42", m.MessageID.String())
}

// TestDecodeVersions: the layout depends on the store's version; decoded
// with the wrong one a message does not fit, and a version outside 3..12
// is refused after the fields every version shares.
func TestDecodeVersions(t *testing.T) {
	v11 := fullMsg().build()
	_, err := openwire.Decoder{Version: 6}.Decode(v11)
	assert.ErrorIs(t, err, openwire.ErrMalformed, "a v11 blob read as v6: %v", err)
	old := fullMsg()
	old.version = 6
	_, err = openwire.DecodeMessage(old.build())
	assert.Error(t, err, "a v6 blob read as v11")

	m, err := openwire.Decoder{Version: 2}.Decode(v11)
	require.ErrorIs(t, err, openwire.ErrUnsupportedVersion)
	assert.Contains(t, err.Error(), "version 2 (this decoder reads 3 to 12)")
	require.NotNil(t, m)
	assert.Equal(t, "queue://Q.A", m.Destination.String(), "the shared fields are decoded")
	assert.Equal(t, "queue://Q.SRC", m.OriginalDestination.String())
	assert.Nil(t, m.MessageID)
	assert.False(t, m.Complete)
}

// corrupt returns a copy of b with f applied, the size prefix fixed.
func corrupt(b []byte, f func([]byte) []byte) []byte {
	c := f(append([]byte(nil), b...))
	binary.BigEndian.PutUint32(c, uint32(len(c)-4))
	return c
}

// TestDecodeErrors: every way a blob can be wrong is a *DecodeError
// wrapping one sentinel, at the right place.
func TestDecodeErrors(t *testing.T) {
	good := fullMsg().build()
	headerEnd := len(fullMsg().build()) // offsets below are found by building prefixes
	_ = headerEnd
	deep := &pm{}
	deep.count(1)
	deep.name("d")
	for i := 0; i < 40; i++ {
		deep.mapOf(1)
		deep.name("d")
	}
	deep.null()
	for _, tc := range []struct {
		name     string
		blob     []byte
		sentinel error
		field    string
		offset   int  // -1: not checked
		partial  bool // a message is returned
		propsErr bool
		bodyErr  bool
	}{
		{"empty", nil, openwire.ErrTruncated, "size prefix", 0, false, false, false},
		{"size prefix", append(append([]byte(nil), good...), 0), openwire.ErrMalformed, "size prefix", 0, false, false, false},
		{"not a message", corrupt(good, func(b []byte) []byte { b[4] = 22; return b }), openwire.ErrNotMessage, "type", 4, false, false, false},
		{"unknown destination type", corrupt(good, func(b []byte) []byte { b[4+1+4+1+1+1+1+2+15+8+8+1] = 99; return b }),
			openwire.ErrMalformed, "destination", 4 + 1 + 4 + 1 + 1 + 1 + 1 + 2 + 15 + 8 + 8 + 1, true, false, false},
		{"truncated", corrupt(good, func(b []byte) []byte { return b[:60] }), openwire.ErrTruncated, "", -1, true, false, false},
		{"trailing bytes", corrupt(good, func(b []byte) []byte { return append(b, 0, 0) }), openwire.ErrMalformed, "jmsXGroupFirstForConsumer", len(good), true, false, false},
		{"negative content length", build(func(m *msg) { m.content = []byte{} }, func(b []byte) []byte {
			i := indexSeq(b, []byte{0, 0, 0, 0})
			binary.BigEndian.PutUint32(b[i:], 0xFFFFFFF0)
			return b
		}), openwire.ErrMalformed, "content", -1, true, false, false},
		{"content larger than the blob", build(func(m *msg) { m.content = []byte{} }, func(b []byte) []byte {
			i := indexSeq(b, []byte{0, 0, 0, 0})
			binary.BigEndian.PutUint32(b[i:], 0x7FFFFFFF)
			return b
		}), openwire.ErrTruncated, "content", -1, true, false, false},
		{"unknown property type", build(func(m *msg) { m.props = newPM(1).raw().name2("x", func(p *pm) { p.u8(77) }) }, nil),
			openwire.ErrMalformed, "properties", -1, true, true, false},
		{"huge property map", build(func(m *msg) { m.props = newPM(0x7FFFFFFF).done() }, nil), openwire.ErrTruncated, "properties", -1, true, true, false},
		{"maps nested too deep", build(func(m *msg) { m.props = deep.done() }, nil), openwire.ErrMalformed, "properties", -1, true, true, false},
		{"properties trailing bytes", build(func(m *msg) { m.props = newPM(0).raw(1).done() }, nil), openwire.ErrMalformed, "properties", -1, true, true, false},
		{"text longer than the body", build(func(m *msg) { m.content = textContent("hello")[:6] }, nil), openwire.ErrTruncated, "body", -1, true, false, true},
		{"compressed garbage", build(func(m *msg) { m.compressed = true; m.content = []byte("garbage") }, nil), openwire.ErrInflate, "body", -1, true, false, true},
		{"embedded data structure", build(func(m *msg) { m.dataStructure = 2 }, nil), openwire.ErrIncomplete, "dataStructure", -1, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := openwire.DecodeMessage(tc.blob)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.sentinel)
			var de *openwire.DecodeError
			require.True(t, errors.As(err, &de), "%T", err)
			if tc.field != "" {
				assert.Equal(t, tc.field, de.Field, "%v", err)
			}
			if tc.offset >= 0 {
				assert.Equal(t, tc.offset, de.Offset, "%v", err)
			}
			assert.LessOrEqual(t, de.Offset, len(tc.blob))
			assert.Contains(t, err.Error(), "at byte ")
			assert.Equal(t, tc.partial, m != nil)
			if m == nil {
				return
			}
			assert.Equal(t, tc.propsErr, m.PropertiesErr != nil, "properties error: %v", m.PropertiesErr)
			assert.Equal(t, tc.bodyErr, m.Body.Err != nil, "body error: %v", m.Body.Err)
			if tc.propsErr || tc.bodyErr {
				assert.Equal(t, "queue://Q.A", m.Destination.String(), "the headers stay")
			}
			if tc.bodyErr {
				assert.Equal(t, m.Content, m.Body.Bytes, "the content as stored")
			}
		})
	}
}

// build is fullMsg changed by f, built, then changed by g (size prefix
// fixed).
func build(f func(*msg), g func([]byte) []byte) []byte {
	m := fullMsg()
	f(&m)
	b := m.build()
	if g != nil {
		b = corrupt(b, g)
	}
	return b
}

// indexSeq finds the content's length field: the first occurrence of
// seq after the JMSType "kind.X".
func indexSeq(b, seq []byte) int {
	i := strings.Index(string(b), "kind.X") + len("kind.X") + 1 // + the content's present flag
	return i + strings.Index(string(b[i:]), string(seq))
}

// TestDecodeBoundedAllocations: lengths and counts in a blob cannot make
// the decoder allocate more than the blob holds.
func TestDecodeBoundedAllocations(t *testing.T) {
	hostile := [][]byte{
		build(func(m *msg) { m.props = newPM(0x7FFFFFFF).done() }, nil),
		build(func(m *msg) { m.props = newPM(1).raw().name2("l", func(p *pm) { p.listOf(0x7FFFFFFF) }) }, nil),
		build(func(m *msg) { m.props = newPM(1).raw().name2("b", func(p *pm) { p.u8(10); p.i32(0x7FFFFFFF) }) }, nil),
		build(func(m *msg) { m.kind = 24; m.compressed = true; m.content = []byte{0x7F, 0xFF, 0xFF, 0xFF, 0x78, 0x9c} }, nil),
		build(func(m *msg) { m.brokerPath = []string{} }, func(b []byte) []byte {
			// after brokerPath: arrival, userId "admin", 3 flags and no
			// cluster, brokerInTime, brokerOutTime, jmsXGroupFirstForConsumer
			i := len(b) - (8 + 8 + 1 + 1 + 1 + 8 + 8 + 1) - 3
			binary.BigEndian.PutUint16(b[i+1:], 0x7FFF)
			return b
		}),
	}
	for i, b := range hostile {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := openwire.DecodeMessage(b)
		runtime.ReadMemStats(&after)
		assert.Error(t, err, "hostile blob %d", i)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10), "hostile blob %d: %v", i, err)
	}
}

func TestDecodeBodies(t *testing.T) {
	mp := newPM(3)
	mp.name("s")
	mp.bigString(strings.Repeat("x", 9000))
	mp.name("n")
	mp.mapOf(-1) // a null map, as Java reads it
	mp.name("l")
	mp.listOf(2)
	mp.char(0x3A9)
	mp.float(float32(math.Inf(1)))
	st := &pm{}
	st.boolean(true)
	st.bytes_([]byte{1, 2})
	st.string_("s")
	st.double(math.NaN())
	for _, tc := range []struct {
		name  string
		m     func(*msg)
		check func(t *testing.T, b openwire.Body)
	}{
		{"text null", func(m *msg) { m.content = []byte{0xFF, 0xFF, 0xFF, 0xFF} }, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, openwire.BodyNone, b.Kind)
		}},
		{"text modified UTF-8", func(m *msg) { m.content = textContent("a\xc0\x80\xed\xa0\xbd\xed\xb8\x80") }, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, "a\x00\U0001F600", b.Text)
		}},
		{"text compressed", func(m *msg) { m.compressed = true; m.content = deflate(textContent("zipped")) }, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, "zipped", b.Text)
			assert.True(t, b.Compressed)
		}},
		{"bytes compressed", func(m *msg) { m.kind = 24; m.compressed = true; m.content = compressedBytes([]byte("raw\x00bytes")) }, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, []byte("raw\x00bytes"), b.Bytes)
		}},
		{"bytes compressed, stream longer than said", func(m *msg) {
			m.kind = 24
			m.compressed = true
			m.content = compressedBytes([]byte("0123456789"))
			binary.BigEndian.PutUint32(m.content, 4)
		}, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, []byte("0123"), b.Bytes, "as the client: no more than the length says")
		}},
		{"map", func(m *msg) { m.kind = 25; m.content = mp.done() }, func(t *testing.T, b openwire.Body) {
			require.Equal(t, openwire.BodyMap, b.Kind)
			s, _ := b.Map.Get("s")
			assert.Len(t, s.Str, 9000)
			n, ok := b.Map.Get("n")
			assert.True(t, ok)
			assert.Nil(t, n.Map)
			l, _ := b.Map.Get("l")
			assert.Equal(t, []openwire.Value{{Type: openwire.TypeChar, Int: 0x3A9}, {Type: openwire.TypeFloat, Float: math.Inf(1)}}, l.List)
		}},
		{"stream compressed", func(m *msg) { m.kind = 27; m.compressed = true; m.content = deflate(st.done()) }, func(t *testing.T, b openwire.Body) {
			require.Equal(t, openwire.BodyStream, b.Kind)
			require.Len(t, b.Stream, 4)
			assert.True(t, b.Stream[0].Bool())
			assert.Equal(t, []byte{1, 2}, b.Stream[1].Bytes)
			assert.True(t, math.IsNaN(b.Stream[3].Float))
		}},
		{"object", func(m *msg) { m.kind = 26; m.content = javaObject("com.example.Order") }, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, "com.example.Order", b.ClassName)
		}},
		{"object compressed", func(m *msg) { m.kind = 26; m.compressed = true; m.content = deflate(javaObject("com.example.Order")) }, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, "com.example.Order", b.ClassName)
			assert.Equal(t, javaObject("com.example.Order"), b.Bytes, "the inflated stream")
		}},
		{"plain message with content", func(m *msg) { m.kind = 23; m.content = []byte("??") }, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, openwire.BodyUnknown, b.Kind)
			assert.Equal(t, []byte("??"), b.Bytes)
		}},
		{"no content", func(m *msg) { m.kind = 25; m.content = nil }, func(t *testing.T, b openwire.Body) {
			assert.Equal(t, openwire.BodyNone, b.Kind)
			assert.Equal(t, -1, b.StoredSize)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := openwire.DecodeMessage(build(tc.m, nil))
			require.NoError(t, err)
			tc.check(t, m.Body)
		})
	}
}

func TestDecodeBlobMessage(t *testing.T) {
	m, err := openwire.DecodeMessage(build(func(m *msg) {
		m.kind = 29
		m.content = nil
		m.blobURL = "http://blobs/1"
		m.blobMimeType = "text/plain"
	}, nil))
	require.NoError(t, err)
	require.NotNil(t, m.Blob)
	assert.Equal(t, openwire.BlobInfo{RemoteBlobURL: "http://blobs/1", MimeType: "text/plain", DeletedByBroker: true}, *m.Blob)
}

func TestBodyTooLarge(t *testing.T) {
	big := deflate(textContent(strings.Repeat("a", 1<<20)))
	blob := build(func(m *msg) { m.compressed = true; m.content = big }, nil)
	m, err := openwire.Decoder{MaxBodySize: 1 << 19}.Decode(blob)
	assert.ErrorIs(t, err, openwire.ErrTooLarge)
	assert.Equal(t, big, m.Body.Bytes)
	m, err = openwire.Decoder{MaxBodySize: 2 << 20}.Decode(blob)
	require.NoError(t, err)
	assert.Len(t, m.Body.Text, 1<<20)
	// A compressed BytesMessage says its size first: refused before inflating.
	blob = build(func(m *msg) { m.kind = 24; m.compressed = true; m.content = compressedBytes(make([]byte, 100)) }, nil)
	_, err = openwire.Decoder{MaxBodySize: 99}.Decode(blob)
	assert.ErrorIs(t, err, openwire.ErrTooLarge)
}

func TestJavaClassName(t *testing.T) {
	withHeader := func(b ...byte) []byte { return append([]byte{0xAC, 0xED, 0, 5}, b...) }
	utf := func(s string) []byte { e := &enc{}; e.utf(s); return e.b }
	for _, tc := range []struct {
		name, want string
		stream     []byte
		err        bool
	}{
		{"object", "com.example.Order", javaObject("com.example.Order"), false},
		{"string", "java.lang.String", withHeader(0x74, 0, 1, 'x'), false},
		{"long string", "java.lang.String", withHeader(0x7C), false},
		{"array", "[Ljava.lang.String;", append(withHeader(0x75, 0x72), utf("[Ljava.lang.String;")...), false},
		{"enum", "java.time.DayOfWeek", append(withHeader(0x7E, 0x72), utf("java.time.DayOfWeek")...), false},
		{"class", "java.lang.Class", withHeader(0x76), false},
		{"after a reset", "a.B", append(withHeader(0x79, 0x73, 0x72), utf("a.B")...), false},
		{"proxy", "proxy(a.I,b.J)", append(append(withHeader(0x73, 0x7D, 0, 0, 0, 2), utf("a.I")...), utf("b.J")...), false},
		{"null", "", withHeader(0x70), false},
		{"not serialization", "", []byte("{\"json\":1}"), true},
		{"version", "", []byte{0xAC, 0xED, 0, 4, 0x73}, true},
		{"block data", "", withHeader(0x77), true},
		{"truncated name", "", withHeader(0x73, 0x72, 0, 50, 'a'), true},
		{"hostile proxy", "", withHeader(0x73, 0x7D, 0x7F, 0xFF, 0xFF, 0xFF), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := openwire.DecodeMessage(build(func(m *msg) { m.kind = 26; m.content = tc.stream }, nil))
			require.NoError(t, err, "a class name that cannot be read is no decoding error")
			assert.Equal(t, openwire.BodyObject, m.Body.Kind)
			assert.Equal(t, tc.want, m.Body.ClassName)
			assert.Equal(t, tc.err, m.Body.ClassNameErr != nil, "%v", m.Body.ClassNameErr)
			if tc.err {
				var de *openwire.DecodeError
				assert.ErrorAs(t, m.Body.ClassNameErr, &de)
				assert.Equal(t, "object stream header", de.Field)
			}
		})
	}
}

func TestModifiedUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                      "plain",
		"\xc3\xa9t\xc3\xa9":          "été",
		"a\xc0\x80b":                 "a\x00b",
		"\xed\xa0\xbd\xed\xb8\x80":   "\U0001F600",
		"lone \xed\xa0\x80":          "lone \ufffd",
		"bad \xff":                   "bad \xff", // no C0/ED: kept, JSON writing replaces it
		"short \xc0":                 "short \ufffd",
		"\xed\xa0\xbd":               "\ufffd",
		"\xe2\x9c\x93 \xc0\x80 done": "✓ \x00 done",
	} {
		assert.Equal(t, want, openwire.ModifiedUTF8([]byte(in)), "%q", in)
	}
}

// render returns m's JSON members in an object.
func render(t *testing.T, m *openwire.Message, err error, limit int) map[string]any {
	t.Helper()
	w := jsonw.Object(nil)
	m.AppendJSON(&w, err, openwire.JSONOptions{BodyLimit: limit})
	out := w.End()
	require.True(t, json.Valid(out), "%s", out)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v))
	return v
}

func TestJSON(t *testing.T) {
	m, err := openwire.DecodeMessage(fullMsg().build())
	require.NoError(t, err)
	v := render(t, m, err, 0)
	h := v["headers"].(map[string]any)
	assert.Equal(t, "TextMessage", h["kind"])
	assert.Equal(t, "ID:host-1-2-3:1:1:1:5", h["JMSMessageID"])
	assert.Equal(t, "queue://Q.A", h["JMSDestination"])
	assert.Equal(t, "2026-12-01T14:06:33.447Z", h["JMSTimestamp"])
	assert.Equal(t, float64(1796133993447), h["JMSTimestampMillis"])
	assert.Equal(t, "2026-12-01T14:06:34.447Z", h["JMSExpiration"])
	assert.Equal(t, float64(7), h["JMSPriority"])
	assert.Equal(t, "PERSISTENT", h["JMSDeliveryMode"])
	assert.Equal(t, true, h["JMSRedelivered"])
	assert.Equal(t, float64(2), h["redeliveryCounter"])
	assert.Equal(t, "c-1", h["JMSCorrelationID"])
	assert.Equal(t, "kind.X", h["JMSType"])
	assert.Equal(t, "topic://T.R", h["JMSReplyTo"])
	assert.Equal(t, "g", h["JMSXGroupID"])
	assert.Equal(t, float64(2), h["JMSXGroupSeq"])
	assert.Equal(t, "admin", h["JMSXUserID"])
	assert.Equal(t, "queue://Q.SRC", h["originalDestination"])
	assert.Equal(t, "TX:ID:host-1-2-3:1:9", h["transactionId"])
	assert.Equal(t, []any{"b1", "b2"}, h["brokerPath"])
	assert.Equal(t, map[string]any{"k": map[string]any{"type": "int", "value": float64(42)}}, v["properties"])
	assert.Equal(t, map[string]any{"type": "text", "compressed": false, "storedSize": float64(9), "size": float64(5), "text": "hello", "truncated": false}, v["body"])

	// Without expiration nor timestamp: null, the milliseconds 0.
	m, err = openwire.DecodeMessage(build(func(m *msg) { m.expiration, m.timestamp, m.persistent = 0, 0, false }, nil))
	require.NoError(t, err)
	h = render(t, m, err, 0)["headers"].(map[string]any)
	assert.Contains(t, h, "JMSExpiration")
	assert.Nil(t, h["JMSExpiration"])
	assert.Nil(t, h["JMSTimestamp"])
	assert.Equal(t, float64(0), h["JMSExpirationMillis"])
	assert.Equal(t, "NON_PERSISTENT", h["JMSDeliveryMode"])
}

func TestJSONCuts(t *testing.T) {
	text := strings.Repeat("é", 10) // 20 bytes
	m, err := openwire.DecodeMessage(build(func(m *msg) { m.content = textContent(text) }, nil))
	require.NoError(t, err)
	b := render(t, m, err, 5)["body"].(map[string]any)
	assert.Equal(t, "éé", b["text"], "cut at a character boundary")
	assert.Equal(t, float64(20), b["size"])
	assert.Equal(t, true, b["truncated"])

	m, err = openwire.DecodeMessage(build(func(m *msg) { m.kind = 24; m.content = []byte("0123456789") }, nil))
	require.NoError(t, err)
	b = render(t, m, err, 4)["body"].(map[string]any)
	assert.Equal(t, "MDEyMw==", b["base64"])
	assert.Equal(t, float64(10), b["size"])
	assert.Equal(t, true, b["truncated"])

	mp := newPM(3)
	mp.name("a")
	mp.string_("0123456789")
	mp.name("b")
	mp.bytes_([]byte("0123456789"))
	mp.name("c")
	mp.int_(1)
	m, err = openwire.DecodeMessage(build(func(m *msg) { m.kind = 25; m.content = mp.done() }, nil))
	require.NoError(t, err)
	b = render(t, m, err, 8)["body"].(map[string]any)
	assert.Equal(t, true, b["truncated"])
	assert.Equal(t, float64(3), b["entries"])
	entries := b["map"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "string", "value": "0123456", "size": float64(10), "truncated": true}, entries["a"])
	assert.NotContains(t, entries, "c", "nothing left for later entries")
	full := render(t, m, err, 0)["body"].(map[string]any)
	assert.Equal(t, false, full["truncated"])
	assert.Len(t, full["map"], 3)
	assert.Equal(t, float64(len(m.AppendRawBody(nil))), full["size"], "size: of the .body file")
}

func TestJSONValues(t *testing.T) {
	p := newPM(6)
	p.name("nan")
	p.double(math.NaN())
	p.name("inf")
	p.float(float32(math.Inf(-1)))
	p.name("surrogate")
	p.char(0xD800)
	p.name("nul")
	p.raw(9, 0, 4, 'a', 0xC0, 0x80, 'b')
	p.name("nested")
	p.listOf(1)
	p.mapOf(1)
	p.name("x")
	p.null()
	p.name("q\"uote")
	p.boolean(true)
	m, err := openwire.DecodeMessage(build(func(m *msg) { m.props = p.done() }, nil))
	require.NoError(t, err)
	props := render(t, m, err, 0)["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "double", "value": "NaN"}, props["nan"])
	assert.Equal(t, map[string]any{"type": "float", "value": "-Infinity"}, props["inf"])
	assert.Equal(t, map[string]any{"type": "char", "value": "\ufffd", "code": float64(0xD800)}, props["surrogate"])
	assert.Equal(t, map[string]any{"type": "string", "value": "a\x00b"}, props["nul"])
	assert.Equal(t, map[string]any{"type": "list", "value": []any{map[string]any{"type": "map", "value": map[string]any{"x": map[string]any{"type": "null", "value": nil}}}}}, props["nested"])
	assert.Equal(t, map[string]any{"type": "boolean", "value": true}, props["q\"uote"])
}

func TestJSONErrors(t *testing.T) {
	blob := build(func(m *msg) { m.props = newPM(1).raw().name2("x", func(p *pm) { p.u8(77) }) }, nil)
	m, err := openwire.DecodeMessage(blob)
	require.Error(t, err)
	v := render(t, m, err, 0)
	assert.Equal(t, map[string]any{}, v["properties"])
	assert.Contains(t, v["propertiesError"], "unknown value type 77")
	assert.NotContains(t, v["headers"], "error", "a properties error is not a header error")
	assert.Equal(t, "hello", v["body"].(map[string]any)["text"])

	blob = build(func(m *msg) { m.compressed = true; m.content = []byte("garbage") }, nil)
	m, err = openwire.DecodeMessage(blob)
	require.Error(t, err)
	b := render(t, m, err, 0)["body"].(map[string]any)
	assert.Contains(t, b["error"], "does not inflate")
	assert.Equal(t, "Z2FyYmFnZQ==", b["base64"], "the content as stored")
	assert.Equal(t, []byte("garbage"), m.AppendRawBody(nil))

	m, err = openwire.DecodeMessage(corrupt(fullMsg().build(), func(b []byte) []byte { return b[:60] }))
	require.Error(t, err)
	v = render(t, m, err, 0)
	assert.Contains(t, v["headers"].(map[string]any)["error"], "truncated")
	assert.NotContains(t, v, "body")
}

func TestAppendRawBody(t *testing.T) {
	mp := newPM(4)
	mp.name("n")
	mp.int_(1)
	mp.name("b")
	mp.bytes_([]byte{0xff})
	mp.name("c")
	mp.char('z')
	mp.name("f")
	mp.float(1.5)
	m, err := openwire.DecodeMessage(build(func(m *msg) { m.kind = 25; m.content = mp.done() }, nil))
	require.NoError(t, err)
	raw := m.AppendRawBody(nil)
	assert.Equal(t, "{\n  \"n\": 1,\n  \"b\": \"/w==\",\n  \"c\": \"z\",\n  \"f\": 1.5\n}\n", string(raw))

	m, err = openwire.DecodeMessage(build(func(m *msg) { m.kind = 23; m.content = nil }, nil))
	require.NoError(t, err)
	assert.Empty(t, m.AppendRawBody(nil))
	m, err = openwire.DecodeMessage(build(func(m *msg) { m.content = textContent("a\xc0\x80") }, nil))
	require.NoError(t, err)
	assert.Equal(t, []byte("a\x00"), m.AppendRawBody(nil), "text as UTF-8")
}

// TestShareText: with Decoder.ShareText a TextMessage's plain text is the
// blob's own bytes, not a copy; a text that modified UTF-8 spells
// otherwise (a NUL, a supplementary character) is converted as without
// it. Both read the same.
func TestShareText(t *testing.T) {
	for _, c := range []struct{ stored, want string }{
		{"hello, plain text", "hello, plain text"},
		{"nul\xC0\x80inside", "nul\x00inside"},
		{"emoji \xED\xA0\xBD\xED\xB8\x80", "emoji \U0001F600"},
		{"", ""},
	} {
		m0 := fullMsg()
		m0.content = textContent(c.stored)
		b := m0.build()
		plain, err := openwire.Decoder{}.Decode(b)
		require.NoError(t, err)
		shared, err := openwire.Decoder{ShareText: true}.Decode(b)
		require.NoError(t, err)
		require.Equal(t, openwire.BodyText, shared.Body.Kind, "%q", c.stored)
		assert.Equal(t, c.want, plain.Body.Text)
		assert.Equal(t, c.want, shared.Body.Text)
		inBlob := func(s string) bool {
			if s == "" {
				return false
			}
			p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
			start := uintptr(unsafe.Pointer(&b[0]))
			return p >= start && p < start+uintptr(len(b))
		}
		assert.False(t, inBlob(plain.Body.Text), "%q: a copy without ShareText", c.stored)
		assert.Equal(t, c.stored == c.want && c.want != "", inBlob(shared.Body.Text), "%q: the blob's bytes with ShareText when plain", c.stored)
	}
}

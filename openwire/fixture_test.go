package openwire_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/kahafs/kahafs/openwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureBlob is a message blob of a fixture with where it is.
type fixtureBlob struct {
	loc  codec.Location
	blob []byte
}

// fixtureMessages returns the message blobs of every ADD and UPDATE
// command of a store, and per message id the last one (what the broker
// recovers: an UPDATE replaces the message).
func fixtureMessages(t testing.TB, dir string) ([]fixtureBlob, map[string]fixtureBlob) {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	var all []fixtureBlob
	last := map[string]fixtureBlob{}
	for _, fi := range st.Files {
		_, err := codec.ScanFile(fi, codec.ReadOptions{}, func(rec codec.Record, c *codec.Command) error {
			if c.Type == codec.AddMessageCommand || c.Type == codec.UpdateMessageCommand {
				b := fixtureBlob{rec.Loc, bytes.Clone(c.Message)}
				all = append(all, b)
				last[string(c.MessageID)] = b
			}
			return nil
		})
		require.NoError(t, err)
	}
	return all, last
}

// TestFixturesDecode decodes every message of every real-broker fixture:
// no error, and the header fields the journal command repeats agree.
func TestFixturesDecode(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			all, _ := fixtureMessages(t, fx.StoreDir)
			require.NotEmpty(t, all)
			for _, b := range all {
				m, err := openwire.DecodeMessage(b.blob)
				require.NoError(t, err, "message at %v", b.loc)
				assert.True(t, m.Complete, "message at %v", b.loc)
				var s openwire.MessageSummary
				require.NoError(t, openwire.ParseMessageSummary(b.blob, &s))
				assert.Equal(t, s.MessageID, m.MessageID.String())
				assert.Equal(t, s.Destination, m.Destination.String())
				assert.Equal(t, s.ProducerID, m.ProducerID.String())
				assert.Equal(t, s.TransactionID, m.TransactionID.String())
				assert.Equal(t, s.Kind, m.Kind.String())
				assert.Equal(t, s.Timestamp, m.Timestamp)
				assert.Equal(t, s.BodySize, m.Body.StoredSize)
			}
		})
	}
}

// TestMessagesAgainstBroker checks the decoder against the broker: every
// message of the messages fixture is decoded and compared, field by field,
// with what ActiveMQ's own classes read back from the same store
// (messages.json "recovered": KahaDBPersistenceAdapter.recover, then the
// JMS getters) and with what the client set when it sent it ("sent").
func TestMessagesAgainstBroker(t *testing.T) {
	var fx *brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "messages" {
			fx = &f
		}
	}
	if fx == nil {
		need.Skip(t, "no messages fixture among the fixtures")
	}
	oracle := fx.Messages(t)
	require.NotNil(t, oracle)
	_, last := fixtureMessages(t, fx.StoreDir)
	require.Len(t, oracle.Recovered, len(oracle.Sent))
	kinds := map[string]int{}
	for id, want := range oracle.Recovered {
		t.Run(id, func(t *testing.T) {
			b, ok := last[id]
			require.True(t, ok, "no ADD or UPDATE of %s in the journal", id)
			m, err := openwire.DecodeMessage(b.blob)
			require.NoError(t, err)
			checkHeaders(t, want.Headers, m)
			checkProperties(t, want.Properties, m.Properties, false, true)
			checkBody(t, want.Body, m)
			sent, ok := oracle.Sent[id]
			require.True(t, ok, "recovered %s was not sent", id)
			checkProperties(t, sent.Properties, m.Properties, sent.DeadLettered != "", false)
			checkBody(t, sent.Body, m)
			if m.Body.Kind != openwire.BodyNone {
				assert.Equal(t, sent.Compressed, m.Compressed, "compressed")
			}
			kinds[m.Kind.String()+"/"+m.Body.Kind.String()+map[bool]string{true: "/compressed"}[m.Compressed]]++
		})
	}
	// The fixture covers what it is meant to.
	for _, k := range []string{"TextMessage/text", "TextMessage/text/compressed", "BytesMessage/bytes", "BytesMessage/bytes/compressed",
		"MapMessage/map", "MapMessage/map/compressed", "StreamMessage/stream", "StreamMessage/stream/compressed",
		"ObjectMessage/object", "ObjectMessage/object/compressed", "Message/none", "TextMessage/none"} {
		assert.Positive(t, kinds[k], "the fixture has no %s", k)
	}
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v is not a number", v)
	i, err := n.Int64()
	require.NoError(t, err)
	return i
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func checkHeaders(t *testing.T, h map[string]any, m *openwire.Message) {
	t.Helper()
	assert.Equal(t, num(t, h["dataStructureType"]), int64(m.Kind), "kind")
	assert.Equal(t, h["messageId"], m.MessageID.String(), "messageId")
	assert.Equal(t, h["producerId"], m.ProducerID.String(), "producerId")
	assert.Equal(t, str(h["destination"]), m.Destination.String(), "destination")
	assert.Equal(t, str(h["originalDestination"]), m.OriginalDestination.String(), "originalDestination")
	assert.Equal(t, str(h["transactionId"]), m.TransactionID.String(), "transactionId")
	assert.Equal(t, str(h["originalTransactionId"]), m.OriginalTransactionID.String(), "originalTransactionId")
	assert.Equal(t, str(h["groupId"]), m.GroupID, "groupId")
	assert.Equal(t, num(t, h["groupSequence"]), int64(m.GroupSequence), "groupSequence")
	assert.Equal(t, str(h["correlationId"]), m.CorrelationID, "correlationId")
	assert.Equal(t, h["persistent"], m.Persistent, "persistent")
	assert.Equal(t, num(t, h["expiration"]), m.Expiration, "expiration")
	assert.Equal(t, num(t, h["priority"]), int64(m.Priority), "priority")
	assert.Equal(t, str(h["replyTo"]), m.ReplyTo.String(), "replyTo")
	assert.Equal(t, num(t, h["timestamp"]), m.Timestamp, "timestamp")
	assert.Equal(t, str(h["type"]), m.Type, "type")
	assert.Equal(t, h["compressed"], m.Compressed, "compressed")
	assert.Equal(t, num(t, h["redeliveryCounter"]), int64(m.RedeliveryCounter), "redeliveryCounter")
	assert.Equal(t, num(t, h["arrival"]), m.Arrival, "arrival")
	assert.Equal(t, str(h["userId"]), m.UserID, "userId")
	assert.Equal(t, num(t, h["brokerInTime"]), m.BrokerInTime, "brokerInTime")
	assert.Equal(t, num(t, h["brokerOutTime"]), m.BrokerOutTime, "brokerOutTime")
	assert.Equal(t, num(t, h["contentSize"]), int64(m.Body.StoredSize), "contentSize")
}

// checkProperties compares typed values; extra allows properties the
// broker added (a dead-lettered message's dlqDeliveryFailureCause).
//
// utf8Buffer: want is what the broker reads back. ActiveMQ holds the
// strings of a message's own properties (not those of nested maps and
// lists) as hawtbuf UTF8Buffers, which decode the bytes as standard UTF-8:
// a NUL (C0 80) or a supplementary character (two 3-byte surrogates),
// which DataOutput.writeUTF writes in modified UTF-8, comes back as U+FFFD
// characters. kahafs decodes modified UTF-8, what the client wrote (the
// comparison with "sent" checks those strings exactly).
func checkProperties(t *testing.T, want map[string]brokertest.TypedValue, got *openwire.Map, extra, utf8Buffer bool) {
	t.Helper()
	if !extra {
		assert.Equal(t, len(want), got.Len(), "number of properties")
	}
	for name, w := range want {
		v, ok := got.Get(name)
		if !assert.True(t, ok, "property %q missing", name) {
			continue
		}
		if utf8Buffer && w.Type == "string" && v.Type == openwire.TypeString && modifiedOnly(v.Str) {
			var s string
			unmarshal(t, w.Value, &s)
			assert.Contains(t, s, "\ufffd", "property %q: the broker's reading of %q", name, v.Str)
			continue
		}
		checkTyped(t, "property "+name, w, v)
	}
}

// modifiedOnly: s holds a character modified UTF-8 encodes differently
// from UTF-8 (NUL, or one outside the BMP).
func modifiedOnly(s string) bool {
	for _, r := range s {
		if r == 0 || r > 0xFFFF {
			return true
		}
	}
	return false
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func unmarshal(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	require.NoError(t, d.Decode(v), "%s", raw)
}

func checkTyped(t *testing.T, path string, w brokertest.TypedValue, v openwire.Value) {
	t.Helper()
	if !assert.Equal(t, w.Type, v.Type.String(), "%s: type", path) {
		return
	}
	switch w.Type {
	case "null":
	case "boolean":
		var b bool
		unmarshal(t, w.Value, &b)
		assert.Equal(t, b, v.Bool(), path)
	case "byte", "short", "int", "long", "char":
		var n json.Number
		unmarshal(t, w.Value, &n)
		assert.Equal(t, num(t, n), v.Int, path)
	case "float":
		assert.Equal(t, uint32(num(t, w.Bits)), math.Float32bits(float32(v.Float)), "%s: float bits", path)
	case "double":
		assert.Equal(t, uint64(num(t, w.Bits)), math.Float64bits(v.Float), "%s: double bits", path)
	case "string":
		if w.SHA256 != "" {
			assert.Equal(t, w.Size, len(v.Str), "%s: size", path)
			assert.Equal(t, w.SHA256, digest([]byte(v.Str)), "%s: sha256", path)
			return
		}
		var s string
		unmarshal(t, w.Value, &s)
		assert.Equal(t, s, v.Str, path)
	case "bytes":
		checkBytes(t, path, w.Value, w.Size, w.SHA256, v.Bytes)
	case "map":
		var m map[string]brokertest.TypedValue
		unmarshal(t, w.Value, &m)
		checkProperties(t, m, v.Map, false, false)
	case "list":
		var l []brokertest.TypedValue
		unmarshal(t, w.Value, &l)
		if assert.Len(t, v.List, len(l), path) {
			for i := range l {
				checkTyped(t, path+"[]", l[i], v.List[i])
			}
		}
	default:
		t.Errorf("%s: unknown type %q", path, w.Type)
	}
}

// checkBytes compares bytes with a base64 JSON string, or a size and a
// digest.
func checkBytes(t *testing.T, path string, b64 json.RawMessage, size int, sha string, got []byte) {
	t.Helper()
	if sha != "" {
		assert.Equal(t, size, len(got), "%s: size", path)
		assert.Equal(t, sha, digest(got), "%s: sha256", path)
		return
	}
	var s string
	unmarshal(t, b64, &s)
	want, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	assert.Equal(t, want, got, path)
}

func checkBody(t *testing.T, w brokertest.TypedBody, m *openwire.Message) {
	t.Helper()
	b := m.Body
	require.NoError(t, b.Err)
	if !assert.Equal(t, w.Type, b.Kind.String(), "body type") {
		return
	}
	switch w.Type {
	case "text":
		if w.SHA256 != "" {
			assert.Equal(t, w.Size, len(b.Text), "text size")
			assert.Equal(t, w.SHA256, digest([]byte(b.Text)), "text sha256")
		} else {
			require.NotNil(t, w.Text)
			assert.Equal(t, *w.Text, b.Text, "text")
		}
	case "bytes":
		raw, _ := json.Marshal(w.Base64)
		checkBytes(t, "body", raw, w.Size, w.SHA256, b.Bytes)
	case "map":
		var mp map[string]brokertest.TypedValue
		unmarshal(t, w.Value, &mp)
		checkProperties(t, mp, b.Map, false, false)
	case "stream":
		var l []brokertest.TypedValue
		unmarshal(t, w.Value, &l)
		if assert.Len(t, b.Stream, len(l), "stream") {
			for i := range l {
				checkTyped(t, "stream[]", l[i], b.Stream[i])
			}
		}
	case "object":
		assert.Equal(t, w.ClassName, b.ClassName, "class name")
		assert.NoError(t, b.ClassNameErr)
	}
}

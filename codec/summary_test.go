package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/jsonw"
	"github.com/kahafs/kahafs/openwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// legacySummary is the "openwire" object as kahafs wrote it before it
// decoded messages with package openwire: from ParseMessageSummary.
func legacySummary(b []byte) []byte {
	var s openwire.MessageSummary
	err := openwire.ParseMessageSummary(b, &s)
	o := jsonw.Object(nil)
	if s.Kind != "" {
		o.Str("kind", s.Kind)
	}
	for _, f := range []struct{ k, v string }{{"producerId", s.ProducerID}, {"destination", s.Destination},
		{"transactionId", s.TransactionID}, {"originalDestination", s.OriginalDestination}} {
		if f.v != "" {
			o.Str(f.k, f.v)
		}
	}
	if s.GroupID != "" {
		o.Str("groupId", s.GroupID)
		o.Int("groupSequence", int64(s.GroupSequence))
	}
	if s.CorrelationID != "" {
		o.Str("correlationId", s.CorrelationID)
	}
	o.Bool("persistent", s.Persistent)
	o.Int("expiration", s.Expiration)
	o.Int("priority", int64(s.Priority))
	if s.ReplyTo != "" {
		o.Str("replyTo", s.ReplyTo)
	}
	o.Int("timestamp", s.Timestamp)
	if s.JMSType != "" {
		o.Str("jmsType", s.JMSType)
	}
	o.Int("bodySize", int64(s.BodySize))
	o.Int("propertiesSize", int64(s.PropertiesSize))
	if s.Complete {
		o.Bool("compressed", s.Compressed)
		o.Int("redeliveryCounter", int64(s.RedeliveryCounter))
		if s.UserID != "" {
			o.Str("userId", s.UserID)
		}
		o.Int("brokerInTime", s.BrokerInTime)
		o.Int("brokerOutTime", s.BrokerOutTime)
	}
	if err != nil {
		o.Str("error", err.Error())
	}
	return o.End()
}

func newSummary(b []byte) []byte {
	m, err := openwire.DecodeMessage(b)
	o := jsonw.Object(nil)
	appendSummary(&o, m, err)
	return o.End()
}

// TestSummaryUnchanged: the "openwire" summary scripts may read is, byte
// for byte, what it was before messages were decoded by package openwire,
// for every message of every real-broker fixture; for a damaged message
// the same fields, with an error (whose wording changed).
func TestSummaryUnchanged(t *testing.T) {
	stores, _ := filepath.Glob(filepath.Join(brokertest.RepoRoot(), "testdata", "stores", "*", "store"))
	require.NotEmpty(t, stores)
	n := 0
	for _, dir := range stores {
		st, err := OpenStore(dir)
		require.NoError(t, err)
		for _, fi := range st.Files {
			_, err := ScanFile(fi, ReadOptions{}, func(rec Record, c *Command) error {
				if c.Type != AddMessageCommand && c.Type != UpdateMessageCommand {
					return nil
				}
				n++
				require.Equal(t, string(legacySummary(c.Message)), string(newSummary(c.Message)), "%s %v", dir, rec.Loc)
				if n%50 != 1 {
					return nil
				}
				// Damaged copies: the first bytes only, size prefix fixed.
				// Without its last byte (jmsXGroupFirstForConsumer, which
				// ParseMessageSummary never read) a message is complete to
				// the old summary, truncated to the new one.
				b := bytes.Clone(c.Message[:len(c.Message)-1])
				binary.BigEndian.PutUint32(b, uint32(len(b)-4))
				assert.Contains(t, string(newSummary(b)), `"error":"openwire: jmsXGroupFirstForConsumer at byte`)
				for _, cut := range []int{5, 20, 60, len(c.Message) / 2} {
					b := bytes.Clone(c.Message[:cut])
					binary.BigEndian.PutUint32(b, uint32(len(b)-4))
					var old, got map[string]any
					require.NoError(t, json.Unmarshal(legacySummary(b), &old))
					require.NoError(t, json.Unmarshal(newSummary(b), &got))
					assert.Contains(t, got, "error", "cut at %d", cut)
					assert.Equal(t, old["error"] != nil, got["error"] != nil, "cut at %d", cut)
					delete(old, "error")
					delete(got, "error")
					// Every field shown is the old one; the old summary also
					// showed the field it failed in, half read ("queue://").
					for k, v := range got {
						assert.Equal(t, old[k], v, "%s, cut at %d of %s %v", k, cut, dir, rec.Loc)
					}
					assert.LessOrEqual(t, len(old)-len(got), 1, "cut at %d of %s %v: %v / %v", cut, dir, rec.Loc, old, got)
				}
				return nil
			})
			require.NoError(t, err)
		}
	}
	t.Logf("%d messages", n)
}

package codec_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/openwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type readRecord struct {
	loc     codec.Location
	batch   int32
	typ     codec.EntryType
	payload []byte
}

// readFixture reads every record of a store strictly (the fixtures are
// clean) and returns them with their payloads copied.
func readFixture(t *testing.T, dir string) []readRecord {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	var out []readRecord
	for _, fi := range st.Files {
		df, err := fi.Open()
		require.NoError(t, err)
		r := codec.NewReader(df, codec.ReadOptions{})
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err, "reading %s", fi.Name)
			out = append(out, readRecord{loc: rec.Loc, batch: rec.Batch, typ: codec.EntryType(rec.Payload()[0]),
				payload: append([]byte(nil), rec.Payload()...)})
		}
		require.NoError(t, df.Close())
	}
	return out
}

func TestFixturesDecodeAndRoundTrip(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			recs := readFixture(t, fx.StoreDir)
			require.NotEmpty(t, recs)
			counts := map[string]int{}
			var c codec.Command
			for _, r := range recs {
				require.NoError(t, codec.DecodeCommand(r.payload, &c), "record %v", r.loc)
				assert.False(t, c.Unknown, "record %v has unknown fields", r.loc)
				counts[c.Type.String()]++
				assert.Equal(t, r.payload, codec.AppendCommand(nil, &c), "byte round trip of %s at %v", c.Type, r.loc)
			}
			assert.Equal(t, fx.Expected.Counts, counts, "per-type counts equal what ActiveMQ's journal reader counted")

			// records.json: every record as ActiveMQ's Journal read it at generation.
			theirs := brokertest.CommittedRecords(t, fx)
			require.Len(t, theirs, len(recs))
			for i, r := range recs {
				assert.Equal(t, brokertest.JournalRecord{File: r.loc.File, Offset: r.loc.Offset, Size: r.loc.Size, Type: r.typ.String()}, theirs[i])
			}
		})
	}
}

// TestGeneratorRegenerates runs the real-broker generator for one scenario
// (so it cannot rot) and reads the new store.
func TestGeneratorRegenerates(t *testing.T) {
	brokertest.Require(t)
	out := t.TempDir()
	brokertest.RunScript(t, "regen-check.sh", "queues", out)
	dir := filepath.Join(out, "queues", "store")
	recs := readFixture(t, dir)
	theirs, counts := brokertest.Records(t, brokertest.CopyStore(t, dir))
	require.Len(t, recs, len(theirs))
	got := map[string]int{}
	var c codec.Command
	for i, r := range recs {
		require.NoError(t, codec.DecodeCommand(r.payload, &c))
		assert.Equal(t, r.payload, codec.AppendCommand(nil, &c))
		assert.Equal(t, theirs[i].Offset, r.loc.Offset)
		got[c.Type.String()]++
	}
	assert.Equal(t, counts, got)
	assert.Positive(t, got["KAHA_UPDATE_MESSAGE_COMMAND"])
	assert.Positive(t, got["KAHA_REMOVE_DESTINATION_COMMAND"])
}

// TestFixturesBatchesReencode rebuilds every batch of every data file from
// its decoded records and compares with the broker's bytes.
func TestFixturesBatchesReencode(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			recs := readFixture(t, fx.StoreDir)
			byFile := map[int32][]readRecord{}
			for _, r := range recs {
				byFile[r.loc.File] = append(byFile[r.loc.File], r)
			}
			batches := 0
			for id, rs := range byFile {
				raw, err := os.ReadFile(filepath.Join(fx.StoreDir, codec.DataFileName(id)))
				require.NoError(t, err)
				for i := 0; i < len(rs); {
					j := i
					var body []byte
					var c codec.Command
					for ; j < len(rs) && rs[j].batch == rs[i].batch; j++ {
						require.NoError(t, codec.DecodeCommand(rs[j].payload, &c))
						body = codec.AppendUserRecord(body, codec.AppendCommand(nil, &c))
					}
					start := int(rs[i].batch)
					require.GreaterOrEqual(t, start, 0, "record outside a batch")
					stored := binary.BigEndian.Uint64(raw[start+20:])
					got := codec.AppendBatch(nil, body, stored != 0)
					assert.Equal(t, raw[start:start+len(got)], got, "batch at %d:%d", id, start)
					if j == len(rs) {
						end := start + len(got)
						assert.Equal(t, codec.EOFRecord, raw[end:end+5], "EOF record after the last batch of %d", id)
					}
					batches++
					i = j
				}
			}
			assert.Positive(t, batches)
		})
	}
}

func TestFixturesOpenWire(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			var adds, subs int
			var c codec.Command
			var s openwire.MessageSummary
			for _, r := range readFixture(t, fx.StoreDir) {
				require.NoError(t, codec.DecodeCommand(r.payload, &c))
				switch c.Type {
				case codec.AddMessageCommand, codec.UpdateMessageCommand:
					require.NoError(t, openwire.ParseMessageSummary(c.Message, &s), "message at %v", r.loc)
					assert.True(t, s.Complete)
					assert.Equal(t, c.Dest.String(), kahaName(s.Destination), "destination at %v", r.loc)
					assert.Equal(t, string(c.MessageID), s.MessageID, "message id at %v", r.loc)
					// Ids start with the client's connection id prefix ("ID:" unless set).
					assert.True(t, strings.HasPrefix(s.MessageID, s.ProducerID+":"), "%s of %s", s.MessageID, s.ProducerID)
					assert.True(t, s.Persistent)
					assert.Greater(t, s.Timestamp, int64(1.6e12), "timestamp in ms since 1970")
					assert.Equal(t, int8(c.Priority), s.Priority)
					// A plain Message, or a TextMessage without text, has no body
					// (the messages fixture has both): -1.
					if s.BodySize >= 0 {
						assert.LessOrEqual(t, s.BodyOffset+s.BodySize, len(c.Message))
					} else {
						assert.Equal(t, -1, s.BodyOffset)
					}
					adds++
				case codec.SubscriptionCommand:
					if c.IsSubscriptionDelete() {
						continue
					}
					si, err := openwire.ParseSubscriptionInfo(c.SubscriptionInfo)
					require.NoError(t, err)
					assert.Equal(t, string(c.SubscriptionKey), si.ClientID+":"+si.SubscriptionName)
					assert.Equal(t, c.Dest.String(), kahaName(si.Destination))
					subs++
				case codec.RemoveMessageCommand:
					if len(c.Ack) > 0 {
						a, err := openwire.ParseMessageAck(c.Ack)
						require.NoError(t, err, "ack at %v", r.loc)
						assert.Equal(t, c.Dest.String(), kahaName(a.Destination))
					}
				}
			}
			assert.Positive(t, adds)
			t.Logf("%d messages, %d subscriptions", adds, subs)
		})
	}
}

// TestFixturesMatchActiveMQJournal compares every record location and type
// with what ActiveMQ's own Journal classes read from the same files.
func TestFixturesMatchActiveMQJournal(t *testing.T) {
	brokertest.Require(t)
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			theirs, _ := brokertest.Records(t, brokertest.CopyStore(t, fx.StoreDir))
			ours := readFixture(t, fx.StoreDir)
			require.Equal(t, len(theirs), len(ours))
			for i := range ours {
				assert.Equal(t, brokertest.JournalRecord{File: ours[i].loc.File, Offset: ours[i].loc.Offset,
					Size: ours[i].loc.Size, Type: ours[i].typ.String()}, theirs[i])
			}
		})
	}
}

// TestBrokerRecoversCodecJournal rewrites a fixture's journal with the codec
// writer (other file sizes and batches) and checks that a real broker
// recovers the same state from it as from the original journal.
func TestBrokerRecoversCodecJournal(t *testing.T) {
	brokertest.Require(t)
	for _, fx := range brokertest.Fixtures(t) {
		recs := readFixture(t, fx.StoreDir)
		skip := false
		for _, r := range recs {
			if r.typ == codec.RewrittenDataFileCommand {
				skip = true // file ids change, so compaction markers would change meaning
			}
		}
		if skip {
			continue
		}
		t.Run(fx.Name, func(t *testing.T) {
			orig := brokertest.CopyStore(t, fx.StoreDir)
			for _, n := range []string{"db.data", "db.redo", "db.free"} {
				_ = os.Remove(filepath.Join(orig, n))
			}
			rewritten := filepath.Join(t.TempDir(), "store")
			require.NoError(t, os.Mkdir(rewritten, 0o755))
			w := codec.NewJournalWriter(rewritten, codec.WriterOptions{MaxFileLength: 256 * 1024, MaxBatchSize: 64 * 1024})
			for _, r := range recs {
				_, err := w.Append(r.payload)
				require.NoError(t, err)
			}
			require.NoError(t, w.Close())
			want := brokertest.Inspect(t, orig, fx.Expected.MaxFileLength)
			got := brokertest.Inspect(t, rewritten, 256*1024)
			assert.Equal(t, want.Queues, got.Queues, "pending messages per queue")
			assert.Equal(t, want.Subscriptions, got.Subscriptions, "durable subscriptions")
			assert.Equal(t, want.Prepared, got.Prepared, "prepared transactions")
			assert.ElementsMatch(t, want.Destinations, got.Destinations)
			assert.True(t, len(want.Queues)+len(want.Subscriptions) > 0, "the fixture has state to compare")
		})
	}
}

func TestWriterMatchesBrokerFileBytes(t *testing.T) {
	// A single-batch-per-record file written by JournalWriter with batch
	// limits that force one record per batch equals the broker's layout for
	// sync sends: [control][record][EOF].
	dir := t.TempDir()
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxBatchSize: 1, NoSync: true})
	c := &codec.Command{Type: codec.TraceCommand, Text: []byte("x")}
	c.Set(1)
	_, err := w.AppendCommand(c)
	require.NoError(t, err)
	_, err = w.AppendCommand(c)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	raw, err := os.ReadFile(filepath.Join(dir, "db-1.log"))
	require.NoError(t, err)
	rec := codec.AppendUserRecord(nil, codec.AppendCommand(nil, c))
	want := codec.AppendBatch(nil, rec, true)
	want = codec.AppendBatch(want, rec, true)
	want = append(want, codec.EOFRecord...)
	assert.True(t, bytes.Equal(want, raw))
}

// kahaName is what the broker writes in a command's destination field for
// a name that an OpenWire blob of the same command carries: KahaDB encodes
// names with Java's String.getBytes(UTF-8), which turns a lone UTF-16
// surrogate into '?', while OpenWire's modified UTF-8 keeps it (as a 3-byte
// CESU-8 sequence) and openwire.ModifiedUTF8 decodes it as U+FFFD.
func kahaName(s string) string { return strings.ReplaceAll(s, "\uFFFD", "?") }

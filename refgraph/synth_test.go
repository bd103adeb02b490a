package refgraph

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/stretchr/testify/require"
)

// OpenWire (v11, loose encoding, size prefix) writer for test messages,
// following §4.3-§4.5 of KAHADB-FORMAT.md, so that synthetic journals can
// be recovered by the real broker too.
type owWriter struct{ b []byte }

func (w *owWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}
func (w *owWriter) u8(v byte)   { w.b = append(w.b, v) }
func (w *owWriter) i32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *owWriter) i64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *owWriter) str(s string, present bool) {
	w.bool(present)
	if present {
		w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(s)))
		w.b = append(w.b, s...)
	}
}

// producer is an OpenWire ProducerId: connection, session, value.
type producer struct {
	conn    string
	session int64
	value   int64
}

func (p producer) key(seq int64) string {
	return fmt.Sprintf("%s:%d:%d:%d", p.conn, p.session, p.value, seq)
}

func (w *owWriter) producerID(p producer) {
	w.bool(true)
	w.u8(123)
	w.str(p.conn, true)
	w.i64(p.value)
	w.i64(p.session)
}

func (w *owWriter) dest(t codec.DestType, name string) {
	w.bool(true)
	w.u8(byte(100 + t))
	w.str(name, true)
}

func sizePrefixed(body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

// textMessage marshals an ActiveMQTextMessage with a null body.
func textMessage(p producer, seq int64, t codec.DestType, dest string, prio byte) []byte {
	w := &owWriter{}
	w.u8(28)
	w.i32(1)        // commandId
	w.bool(false)   // responseRequired
	w.producerID(p) // producerId
	w.dest(t, dest) // destination
	w.bool(false)   // transactionId
	w.bool(false)   // originalDestination
	w.bool(true)    // messageId
	w.u8(110)
	w.str("", false) // textView
	w.producerID(p)
	w.i64(seq)       // producerSequenceId
	w.i64(seq)       // brokerSequenceId
	w.bool(false)    // originalTransactionId
	w.str("", false) // groupID
	w.i32(0)         // groupSequence
	w.str("", false) // correlationId
	w.bool(true)     // persistent
	w.i64(0)         // expiration
	w.u8(prio)
	w.bool(false) // replyTo
	w.i64(1_700_000_000_000 + seq)
	w.str("", false) // type
	w.bool(false)    // content
	w.bool(false)    // marshalledProperties
	w.bool(false)    // dataStructure
	w.bool(false)    // targetConsumerId
	w.bool(false)    // compressed
	w.i32(0)         // redeliveryCounter
	w.bool(false)    // brokerPath
	w.i64(0)         // arrival
	w.str("", false) // userID
	w.bool(false)    // recievedByDFBridge
	w.bool(false)    // droppable
	w.bool(false)    // cluster
	w.i64(0)         // brokerInTime
	w.i64(0)         // brokerOutTime
	w.bool(false)    // jmsXGroupFirstForConsumer
	return sizePrefixed(w.b)
}

// subscriptionInfo marshals a SubscriptionInfo.
func subscriptionInfo(client, name, topic, selector string) []byte {
	w := &owWriter{}
	w.u8(55)
	w.str(client, true)
	w.dest(codec.Topic, topic)
	w.str(selector, selector != "")
	w.str(name, true)
	w.dest(codec.Topic, topic)
	w.bool(false) // noLocal
	return sizePrefixed(w.b)
}

// journal writes a synthetic store with codec.JournalWriter.
type journal struct {
	t   testing.TB
	dir string
	w   *codec.JournalWriter
	c   codec.Command
}

func newJournal(t testing.TB, maxFile int) *journal {
	dir := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return &journal{t: t, dir: dir, w: codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: maxFile, NoSync: true})}
}

func (j *journal) put(c *codec.Command) codec.Location {
	loc, err := j.w.AppendCommand(c)
	require.NoError(j.t, err)
	return loc
}

// flush ends the current batch, so that the next record starts a batch.
func (j *journal) close() string {
	require.NoError(j.t, j.w.Close())
	return j.dir
}

func queue(name string) codec.Destination { return codec.NewDestination(codec.Queue, []byte(name)) }
func topic(name string) codec.Destination { return codec.NewDestination(codec.Topic, []byte(name)) }

type addOpt struct {
	prio      int32
	supported bool
	tx        *codec.TxID
	update    bool
}

func (j *journal) add(d codec.Destination, p producer, seq int64, o addOpt) codec.Location {
	c := &j.c
	*c = codec.Command{Type: codec.AddMessageCommand, Priority: 4, SkipIfSourceExists: true}
	if o.prio == 0 {
		o.prio = 4
	}
	if o.tx != nil {
		c.Tx = *o.tx
		c.Set(codec.FieldAddTransaction)
	}
	c.Dest = d
	c.MessageID = []byte(p.key(seq))
	c.Message = textMessage(p, seq, d.Type, string(d.Name), byte(o.prio))
	c.Priority = o.prio
	c.PrioritySupported = o.supported
	c.Set(codec.FieldAddDestination, codec.FieldAddMessageID, codec.FieldAddMessage, codec.FieldAddPriority)
	if o.supported {
		c.Set(codec.FieldAddPrioritySupported)
	}
	if o.update {
		c.Type = codec.UpdateMessageCommand
		c.Update, c.HasInner = true, true
	}
	return j.put(c)
}

func (j *journal) ack(d codec.Destination, id string, sub string, tx *codec.TxID, ack []byte) codec.Location {
	c := &j.c
	*c = codec.Command{Type: codec.RemoveMessageCommand, Priority: 4, SkipIfSourceExists: true}
	if tx != nil {
		c.Tx = *tx
		c.Set(codec.FieldRemoveTransaction)
	}
	c.Dest = d
	c.MessageID = []byte(id)
	c.Ack = ack
	c.Set(codec.FieldRemoveDestination, codec.FieldRemoveMessageID, codec.FieldRemoveAck)
	if sub != "" {
		c.SubscriptionKey = []byte(sub)
		c.Set(codec.FieldRemoveSubscriptionKey)
	}
	return j.put(c)
}

func (j *journal) subscribe(tp string, client, name, selector string) codec.Location {
	c := &j.c
	*c = codec.Command{Type: codec.SubscriptionCommand, Priority: 4, SkipIfSourceExists: true}
	c.Dest = topic(tp)
	c.SubscriptionKey = []byte(client + ":" + name)
	c.SubscriptionInfo = subscriptionInfo(client, name, tp, selector)
	c.Set(codec.FieldSubscriptionDestination, codec.FieldSubscriptionKey, codec.FieldSubscriptionRetroactive, codec.FieldSubscriptionInfo)
	return j.put(c)
}

func (j *journal) unsubscribe(tp string, key string) codec.Location {
	c := &j.c
	*c = codec.Command{Type: codec.SubscriptionCommand, Priority: 4, SkipIfSourceExists: true}
	c.Dest = topic(tp)
	c.SubscriptionKey = []byte(key)
	c.Set(codec.FieldSubscriptionDestination, codec.FieldSubscriptionKey, codec.FieldSubscriptionRetroactive)
	return j.put(c)
}

func (j *journal) txCmd(t codec.EntryType, tx codec.TxID) codec.Location {
	c := &j.c
	*c = codec.Command{Type: t, Tx: tx, Priority: 4, SkipIfSourceExists: true}
	c.Set(codec.FieldTransaction)
	return j.put(c)
}

func (j *journal) removeDest(d codec.Destination) codec.Location {
	c := &j.c
	*c = codec.Command{Type: codec.RemoveDestinationCommand, Dest: d, Priority: 4, SkipIfSourceExists: true}
	c.Set(codec.FieldRemoveDestinationDestination)
	return j.put(c)
}

func (j *journal) trace(text string) codec.Location {
	c := &j.c
	*c = codec.Command{Type: codec.TraceCommand, Text: []byte(text), Priority: 4, SkipIfSourceExists: true}
	c.Set(codec.FieldTraceMessage)
	return j.put(c)
}

func (j *journal) rewritten(source int32) codec.Location {
	c := &j.c
	*c = codec.Command{Type: codec.RewrittenDataFileCommand, SourceDataFileID: source, RewriteType: 1, SkipIfSourceExists: true}
	c.Set(codec.FieldRewrittenSource, codec.FieldRewrittenType)
	return j.put(c)
}

// replayDir builds the graph of a store directory as the CLI does.
func replayDir(t testing.TB, dir string, maxFile int64) *Graph {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	opts := StoreOptions(st, true, func(err error) { require.NoError(t, err) })
	opts.MaxFileLength = maxFile
	g, err := Load(st, opts, codec.ReadOptions{})
	require.NoError(t, err)
	checkInvariants(t, g)
	return g
}

// checkInvariants verifies what every graph must satisfy.
func checkInvariants(t testing.TB, g *Graph) {
	t.Helper()
	gc := map[int32]bool{}
	for i, id := range g.GCCandidates() {
		gc[id] = true
		if i > 0 {
			require.Less(t, g.GCCandidates()[i-1], id, "gc candidates ascending")
		}
	}
	for _, f := range g.Files() {
		require.Equal(t, !gc[f.ID], f.Pinned, "%s: pinned iff not a gc candidate", f.Name)
		if f.Pinned {
			require.NotEmpty(t, f.Reasons, "%s is pinned without a reason", f.Name)
		} else {
			require.Empty(t, f.Reasons, "%s is free but has reasons", f.Name)
		}
		for _, r := range append(append([]Reason{}, f.Reasons...), f.Notes...) {
			require.NotEmpty(t, r.Text)
			require.Truef(t, r.Destination != "" || r.Subscription != "" || len(r.Transactions) > 0 ||
				len(r.Files) > 0 || r.Location != "", "%s: reason %q names no holder", f.Name, r.Kind)
			switch r.Kind {
			case KindPendingMessages:
				require.NotEmpty(t, r.Destination)
				require.Positive(t, r.Messages)
			case KindSubscription, KindSubscriptionRewrite:
				require.NotEmpty(t, r.Location)
				require.NotEmpty(t, r.Destination)
				require.Equal(t, f.ID, r.Loc.File)
			case KindTransactionRange:
				require.NotEmpty(t, r.Transactions)
				require.Len(t, r.Range, 2)
			case KindAcks, KindFixpointDiffers:
				require.NotEmpty(t, r.Files)
			case KindLastUpdate, KindProducerAudit, KindAckMap:
				require.NotEmpty(t, r.Location)
			}
		}
	}
	for _, d := range g.Destinations() {
		require.Equal(t, int64(len(d.Messages)), d.Stats.Messages, "%s count", d)
		var bytes int64
		for i, m := range d.Messages {
			bytes += int64(m.Loc.Size)
			if i > 0 {
				p := d.Messages[i-1]
				require.True(t, class(p.Priority, p.PrioritySupported) > class(m.Priority, m.PrioritySupported) ||
					class(p.Priority, p.PrioritySupported) == class(m.Priority, m.PrioritySupported) && p.Seq < m.Seq,
					"%s: order index order", d)
			}
		}
		require.Equal(t, bytes, d.Stats.Bytes, "%s bytes", d)
		for _, s := range d.Subscriptions {
			require.Same(t, d, s.Destination)
			require.LessOrEqual(t, s.NumPending(), len(d.Messages))
		}
	}
}

package refgraph

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Synthetic journals (no index: the broker replays them from the start)
// for the cases the real-broker fixtures do not cover. Every scenario is
// checked against the model's own expectations and, when the real broker
// is installed, against brokerkit Inspect on a copy of the store.

var acked = []byte{0, 0, 0, 1, 22} // a non-empty ack blob (not parsed outside prepared transactions)

var prodA = producer{conn: "ID:synth-1", session: 1, value: 1}
var prodB = producer{conn: "ID:synth-2", session: 1, value: 1}

// filler appends traces until the writer moves to file id (traces pin
// nothing but the last update).
func (j *journal) fillTo(id int32) {
	for i := 0; ; i++ {
		loc := j.trace(fmt.Sprintf("filler %d %s", i, strings.Repeat("x", 200)))
		if loc.File >= id {
			return
		}
	}
}

type scenario struct {
	name    string
	maxFile int
	build   func(j *journal)
	check   func(t *testing.T, g *Graph)
}

// namesByBucket returns a queue name and two topic names such that, in a
// 16-bucket Java HashMap, the first topic comes before the queue and the
// second after it.
func namesByBucket(t *testing.T) (q, before, after string) {
	q = "Q.HOLD"
	qb := javaBucket("0:"+q, 16)
	for i := 0; i < 1000 && (before == "" || after == ""); i++ {
		n := fmt.Sprintf("T.%d", i)
		switch b := javaBucket("1:"+n, 16); {
		case b < qb && before == "":
			before = n
		case b > qb && after == "":
			after = n
		}
	}
	require.NotEmpty(t, before)
	require.NotEmpty(t, after)
	return q, before, after
}

// orderScenario: a queue holds a message in db-1.log; a topic's only
// subscription (nothing pending) is in db-2.log. If the cleanup visits the
// queue first, db-2.log becomes the oldest candidate when the topic is
// visited: the subscription is rewritten and db-2.log deleted. Otherwise
// the subscription keeps db-2.log.
func orderScenario(t *testing.T, name, tp string, rewrite bool) scenario {
	q, _, _ := namesByBucket(t)
	return scenario{name: name, maxFile: 4096, build: func(j *journal) {
		j.add(queue(q), prodA, 1, addOpt{})
		j.fillTo(2)
		j.subscribe(tp, "c", "s", "")
		j.add(topic(tp), prodB, 1, addOpt{})
		j.ack(topic(tp), prodB.key(1), "c:s", nil, acked)
		j.fillTo(3)
		j.fillTo(4)
	}, check: func(t *testing.T, g *Graph) {
		f2, _ := g.File(2)
		if rewrite {
			assert.Equal(t, []int32{2, 3}, g.GCCandidates())
			require.Len(t, f2.Notes, 1)
			assert.Equal(t, KindSubscriptionRewrite, f2.Notes[0].Kind)
		} else {
			assert.Equal(t, []int32{3}, g.GCCandidates())
			require.Len(t, f2.Reasons, 1)
			assert.Equal(t, KindSubscription, f2.Reasons[0].Kind)
			assert.True(t, f2.Reasons[0].FixpointDiffers)
			assert.Equal(t, "c:s", f2.Reasons[0].Subscription)
		}
		f1, _ := g.File(1)
		require.NotEmpty(t, f1.Reasons)
		assert.Equal(t, KindPendingMessages, f1.Reasons[0].Kind)
		assert.Equal(t, "queue://"+q, f1.Reasons[0].Destination)
	}}
}

// preparedThenSend is a journal where XA transaction tx sends and is
// prepared, then, in the next file, sends again under its id and ends
// with last (a commit, a second prepare).
func preparedThenSend(tx codec.TxID, last codec.EntryType) func(j *journal) {
	return func(j *journal) {
		j.add(queue("Q.XA"), prodB, 1, addOpt{tx: &tx})
		j.txCmd(codec.PrepareCommand, tx)
		j.fillTo(2)
		j.add(queue("Q.XA"), prodB, 2, addOpt{tx: &tx})
		j.txCmd(last, tx)
		j.fillTo(3)
	}
}

func scenarios(t *testing.T) []scenario {
	_, before, after := namesByBucket(t)
	lt := codec.NewLocalTx([]byte("ID:synth-tx-1"), 7)
	lt2 := codec.NewLocalTx([]byte("ID:synth-tx-1"), 8)
	xaPrep := codec.NewXATx(4660, []byte("gtrid-prep"), []byte("bq-1"))
	xaOpen := codec.NewXATx(4660, []byte("gtrid-open"), []byte("bq-2"))
	return []scenario{
		orderScenario(t, "order-queue-first", after, true),
		orderScenario(t, "order-topic-first", before, false),
		{name: "out-of-order-acks", maxFile: 8192, build: func(j *journal) {
			j.subscribe("T.OOO", "c", "s", "")
			j.subscribe("T.OOO", "c2", "s2", "")
			for i := int64(1); i <= 6; i++ {
				j.add(topic("T.OOO"), prodA, i, addOpt{})
			}
			j.ack(topic("T.OOO"), prodA.key(4), "c:s", nil, acked)
			j.ack(topic("T.OOO"), prodA.key(2), "c:s", nil, acked)
			j.ack(topic("T.OOO"), prodA.key(1), "c:s", nil, acked)
			j.ack(topic("T.OOO"), prodA.key(1), "c2:s2", nil, acked)
		}, check: func(t *testing.T, g *Graph) {
			d, ok := g.Destination("1:T.OOO")
			require.True(t, ok)
			var c *Subscription
			for _, s := range d.Subscriptions {
				if s.Key == "c:s" {
					c = s
				}
			}
			require.NotNil(t, c)
			assert.Equal(t, int64(3), c.Count)
			var ids []string
			for _, m := range c.Pending() {
				ids = append(ids, m.ID())
			}
			// lastAck is the last processed ack (message 1), below every
			// pending sequence: every indexed message after it is delivered,
			// messages 2 and 4 (still needed by c2:s2) included although
			// acked (§5.4)
			assert.Equal(t, []string{prodA.key(2), prodA.key(3), prodA.key(4), prodA.key(5), prodA.key(6)}, ids)
		}},
		{name: "selector-unmatched", maxFile: 8192, build: func(j *journal) {
			j.subscribe("T.SEL", "c", "s", "even = true")
			j.subscribe("T.SEL", "all", "s", "")
			for i := int64(1); i <= 6; i++ {
				j.add(topic("T.SEL"), prodA, i, addOpt{})
			}
			// c consumes 2 and 4; 1, 3, 5 do not match its selector
			j.ack(topic("T.SEL"), prodA.key(1), "c:s", nil, nil)
			j.ack(topic("T.SEL"), prodA.key(2), "c:s", nil, acked)
			j.ack(topic("T.SEL"), prodA.key(3), "c:s", nil, nil)
			j.ack(topic("T.SEL"), prodA.key(4), "c:s", nil, acked)
			j.ack(topic("T.SEL"), prodA.key(5), "c:s", nil, nil)
			j.ack(topic("T.SEL"), prodA.key(1), "all:s", nil, acked)
		}, check: func(t *testing.T, g *Graph) {
			d, _ := g.Destination("1:T.SEL")
			require.NotNil(t, d)
			assert.Len(t, d.Messages, 5)
		}},
		{name: "priorities-and-updates", maxFile: 4096, build: func(j *journal) {
			for i, p := range []int32{4, 9, 1, 4, 7, 0} {
				j.add(queue("Q.PRIO"), prodA, int64(i+1), addOpt{prio: p, supported: true})
				j.add(queue("Q.FLAT"), prodB, int64(i+1), addOpt{prio: p})
			}
			j.fillTo(2)
			// redelivery rewrites: the update record now holds the message
			j.add(queue("Q.FLAT"), prodB, 1, addOpt{prio: 4, update: true})
			j.add(queue("Q.FLAT"), prodB, 2, addOpt{prio: 9, update: true})
			for i := int64(3); i <= 6; i++ {
				j.ack(queue("Q.FLAT"), prodB.key(i), "", nil, acked)
			}
			for i := int64(1); i <= 6; i++ {
				j.ack(queue("Q.PRIO"), prodA.key(i), "", nil, acked)
			}
			j.fillTo(3)
			// an update after the ack resurrects the message (§5.2)
			j.add(queue("Q.PRIO"), prodA, 3, addOpt{prio: 1, supported: true, update: true})
			j.fillTo(4)
		}, check: func(t *testing.T, g *Graph) {
			flat, _ := g.Destination("0:Q.FLAT")
			require.NotNil(t, flat)
			require.Len(t, flat.Messages, 2)
			assert.True(t, flat.Messages[0].Updated)
			assert.Equal(t, int32(2), flat.Messages[0].Loc.File)
			prio, _ := g.Destination("0:Q.PRIO")
			require.NotNil(t, prio)
			require.Len(t, prio.Messages, 1)
			assert.Equal(t, prodA.key(3), prio.Messages[0].ID())
			assert.Contains(t, g.GCCandidates(), int32(1))
		}},
		{name: "transactions", maxFile: 4096, build: func(j *journal) {
			j.add(queue("Q.XA"), prodB, 1, addOpt{tx: &xaPrep})
			j.fillTo(2)
			j.add(queue("Q.TX"), prodA, 1, addOpt{tx: &lt})
			j.add(queue("Q.TX"), prodA, 2, addOpt{tx: &lt})
			j.fillTo(3)
			j.txCmd(codec.CommitCommand, lt)
			j.add(queue("Q.XA"), prodB, 2, addOpt{tx: &xaPrep})
			j.txCmd(codec.PrepareCommand, xaPrep)
			j.add(queue("Q.XA"), prodB, 3, addOpt{tx: &xaOpen})
			j.add(queue("Q.TX"), prodA, 3, addOpt{tx: &lt2})
			j.fillTo(4)
			j.fillTo(5)
		}, check: func(t *testing.T, g *Graph) {
			prep := g.PreparedTransactions()
			require.Len(t, prep, 1)
			assert.Equal(t, xaPrep.String(), prep[0].ID)
			// files 1..3 are inside the prepared transaction's range
			for id := int32(1); id <= 3; id++ {
				f, _ := g.File(id)
				require.True(t, f.Pinned)
				var kinds []ReasonKind
				for _, r := range f.Reasons {
					kinds = append(kinds, r.Kind)
				}
				assert.Contains(t, kinds, KindTransactionRange, "db-%d.log", id)
			}
			assert.Equal(t, []int32{4}, g.GCCandidates())
			q, _ := g.Destination("0:Q.TX")
			require.NotNil(t, q)
			assert.Len(t, q.Messages, 2)
			st := map[string]TxState{}
			for _, tx := range g.Transactions() {
				st[tx.ID] = tx.State
			}
			assert.Equal(t, InFlight, st[lt2.String()])
			assert.Equal(t, InFlight, st[xaOpen.String()])
			assert.Equal(t, Committed, st[lt.String()])
		}},
		// seed 496: the ack compaction forwarded a prepared XA
		// transaction's ack and its commit into later files. The broker's
		// replay starts a new in-flight transaction for an operation of a
		// prepared one (getInflightTx), and a commit ends the in-flight
		// one, not the prepared one. A send stands in for the forwarded
		// ack here (the same getInflightTx; an ack of a prepared
		// transaction needs a real MessageAck for the live broker); the
		// kept seed 496 has the ack itself.
		{name: "prepared-then-more-and-commit", maxFile: 4096, build: preparedThenSend(xaPrep, codec.CommitCommand),
			check: func(t *testing.T, g *Graph) {
				prep := g.PreparedTransactions()
				require.Len(t, prep, 1, "the transaction stays prepared")
				assert.Equal(t, xaPrep.String(), prep[0].ID)
				require.Len(t, prep[0].Ops, 1, "its first send only")
				assert.Equal(t, prodB.key(1), prep[0].Ops[0].MessageID)
				xa, _ := g.Destination("0:Q.XA")
				require.NotNil(t, xa)
				require.Len(t, xa.Messages, 1, "the later send alone is committed")
				assert.Equal(t, prodB.key(2), xa.Messages[0].ID())
				var states []TxState
				for _, tx := range g.Transactions() {
					if tx.ID == xaPrep.String() {
						states = append(states, tx.State)
					}
				}
				assert.ElementsMatch(t, []TxState{Prepared, Committed}, states)
				f, _ := g.File(1)
				require.NotNil(t, f)
				assert.True(t, f.Pinned, "the prepared transaction keeps db-1.log")
			}},
		// a prepare of an in-flight transaction whose id is prepared
		// already replaces the prepared one in the broker's map
		// (preparedTransactions.put): the first one's send is forgotten,
		// neither committed nor rolled back
		{name: "prepared-twice", maxFile: 4096, build: preparedThenSend(xaPrep, codec.PrepareCommand),
			check: func(t *testing.T, g *Graph) {
				prep := g.PreparedTransactions()
				require.Len(t, prep, 1)
				require.Len(t, prep[0].Ops, 1, "the second send only")
				assert.Equal(t, prodB.key(2), prep[0].Ops[0].MessageID)
				assert.Contains(t, strings.Join(g.Warnings(), "\n"), "prepared again while prepared")
			}},
		{name: "destination-order", maxFile: 16384, build: func(j *journal) {
			// 30 destinations: the broker's HashMap grows to 64 buckets
			for i := 0; i < 20; i++ {
				j.add(queue(fmt.Sprintf("Q.%02d", i)), prodA, int64(i+1), addOpt{})
			}
			for i := 0; i < 10; i++ {
				tp := fmt.Sprintf("T.%02d", i)
				j.subscribe(tp, "c", "s", "")
				j.add(topic(tp), prodB, int64(i+1), addOpt{})
			}
			// removal and re-creation moves a key to the end of its bucket
			j.removeDest(queue("Q.03"))
			j.add(queue("Q.03"), prodA, 100, addOpt{})
			j.unsubscribe("T.04", "c:s")
			// garbage files keep the candidate set non-empty, so that the
			// cleanup visits (and logs) every destination
			j.fillTo(2)
			j.fillTo(3)
			j.fillTo(4)
		}, check: func(t *testing.T, g *Graph) {
			assert.Len(t, g.DestinationOrder(), 29)
			assert.Equal(t, []int32{2, 3}, g.GCCandidates())
			n := 0
			for _, l := range g.GCLog() {
				if strings.HasPrefix(l, "gc candidates after dest:") {
					n++
				}
			}
			assert.Equal(t, 29, n, "every destination visited")
			_, ok := g.Destination("1:T.04")
			assert.False(t, ok, "the last subscription's removal removes the topic")
		}},
		{name: "compaction-skip", maxFile: 4096, build: func(j *journal) {
			j.add(queue("Q.C"), prodA, 1, addOpt{})
			j.add(queue("Q.C"), prodA, 2, addOpt{})
			j.fillTo(2)
			j.ack(queue("Q.C"), prodA.key(1), "", nil, acked)
			j.fillTo(3)
			require.NoError(t, j.w.Close())
			j.w = codec.NewJournalWriter(j.dir, codec.WriterOptions{FirstID: 5, MaxFileLength: 1 << 20, NoSync: true})
			// forwarded acks of db-2.log, which still exists: skipped; the
			// extra ack of message 2 is therefore never replayed
			j.rewritten(2)
			j.ack(queue("Q.C"), prodA.key(1), "", nil, acked)
			j.ack(queue("Q.C"), prodA.key(2), "", nil, acked)
		}, check: func(t *testing.T, g *Graph) {
			q, _ := g.Destination("0:Q.C")
			require.NotNil(t, q)
			require.Len(t, q.Messages, 1)
			assert.Equal(t, prodA.key(2), q.Messages[0].ID())
			f5, _ := g.File(5)
			assert.True(t, f5.Compaction)
			assert.Equal(t, 2, f5.Skipped)
			f2, _ := g.File(2)
			require.True(t, f2.Pinned)
			assert.Equal(t, KindAcks, f2.Reasons[0].Kind)
			assert.Equal(t, []int32{1}, f2.Reasons[0].Files)
		}},
		{name: "restart-rotates", maxFile: 4096, build: func(j *journal) {
			j.add(queue("Q.R"), prodA, 1, addOpt{})
			j.fillTo(2)
			// leave db-2.log so full that the LOADED trace of a restart
			// goes to a new db-3.log: then db-2.log can be deleted
			loc := j.trace("x")
			end := int(loc.Offset + loc.Size)
			target := 4096 - 20
			for n := 0; n < 4096; n++ {
				if s := traceSize(n); end+s == target {
					j.trace(strings.Repeat("y", n))
					break
				}
			}
		}, check: func(t *testing.T, g *Graph) {
			s := g.Summary()
			assert.Equal(t, int32(3), s.CleanupLastUpdate.File)
			assert.Equal(t, []int32{2}, g.GCCandidates())
		}},
		{name: "duplicates-and-topic-gaps", maxFile: 8192, build: func(j *journal) {
			j.subscribe("T.D", "c", "s", "")
			j.add(topic("T.D"), prodA, 1, addOpt{})
			j.add(topic("T.D"), prodA, 1, addOpt{}) // duplicate: rejected, seq consumed
			j.ack(topic("T.D"), prodA.key(1), "c:s", nil, acked)
			j.add(topic("T.D"), prodA, 2, addOpt{})
			j.add(queue("Q.D"), prodB, 1, addOpt{})
			j.add(queue("Q.D"), prodB, 1, addOpt{})
			j.add(topic("T.NOSUB"), prodB, 9, addOpt{}) // no subscription: not stored
		}, check: func(t *testing.T, g *Graph) {
			d, _ := g.Destination("1:T.D")
			require.NotNil(t, d)
			require.Len(t, d.Subscriptions, 1)
			// marker of message 1 plus the gap: the broker counts 2
			assert.Equal(t, int64(2), d.Subscriptions[0].Count)
			assert.Equal(t, 1, d.Subscriptions[0].NumPending())
			q, _ := g.Destination("0:Q.D")
			require.NotNil(t, q)
			assert.Len(t, q.Messages, 1)
			nt, ok := g.Destination("1:T.NOSUB")
			require.True(t, ok)
			assert.Empty(t, nt.Messages)
			assert.NotEmpty(t, g.Warnings())
		}},
	}
}

// traceSize is the record size of a trace command with an n-byte message.
func traceSize(n int) int {
	c := codec.Command{Type: codec.TraceCommand, Text: make([]byte, n)}
	c.Set(codec.FieldTraceMessage)
	return len(codec.AppendCommand(nil, &c)) + codec.RecordHeaderSize
}

func TestScenarios(t *testing.T) {
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			j := newJournal(t, sc.maxFile)
			sc.build(j)
			dir := j.close()
			g := replayDir(t, dir, int64(sc.maxFile))
			sc.check(t, g)
		})
	}
}

// TestScenariosLiveBroker runs the real broker on every synthetic journal.
func TestScenariosLiveBroker(t *testing.T) {
	requireBroker(t)
	for _, sc := range scenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			j := newJournal(t, sc.maxFile)
			sc.build(j)
			dir := j.close()
			g := replayDir(t, dir, int64(sc.maxFile))
			v, log := runInspect(t, dir, int64(sc.maxFile))
			compareWithBroker(t, g, v)
			assert.Equal(t, brokerGCLines(t, log), gcLines(g.GCLog()), "cleanup log")
		})
	}
}

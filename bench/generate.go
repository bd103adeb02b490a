package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/store"
)

// genVersion changes whenever the generator writes different bytes for the
// same configuration; it is part of the cache key.
const genVersion = 2

// The workload. Shares are of send steps; the rest of the steps send one
// plain message to a queue.
//
// What stays pending: nothing in the first third of the store, so that a
// broker's cleanup deletes those files. Their subscription commands would
// keep the first file: at rewriteAt the topics go quiet until every
// subscription has acked everything, and the subscription commands are
// written again, as the broker's cleanup rewrites them when their file is
// the oldest candidate and they have nothing pending. Then come stuck
// queue messages, an XA transaction left in doubt, DLQ bursts, an offline
// subscription and, at the end, the acks not yet written. From the first
// pending message on, every later file holds acks of messages in the file
// before it and is kept with it (the broker's ack-file rule), as in real
// stores where one old message pins everything after it.
const (
	xaShare       = 0.03 // XA transaction: 1-3 adds to a queue, prepare, commit
	localShare    = 0.10 // local transaction: 1-5 adds to one destination, commit
	topicShare    = 0.25 // one plain message to a topic
	rollbackShare = 0.10 // of local transactions: rolled back instead
	localAckShare = 0.10 // of the queue acks due at a step: acked in one local transaction
	maxLag        = 3000 // an ack is written 1..maxLag steps after its message
	rewriteAt     = 0.30 // progress at which topics go quiet so the subscriptions get rewritten
	stuckFrom     = 0.35 // from here on, stuckRate of the queue messages are never acked
	stuckRate     = 2e-5
	preparedAt    = 0.40 // progress at which an XA transaction is prepared and left in doubt
	dlqShare      = 0.30 // of queue sends during a DLQ burst: to the DLQ (never consumed)
	offlineFrom   = 0.85 // progress from which one durable subscription stops acking
	checkpointGap = 1.5  // data files between two checkpoints (48 MiB with 32 MiB files)
	bodyMin       = 200
	bodyMax       = 64 << 10
	fillerSize    = 128 << 10
)

// dlqBursts are the progress ranges in which queue sends partly go to the DLQ.
var dlqBursts = [][2]float64{{0.45, 0.46}, {0.70, 0.705}}

var queueNames = []string{"ORDERS.IN", "ORDERS.OUT", "BILLING", "SHIPPING", "INVENTORY", "NOTIFY",
	"PAYMENTS", "REPORTS", "EMAIL", "SEARCH.INDEX"}

const dlqName = "ActiveMQ.DLQ"

// topicSubs: each topic and its durable subscriptions (clientId, name).
var topicSubs = []struct {
	name string
	subs [][2]string
}{
	{"PRICES", [][2]string{{"archive", "prices"}, {"pricing-svc", "prices"}, {"risk-svc", "prices"}}},
	{"EVENTS", [][2]string{{"events-a", "events"}, {"events-b", "events"}}},
	{"AUDIT", [][2]string{{"auditor", "audit"}}},
}

// offlineSub is the subscription (topic 0, sub 0) that goes offline.
const offlineTopic, offlineSub = 0, 0

const (
	connPrefix   = "ID:benchhost-41234-1795990400000-1:"
	numProducers = 12
	numConsumers = 4
	xaFormat     = 4660
)

// genConfig sizes the generated store.
type genConfig struct {
	Bytes      int64  `json:"bytes"`      // journal bytes to write (the last record may pass it)
	FileLength int    `json:"fileLength"` // journalMaxFileLength
	BatchSize  int    `json:"batchSize"`  // largest write batch
	Seed       uint64 `json:"seed"`
	// Shape names the workload's mix (shapes); "" is the default one.
	Shape  string `json:"shape,omitempty"`
	NoSync bool   `json:"-"`
}

// shape is what a workload leaves pending and how big its bodies are.
// The zero values are the default workload's (and draw no extra random
// numbers, so its bytes do not change).
type shape struct {
	// dlqShare: of the queue sends from offlineFrom on, those sent to
	// the DLQ (never consumed), besides the DLQ bursts.
	dlqShare float64
	// slowShare: of the queue sends from offlineFrom on, those sent to
	// slowQueue, whose consumer never acks from then on.
	slowShare float64
	// offlineWeight: of the topic sends, those to the offline
	// subscription's topic (0: every topic alike).
	offlineWeight float64
	// offlineFrom: progress from which the offline subscription stops
	// acking, and dlqShare and slowShare apply (0: the default's).
	offlineFrom float64
	// smallBodies: 200 B to 2 KiB for 95 % of the messages, 2 to 16 KiB
	// for the rest.
	smallBodies bool
}

// shapes are the workloads -shape names.
var shapes = map[string]shape{
	"": {},
	// A dead-letter queue nobody reads, a slow queue and an offline durable
	// subscription holding hundreds of thousands of messages (issue 15):
	// at 2.5 GB about 500 k, 100 k and 250 k pending.
	"big-pending": {dlqShare: 0.55, slowShare: 0.09, offlineWeight: 0.7, offlineFrom: 0.2, smallBodies: true},
	// big-pending's kind of store, written by a real broker (brokerstore.go)
	brokerShape: {},
}

// slowQueue is the queue of shape.slowShare.
const slowQueue = "REPORTS"

// manifest describes a generated store.
type manifest struct {
	Version       int              `json:"version"`
	Config        genConfig        `json:"config"`
	Files         int              `json:"files"`
	Bytes         int64            `json:"bytes"`
	Records       int64            `json:"records"`
	Counts        map[string]int64 `json:"counts"`
	Messages      int64            `json:"messages"` // adds written (rolled back included)
	RolledBack    int64            `json:"rolledBack"`
	Pending       int64            `json:"pending"` // messages still held at the end, by cause:
	PendingDLQ    int64            `json:"pendingDLQ"`
	PendingStuck  int64            `json:"pendingStuck"`
	PendingSub    int64            `json:"pendingOfflineSubscription"`
	PendingFlight int64            `json:"pendingInFlight"`
	PendingXA     int64            `json:"pendingPreparedXA"`
	PreparedTx    int              `json:"preparedTransactions"`
	QueuePending  map[string]int64 `json:"queuePending"`        // by queue name (prepared adds not included)
	SubPending    map[string]int64 `json:"subscriptionPending"` // by "topic://NAME|clientId:subName"
	Destinations  int              `json:"destinations"`
	Subscriptions int              `json:"subscriptions"`
	SampleID      string           `json:"sampleMessageId"` // a pending message, the DLQ's first if any (grep target)
	BodyBytes     int64            `json:"bodyBytes"`
	Templates     int              `json:"templateRecords"` // fixture records read
	Seconds       float64          `json:"seconds"`
	// JavaOpts: the JVM options of the broker that wrote the store
	// (brokerShape; "" for a generated one)
	JavaOpts string `json:"javaOpts,omitempty"`
}

// msgRef names a message written by the generator.
type msgRef struct {
	prod int32 // producer index
	dest int16 // destination index
	seq  int64 // producer sequence id
	bseq int64 // broker sequence id
}

// dueAck is an ack to write at a later step: for a queue message (sub -1)
// or for one subscription of a topic message. counted: the message is
// already counted as pending (the offline subscription holds it).
type dueAck struct {
	msg     msgRef
	sub     int16
	counted bool
}

type destination struct {
	d     codec.Destination
	subs  []string    // subscription keys clientId:name (topics)
	names [][2]string // clientId, subscription name of each
	dlq   bool
}

// generator writes the store. Its memory is the templates, one step's
// buffers and the acks not yet due (at most maxLag steps of them).
type generator struct {
	cfg   genConfig
	w     *codec.JournalWriter
	ts    *templates
	rng   *rand.Rand
	man   *manifest
	dests []destination
	prods []producer
	pseq  []int64 // last sequence id per producer
	txSeq []int64 // last local transaction id per connection (producers, then consumers)
	bseq  int64
	xaSeq int64
	ring  [][]dueAck // acks due at step s are in ring[s % len(ring)]
	step  int64
	done  int64 // bytes written, approximately
	nextC int64 // next checkpoint
	prep  bool  // the in-doubt XA transaction is written
	quiet int64 // step until which no message goes to a topic (0: not yet)
	rewr  bool  // the subscriptions are rewritten
	err   error
	sh    shape
	slow  int // index of slowQueue

	filler               []byte
	cmd                  codec.Command
	blob, obj, body, txt []byte
}

func newGenerator(dir string, cfg genConfig, ts *templates) *generator {
	g := &generator{cfg: cfg, ts: ts, rng: rand.New(rand.NewPCG(cfg.Seed, genVersion)),
		man: &manifest{Version: genVersion, Config: cfg, Counts: map[string]int64{}, Templates: ts.records,
			QueuePending: map[string]int64{}, SubPending: map[string]int64{}},
		ring: make([][]dueAck, maxLag+1), sh: shapes[cfg.Shape]}
	g.w = codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: cfg.FileLength,
		MaxBatchSize: cfg.BatchSize, NoSync: cfg.NoSync})
	g.nextC = g.checkpointBytes()
	g.initNames()
	g.filler = make([]byte, fillerSize+bodyMax)
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 "
	for i := range g.filler {
		g.filler[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return g
}

func (g *generator) initNames() {
	for i, q := range queueNames {
		if q == slowQueue {
			g.slow = i
		}
		g.dests = append(g.dests, destination{d: codec.NewDestination(codec.Queue, []byte(q))})
	}
	g.dests = append(g.dests, destination{d: codec.NewDestination(codec.Queue, []byte(dlqName)), dlq: true})
	for _, t := range topicSubs {
		d := destination{d: codec.NewDestination(codec.Topic, []byte(t.name))}
		for _, s := range t.subs {
			d.subs = append(d.subs, s[0]+":"+s[1])
			d.names = append(d.names, s)
		}
		g.dests = append(g.dests, d)
		g.man.Subscriptions += len(d.subs)
	}
	g.man.Destinations = len(g.dests)
	for i := range numProducers {
		g.prods = append(g.prods, producer{conn: connPrefix + strconv.Itoa(i+1), session: 1, value: 1})
	}
	g.pseq = make([]int64, numProducers)
	g.txSeq = make([]int64, numProducers+numConsumers)
}

// generate writes the store into dir (which must exist and be empty).
func generate(dir string, cfg genConfig, ts *templates) (*manifest, error) {
	g := newGenerator(dir, cfg, ts)
	g.writeStart()
	for g.err == nil && g.done < cfg.Bytes {
		g.nextStep()
	}
	if g.err != nil {
		return nil, g.err
	}
	if err := g.w.Close(); err != nil {
		return nil, err
	}
	g.countInFlight()
	return g.man, g.sizeFiles(dir)
}

func (g *generator) progress() float64 { return float64(g.done) / float64(g.cfg.Bytes) }

// writeStart writes what a broker writes when it first opens the store and
// its durable subscribers connect.
func (g *generator) writeStart() {
	g.cmd = g.pick(roleTrace).cmd
	g.append()
	for i := range g.dests {
		for k := range g.dests[i].subs {
			g.subscribe(i, k)
		}
	}
}

func (g *generator) nextStep() {
	g.step++
	g.maybeCheckpoint()
	if !g.prep && g.progress() >= preparedAt {
		g.prep = true
		g.sendInDoubt()
	}
	g.maybeRewriteSubs()
	switch r := g.rng.Float64(); {
	case r < xaShare:
		g.sendXA()
	case r < xaShare+localShare:
		g.sendLocal()
	case r < xaShare+localShare+topicShare:
		g.sendPlain(g.pickTopic())
	default:
		g.sendPlain(g.pickQueue())
	}
	g.writeDue()
}

func (g *generator) pickQueue() int {
	p := g.progress()
	if (g.sh.dlqShare > 0 || g.sh.slowShare > 0) && p >= g.sh.offlineFrom {
		switch r := g.rng.Float64(); {
		case r < g.sh.dlqShare:
			return len(queueNames)
		case r < g.sh.dlqShare+g.sh.slowShare:
			return g.slow
		}
	}
	for _, b := range dlqBursts {
		if p >= b[0] && p < b[1] && g.rng.Float64() < dlqShare {
			return len(queueNames)
		}
	}
	return g.rng.IntN(len(queueNames))
}

// pickTopic picks a topic, or a queue while topics are quiet.
func (g *generator) pickTopic() int {
	if g.quiet > 0 && !g.rewr {
		return g.pickQueue()
	}
	if g.sh.offlineWeight > 0 && g.rng.Float64() < g.sh.offlineWeight {
		return len(queueNames) + 1 + offlineTopic
	}
	return len(queueNames) + 1 + g.rng.IntN(len(topicSubs))
}

// maybeRewriteSubs quiets the topics at rewriteAt and, once their last acks
// are written, writes every subscription command again.
func (g *generator) maybeRewriteSubs() {
	switch {
	case g.rewr:
	case g.quiet == 0 && g.progress() >= rewriteAt:
		g.quiet = g.step + maxLag + 1
	case g.quiet > 0 && g.step > g.quiet:
		g.rewr = true
		for i := range g.dests {
			for k := range g.dests[i].subs {
				g.subscribe(i, k)
			}
		}
	}
}

func (g *generator) pick(r role) *template {
	list := g.ts.byRole[r]
	return list[g.rng.IntN(len(list))]
}

// sendPlain sends one message outside transactions and schedules its acks.
func (g *generator) sendPlain(dest int) {
	role := roleQueueAdd
	if g.dests[dest].d.Type == codec.Topic {
		role = roleTopicAdd
	}
	m := g.add(role, dest, codec.TxID{})
	g.consume(m)
}

// consume schedules the acks of a delivered message, or counts it pending
// when nobody will ack it.
func (g *generator) consume(m msgRef) {
	d := &g.dests[m.dest]
	switch {
	case d.dlq:
		g.pending(&g.man.PendingDLQ, m)
		g.held(m, -1)
	case g.sh.slowShare > 0 && int(m.dest) == g.slow && g.progress() >= g.sh.offlineFrom:
		g.pending(&g.man.PendingStuck, m)
		g.held(m, -1)
	case len(d.subs) == 0 && g.progress() >= stuckFrom && g.rng.Float64() < stuckRate:
		g.pending(&g.man.PendingStuck, m)
		g.held(m, -1)
	case len(d.subs) == 0:
		g.schedule(dueAck{msg: m, sub: -1})
	default:
		g.consumeTopic(m, d)
	}
}

func (g *generator) consumeTopic(m msgRef, d *destination) {
	from := offlineFrom
	if g.sh.offlineFrom > 0 {
		from = g.sh.offlineFrom
	}
	offline := int(m.dest) == len(queueNames)+1+offlineTopic && g.progress() >= from
	if offline {
		g.pending(&g.man.PendingSub, m)
		g.held(m, offlineSub)
	}
	for k := range d.subs {
		if offline && k == offlineSub {
			continue
		}
		g.schedule(dueAck{msg: m, sub: int16(k), counted: offline})
	}
}

// pending counts message m as held at the end (once per message, under
// its cause).
func (g *generator) pending(counter *int64, m msgRef) {
	*counter++
	if g.man.SampleID == "" || (counter == &g.man.PendingDLQ && g.man.PendingDLQ == 1) {
		g.man.SampleID = g.messageID(m) // prefer the DLQ's first message
	}
}

// held counts message m in the pending set of its queue (sub < 0) or of
// subscription sub of its topic, as a broker reports them.
func (g *generator) held(m msgRef, sub int16) {
	d := &g.dests[m.dest]
	if sub < 0 {
		g.man.QueuePending[string(d.d.Name)]++
		return
	}
	g.man.SubPending[d.d.String()+"|"+d.subs[sub]]++
}

func (g *generator) schedule(a dueAck) {
	due := (g.step + 1 + g.rng.Int64N(maxLag)) % int64(len(g.ring))
	g.ring[due] = append(g.ring[due], a)
}

// sendLocal sends 1-5 messages to one destination in a local transaction
// and commits it (or rolls it back).
func (g *generator) sendLocal() {
	dest := g.pickQueue()
	if g.rng.IntN(5) == 0 {
		dest = g.pickTopic()
	}
	p := g.rng.IntN(numProducers)
	tx := g.localTx(p, g.prods[p].conn)
	msgs := make([]msgRef, 1+g.rng.IntN(5))
	for i := range msgs {
		msgs[i] = g.addBy(roleLocalAdd, dest, tx, p)
	}
	if g.rng.Float64() < rollbackShare {
		g.man.RolledBack += int64(len(msgs))
		g.txEnd(roleRollback, tx)
		return
	}
	g.txEnd(roleCommit, tx)
	for _, m := range msgs {
		g.consume(m)
	}
}

// sendXA sends 1-3 messages to a queue in an XA transaction, prepares and
// commits it.
func (g *generator) sendXA() {
	dest := g.pickQueue()
	xid := g.xid()
	msgs := make([]msgRef, 1+g.rng.IntN(3))
	for i := range msgs {
		msgs[i] = g.add(roleXAAdd, dest, xid)
	}
	g.txEnd(rolePrepare, xid)
	g.txEnd(roleXACommit, xid)
	for _, m := range msgs {
		g.consume(m)
	}
}

// sendInDoubt leaves an XA transaction prepared: two adds and the ack of a
// message sent just before it. All three stay in the store; the queue's
// count (QueuePending, as the broker reports it) leaves the acked one out.
func (g *generator) sendInDoubt() {
	acked := g.add(roleQueueAdd, 0, codec.TxID{})
	xid := g.xid()
	for range 2 {
		g.pending(&g.man.PendingXA, g.add(roleXAAdd, 1, xid))
	}
	g.ack(roleXAAck, acked, -1, xid)
	// acked inside a prepared transaction: kept in the store, but the
	// broker neither counts nor delivers it until the outcome
	g.pending(&g.man.PendingXA, acked)
	g.txEnd(rolePrepare, xid)
	g.man.PreparedTx++
}

// writeDue writes the acks due at this step; with localAckShare the queue
// acks among them are acked in one local transaction of a consumer.
func (g *generator) writeDue() {
	slot := &g.ring[g.step%int64(len(g.ring))]
	due := *slot
	*slot = due[:0]
	var tx codec.TxID
	if g.rng.Float64() < localAckShare {
		c := numProducers + g.rng.IntN(numConsumers)
		tx = g.localTx(c, connPrefix+strconv.Itoa(1000+c))
	}
	queueAcks := 0
	for _, a := range due {
		switch {
		case a.sub >= 0:
			g.ack(roleTopicAck, a.msg, a.sub, codec.TxID{})
		case tx.Kind == codec.LocalTx:
			g.ack(roleLocalAck, a.msg, -1, tx)
			queueAcks++
		default:
			g.ack(roleQueueAck, a.msg, -1, codec.TxID{})
		}
	}
	if queueAcks > 0 {
		g.txEnd(roleCommit, tx)
	}
}

func (g *generator) localTx(conn int, connID string) codec.TxID {
	g.txSeq[conn]++
	return codec.NewLocalTx([]byte(connID), g.txSeq[conn])
}

func (g *generator) xid() codec.TxID {
	g.xaSeq++
	return codec.NewXATx(xaFormat, []byte("kahafs-bench-gtrid-"+strconv.FormatInt(g.xaSeq, 10)), []byte("bq-1"))
}

// maybeCheckpoint writes the producer audit and the ack file map, as the
// broker's periodic checkpoint does. Their Java-serialized blobs are the
// templates' (a broker reads them back only through its index, which the
// generated store does not have).
func (g *generator) maybeCheckpoint() {
	if g.done < g.nextC {
		return
	}
	g.nextC += g.checkpointBytes()
	for _, r := range []role{roleAudit, roleAckMap} {
		g.cmd = g.pick(r).cmd
		g.append()
	}
}

func (g *generator) checkpointBytes() int64 { return int64(checkpointGap * float64(g.cfg.FileLength)) }

// countInFlight counts the messages whose acks were still due at the end
// (consumers behind): they stay pending.
func (g *generator) countInFlight() {
	seen := map[msgRef]bool{}
	for _, slot := range g.ring {
		for _, a := range slot {
			g.held(a.msg, a.sub)
			if !a.counted && !seen[a.msg] {
				seen[a.msg] = true
				g.pending(&g.man.PendingFlight, a.msg)
			}
		}
	}
	m := g.man
	m.Pending = m.PendingDLQ + m.PendingStuck + m.PendingSub + m.PendingFlight + m.PendingXA
}

func (g *generator) sizeFiles(dir string) error {
	l, err := store.Locate(dir)
	if err != nil {
		return err
	}
	g.man.Files = len(l.Journal.Files)
	for _, f := range l.Journal.Files {
		g.man.Bytes += f.Size
	}
	return nil
}

// bodyLen draws a body size from 200 B to 64 KiB: mostly small messages,
// some medium, a few large (log-uniform within each band).
func (g *generator) bodyLen() int {
	lo, hi := bodyMin, 1<<10
	if g.sh.smallBodies {
		lo, hi = 200, 2<<10
		if g.rng.Float64() >= 0.95 {
			lo, hi = 2<<10, 16<<10
		}
		return int(float64(lo) * math.Exp(g.rng.Float64()*math.Log(float64(hi)/float64(lo))))
	}
	switch r := g.rng.Float64(); {
	case r >= 0.97:
		lo, hi = 8<<10, bodyMax
	case r >= 0.85:
		lo, hi = 1<<10, 8<<10
	}
	return int(float64(lo) * math.Exp(g.rng.Float64()*math.Log(float64(hi)/float64(lo))))
}

func (g *generator) messageID(m msgRef) string {
	return g.prods[m.prod].String() + ":" + strconv.FormatInt(m.seq, 10)
}

func (g *generator) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// append writes g.cmd and counts it.
func (g *generator) append() {
	if g.err != nil {
		return
	}
	loc, err := g.w.AppendCommand(&g.cmd)
	if err != nil {
		g.fail(fmt.Errorf("generate: %w", err))
		return
	}
	g.man.Records++
	g.man.Counts[g.cmd.Type.String()]++
	files := int64(len(g.w.Files()))
	g.done = (files-1)*int64(g.cfg.FileLength) + int64(loc.Offset) + int64(loc.Size)
}

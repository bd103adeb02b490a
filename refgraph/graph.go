package refgraph

import (
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/kahafs/kahafs/codec"
)

// Graph is the result of replaying a store: destinations with their pending
// messages, durable subscriptions, transactions, and for every data file the
// holders that keep it (reasons) together with the broker's next cleanup.
//
// A Graph is immutable once Build returned it and safe for any number of
// concurrent readers. Slices and pointers it hands out are shared: callers
// must not modify them.
type Graph struct {
	files    []*File
	fileByID map[int32]*File
	dests    []*Destination // sorted by qualified name
	destByK  map[string]*Destination
	order    []string       // destination keys in the broker's GC iteration order
	txs      []*Transaction // with lazy: only the open ones
	// lazy: the finished transactions when all are kept (a mount),
	// still encoded; made (with lazyTail) into all by allOnce.
	lazy     *lazyTxs
	lazyTail []*Transaction
	allOnce  sync.Once
	all      []*Transaction
	// lazyMu guards lazy.ids and lazy.recs, which allOnce drops, and
	// txIdx (IndexTransactions) against TransactionsWithID
	lazyMu sync.Mutex
	txIdx  *txIndex
	gc     []int32
	gcLog  []string
	// cleanIn: what the cleanup emulation read (whatif.go)
	cleanIn *cleanupInput
	// keptForAcks: the files the cleanup keeps only for their acks
	keptForAcks []int32
	diffs       []IndexDiff
	rebuildLoss []RebuildLoss // rebuild.go
	summary     Summary
	damaged     bool
	indexDamage []string
	warnings    []string
}

// File is one data file (db-N.log) and why it is kept.
type File struct {
	ID   int32
	Name string
	// Size is the apparent size on disk, End the logical end of its data.
	Size, End int64
	// Commands is the number of decoded commands in the file; Skipped how
	// many of them the broker does not replay (ack-compaction file whose
	// source still exists, §5.2).
	Commands, Skipped int
	// Compaction: the file starts with KAHA_REWRITTEN_DATA_FILE_COMMAND;
	// Source is the file whose acks it carries.
	Compaction bool
	Source     int32
	// Pinned is false exactly when the broker deletes the file at its next
	// cleanup (the id is in Graph.GCCandidates).
	Pinned bool
	// Reasons lists the holders that keep the file, in the order of the
	// broker's cleanup steps. Every pinned file has at least one. A free
	// file has none.
	Reasons []Reason
	// Notes are remarks that do not pin the file: a subscription the
	// broker rewrites to free it, or where a fixpoint reading of the
	// references disagrees with the broker's single pass.
	Notes []Reason
	// Damage found while reading the file (torn tails included).
	Damage []*codec.CorruptionError
	// AcksFor are the other data files of the store holding messages that
	// this file's acks are for (the broker's ack-message-file map), and
	// AckedBy the files whose acks are for messages in this one, ascending
	// (ackchain.go). ChainStart: for a file kept by its acks (a KindAcks
	// reason), the kept files at the start of its ack chains, reached over
	// AcksFor through files kept by their acks alone: those kept by
	// another holder.
	AcksFor, AckedBy, ChainStart []int32
}

// ReasonKind names a kind of holder. The values are part of the JSON
// contract of `kahafs holders` (docs/holders.md).
type ReasonKind string

// Reason kinds, in the order the broker's cleanup evaluates them (§6.2).
const (
	// KindLastUpdate: the file is the one the broker's last update is in,
	// or newer; the broker never deletes those (it writes to them).
	KindLastUpdate ReasonKind = "last-update"
	// KindProducerAudit: the file holds the producer audit record the
	// broker's index points at.
	KindProducerAudit ReasonKind = "producer-audit"
	// KindAckMap: the file holds the ack-message-file-map record the
	// broker's index points at.
	KindAckMap ReasonKind = "ack-map"
	// KindTransactionRange: the file lies between the first and the last
	// operation of the transactions in progress (prepared XA after a
	// restart), inclusive.
	KindTransactionRange ReasonKind = "transaction-range"
	// KindPendingMessages: the file holds messages a destination still
	// has (the ADD or latest UPDATE record).
	KindPendingMessages ReasonKind = "pending-messages"
	// KindSubscription: the file holds the latest subscription command of
	// a durable subscription.
	KindSubscription ReasonKind = "subscription"
	// KindAcks: the file holds acks (or commit/prepare records) for
	// messages in files that are kept; deleting it would let a replay
	// resurrect those messages.
	KindAcks ReasonKind = "acks"
	// KindIndexDamaged: the broker's index (db.data) is damaged or its
	// structures disagree (kahaindex notes), or it could not be used:
	// what the broker's cleanup keeps is not known, so no file's deletion
	// is predicted (a real broker kept files that such an index no longer
	// shows: refgraph TestDamagedOrderIndexKeepsLocationFiles).
	KindIndexDamaged ReasonKind = "index-damaged"
	// KindUnreadable: the file (or part of it) could not be read, so what
	// it holds is unknown: kahafs never predicts its deletion.
	KindUnreadable ReasonKind = "unreadable"

	// Notes (File.Notes), never pins.

	// KindSubscriptionRewrite: the broker appends a copy of this durable
	// subscription's command to the journal so that the file can go.
	KindSubscriptionRewrite ReasonKind = "subscription-rewrite"
	// KindFixpointDiffers: the broker's single ascending pass over the
	// ack references deletes this file although its acks refer to a file
	// that is kept.
	KindFixpointDiffers ReasonKind = "fixpoint-differs"
	// KindCompactionSkipped: an ack-compaction file whose records the
	// broker skips on replay because its source file still exists.
	KindCompactionSkipped ReasonKind = "compaction-skipped"
	// KindIndexKey: the file holds no message of a destination any more,
	// but a key of the destination's location index (a branch's, left
	// from a message removed since) names it: the broker's cleanup keeps
	// the file.
	KindIndexKey ReasonKind = "index-key"
	// KindTxStoreOutcome: an mKahaDB txStore file holding the decided
	// commit of a transaction that spans stores, not yet completed
	// (Graph.Pin: package store).
	KindTxStoreOutcome ReasonKind = "txstore-outcome"
)

// Reason is one holder of a data file. Kind says which fields are set.
// Text names the holder in plain words.
type Reason struct {
	Kind ReasonKind `json:"kind"`
	Text string     `json:"text"`
	// Destination: qualified name (queue://NAME, topic://NAME).
	Destination string `json:"destination,omitempty"`
	// Subscription: durable subscription key clientId:subscriptionName,
	// with its parts.
	Subscription     string `json:"subscription,omitempty"`
	ClientID         string `json:"clientId,omitempty"`
	SubscriptionName string `json:"subscriptionName,omitempty"`
	// Transactions: ids as the broker prints them.
	Transactions []string `json:"transactions,omitempty"`
	// Location of the holding record ("file:offset"), and Loc the same as
	// a value.
	Location string         `json:"location,omitempty"`
	Loc      codec.Location `json:"-"`
	// Range: the transaction range [first, last] ("file:offset").
	Range []string `json:"range,omitempty"`
	// Messages, Bytes: how many pending messages (and their record bytes)
	// the holder keeps in this file; FirstMessageID/LastMessageID the
	// first and last of them in delivery order.
	Messages       int    `json:"messages,omitempty"`
	Bytes          int64  `json:"bytes,omitempty"`
	FirstMessageID string `json:"firstMessageId,omitempty"`
	LastMessageID  string `json:"lastMessageId,omitempty"`
	// Subscriptions: durable subscriptions that still need the messages.
	Subscriptions []string `json:"subscriptions,omitempty"`
	// Pending: the subscription's pending count as the broker reports it.
	Pending *int64 `json:"pending,omitempty"`
	// Files: data file ids the holder refers to (acks: the kept files
	// whose messages the acks are for).
	Files []int32 `json:"files,omitempty"`
	// Rewrite: the broker rewrites this record at its next cleanup (the
	// pin goes away at the cleanup after).
	Rewrite bool `json:"rewrite,omitempty"`
	// FixpointDiffers: a reading that ignores the broker's evaluation
	// order would decide differently for this holder.
	FixpointDiffers bool `json:"fixpointDiffers,omitempty"`
}

// Destination is a queue or topic of the store's index after replay.
type Destination struct {
	Type codec.DestType
	Name string
	// Key is the broker's index key "<type>:<name>".
	Key string
	// Messages are the messages the store holds for the destination, in
	// the broker's order-index order (priority class HI, DEF, LO; by
	// sequence within a class): for a queue its messages, for a topic
	// every message still needed by at least one durable subscription.
	// Messages acked only inside a prepared transaction are included
	// (Destination.AckedInPreparedTx not ""): they keep their files. What a restarted
	// broker delivers is Pending (queues) and Subscription.Pending.
	Messages []Message
	// Stats are what the broker keeps in its index for the destination
	// (AMQ-7132): message count and record bytes.
	Stats DestStats
	// Subscriptions are the durable subscriptions of a topic, in the
	// index's subscription-location list order.
	Subscriptions []*Subscription
	// NextSeq is the sequence the broker gives the destination's next
	// message.
	NextSeq int64
	// IndexKeys are the keys of the branches of the destination's
	// location index, the first of each file, by file: the broker's
	// cleanup keeps their files, whether a message is still there or not
	// (a key stays in its branch after its message is gone).
	IndexKeys []codec.Location

	// delivery: indexes into Messages of what a restarted broker
	// delivers from the queue, in order; inDoubt: the queue's messages
	// acked inside a prepared transaction, which the broker holds back
	// until the outcome; undelivered: messages after the point where the
	// broker's (wrong) stored count stops its store cursor.
	delivery, inDoubt, undelivered []int32
	// ackedTx: the prepared transaction that acks a message, by its
	// sequence (few: kept aside rather than a field of every Message)
	ackedTx map[int64]string
}

// AckedInPreparedTx is the prepared transaction that acks m, one of the
// destination's Messages ("" if none); the broker keeps the message until
// its outcome.
func (d *Destination) AckedInPreparedTx(m *Message) string { return d.ackedTx[m.Seq] }

// Undelivered returns the queue's messages a restarted broker does not
// deliver because its stored count is smaller than what it holds (see
// Graph.Warnings).
func (d *Destination) Undelivered() []*Message { return pick(d.Messages, d.undelivered) }

// DeliveredIfCounted returns what a broker whose stored count is right
// delivers of the queue, in order: Pending, and where a drifted count
// stops the broker early (Undelivered), every message not held back, in
// store order and then dispatch order — what a broker that rebuilds the
// index (a compacted store) delivers.
func (d *Destination) DeliveredIfCounted() []*Message {
	if len(d.undelivered) == 0 {
		return d.Pending()
	}
	held := make(map[int32]bool, len(d.inDoubt))
	for _, i := range d.inDoubt {
		held[i] = true
	}
	ix := make([]int32, 0, len(d.Messages)-len(d.inDoubt))
	for i := range d.Messages {
		if !held[int32(i)] {
			ix = append(ix, int32(i))
		}
	}
	return pick(d.Messages, dispatchOrder(d.Messages, ix))
}

// NumPending is the number of messages a restarted broker delivers from a
// queue (0 for a topic: see its subscriptions).
func (d *Destination) NumPending() int { return len(d.delivery) }

// PendingAt returns the i-th message a restarted broker delivers from the
// queue.
func (d *Destination) PendingAt(i int) *Message { return &d.Messages[d.delivery[i]] }

// Pending returns the delivered messages of a queue in order (a new slice).
func (d *Destination) Pending() []*Message { return pick(d.Messages, d.delivery) }

// InDoubt returns the queue's messages that a prepared XA transaction
// acknowledges, in the store's order (a new slice): the broker neither
// delivers nor counts them until the transaction manager decides.
func (d *Destination) InDoubt() []*Message { return pick(d.Messages, d.inDoubt) }

func pick(ms []Message, ix []int32) []*Message {
	out := make([]*Message, len(ix))
	for i, j := range ix {
		out[i] = &ms[j]
	}
	return out
}

// IsTopic reports whether the destination is a topic.
func (d *Destination) IsTopic() bool { return d.Type.IsTopic() }

// String is the qualified name, e.g. queue://ORDERS.
func (d *Destination) String() string { return d.Type.Scheme() + "://" + d.Name }

// DestStats are per-destination statistics.
type DestStats struct {
	// Messages and Bytes are what the index holds for the destination
	// (Bytes: the sum of the holding records' sizes).
	Messages int64
	Bytes    int64
	// Count is the message count a restarted broker reports for the
	// destination (JMX QueueSize): for a queue, Messages less the
	// messages acked inside prepared transactions (InDoubt).
	Count   int64
	InDoubt int64
	// CountDrift: how far the index's stored count (which Count starts
	// from) is off the messages the destination holds; 0 without an
	// index (a rebuilt index counts right).
	CountDrift int64
	// Files are the data files holding the destination's messages.
	Files []int32
}

// Message is a message held by the store. Its body is not kept: read the
// record at Loc to get it.
type Message struct {
	// id is the message id as the replay keeps it (see ID)
	id msgID
	// Loc is the record holding the message: the ADD or its latest UPDATE.
	Loc codec.Location
	// Priority is the JMS priority of that record; PrioritySupported its
	// prioritySupported flag (false puts every message in class DEF).
	Priority int32
	// Size is the size of the OpenWire message (KahaAddMessageCommand.message).
	Size              int32
	PrioritySupported bool
	// Updated: Loc is a KAHA_UPDATE_MESSAGE_COMMAND.
	Updated bool
	// Unreadable: the index holds the message, but its record could not
	// be read (damage, a file cut short): the broker fails to deliver it,
	// and a compaction cannot carry it (the warnings say why).
	Unreadable bool
	// inTx: added in a transaction (stored at its commit; rebuild.go)
	inTx bool
	// Seq is the broker's sequence id in the destination's order index.
	Seq int64
}

// ID returns the message id (the producer's message id as the journal
// holds it). It is made on each call: a graph of many messages keeps only
// the producer part of their ids.
func (m *Message) ID() string { return m.id.String() }

// AppendID appends the message id to dst (without making a string).
func (m *Message) AppendID(dst []byte) []byte {
	k := m.id
	if k.prefix == nil {
		return dst
	}
	dst = append(dst, *k.prefix...)
	if k.seq < 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, ':'), k.seq, 10)
}

// NewMessage is a message with the given id at loc, for tools and tests
// that make messages without a replay.
func NewMessage(id string, loc codec.Location) *Message {
	return &Message{id: msgID{prefix: &id, seq: -1}, Loc: loc}
}

// HasID reports whether the message's id is id (without making it).
func (m *Message) HasID(id string) bool { return m.id.is(id) }

// msgID is a message id held as the producer key (shared by the messages
// of a producer) and the producer sequence: "<prefix>:<seq>", or the
// prefix alone when seq < 0 (see msgKey).
type msgID struct {
	prefix *string
	seq    int64
}

func (k msgID) String() string {
	if k.prefix == nil {
		return ""
	}
	if k.seq < 0 {
		return *k.prefix
	}
	return *k.prefix + ":" + strconv.FormatInt(k.seq, 10)
}

// is reports whether the id is s, without making the id.
func (k msgID) is(s string) bool {
	if k.prefix == nil {
		return s == ""
	}
	p := *k.prefix
	if k.seq < 0 {
		return s == p
	}
	if len(s) <= len(p)+1 || s[:len(p)] != p || s[len(p)] != ':' {
		return false
	}
	var buf [20]byte
	return s[len(p)+1:] == string(strconv.AppendInt(buf[:0], k.seq, 10))
}

// Subscription is a durable topic subscription.
type Subscription struct {
	Destination      *Destination
	Key              string // clientId:subscriptionName, as in the journal
	ClientID         string
	SubscriptionName string
	Selector         string
	HasSelector      bool
	NoLocal          bool
	Retroactive      bool
	// Loc is the subscription's latest KahaSubscriptionCommand.
	Loc codec.Location
	// Count is the pending count the broker reports (ackPositions size
	// minus the next-message marker).
	Count int64
	// LastAck is the sequence of the last processed ack (-1: none).
	LastAck int64
	// AckPositions is the broker's ack-position set of the subscription
	// (inclusive ranges of sequences, ascending): the messages it still
	// needs and the next-message marker, and sequences of messages that
	// are gone; nil when the index has no entry. Count is its size less
	// one; delivery follows it or LastAck (§5.4).
	AckPositions []SeqRange
	// first: the first command adding it a journal-only rebuild meets
	// (rebuild.go)
	first    codec.Location
	hasFirst bool
	// pending: indexes into Destination.Messages, in delivery order;
	// inDoubt: messages the subscription acked inside a prepared
	// transaction (not delivered until the outcome).
	pending, inDoubt []int32
	// batch: how the store's batches made pending, when the first is
	// filtered by the ack positions and the others are not (nil: one
	// rule for all)
	batch *storeBatches
}

// Recovered returns the messages the store hands the subscription's
// cursor, in order, when match says which messages its selector takes:
// Pending, less those match refuses, except where the first of the
// store's batches is filtered by the ack positions (§5.4, storeBatches):
// that batch ends with the MaxPageSize-th message taken, so a selector
// moves where the unfiltered batches start. match is called once a
// message at most, in order.
func (s *Subscription) Recovered(match func(*Message) bool) []*Message {
	if s.batch == nil {
		var out []*Message
		for _, i := range s.pending {
			if m := &s.Destination.Messages[i]; match(m) {
				out = append(out, m)
			}
		}
		return out
	}
	return pick(s.Destination.Messages, s.batch.recover(s.Destination.Messages, match))
}

// InDoubt returns the messages the subscription acknowledged inside a
// prepared XA transaction (a new slice): the broker does not deliver them
// until the outcome; Count still counts them.
func (s *Subscription) InDoubt() []*Message { return pick(s.Destination.Messages, s.inDoubt) }

// DeliveredAgain returns the messages the broker delivers to the
// subscription although it acknowledged them (they are not in its
// ack-position set): when its acks were processed out of order, the
// broker delivers every message after its last-acknowledged one (§5.4),
// acked ones included, as long as another subscription keeps them.
func (s *Subscription) DeliveredAgain() []*Message {
	var out []*Message
	for _, m := range s.Pending() {
		if !positionsHold(s.AckPositions, m.Seq) {
			out = append(out, m)
		}
	}
	return out
}

// PendingFiltered returns what the store would hand the subscription
// (no selector applied) if its last-ack position lay above every message,
// its ack positions and held messages as they are: what a compaction that
// drops redelivery (compact.Options.NoRedelivery) gives it. That is its
// ack positions' messages, except past the store's first batch
// (storeBatches): every stored message after the batch's last is handed
// too, acknowledged or not.
func (s *Subscription) PendingFiltered() []*Message {
	ms := s.Destination.Messages
	if len(s.AckPositions) == 0 {
		return nil
	}
	var held map[string]string
	if len(s.inDoubt) > 0 {
		held = map[string]string{}
		for _, i := range s.inDoubt {
			held[ms[i].ID()] = ""
		}
	}
	b, _ := filteredBatches(ms, s.AckPositions[0].First, s.InAckPositions, held)
	if len(b.filtered) <= MaxPageSize {
		return pick(ms, b.filtered)
	}
	return pick(ms, b.recover(ms, nil))
}

// InAckPositions reports whether the subscription's ack-position set
// holds sequence v.
func (s *Subscription) InAckPositions(v int64) bool { return positionsHold(s.AckPositions, v) }

func positionsHold(rs []SeqRange, v int64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].Last >= v })
	return i < len(rs) && rs[i].First <= v
}

// IndexDiff is a difference between the broker's index and what the
// journal alone tells: what a broker that rebuilt its index from the
// journal (db.data deleted or unreadable) would have instead.
type IndexDiff struct {
	// Kind: "destination" (only the journal has it: a rebuilt index
	// brings it back), "subscription" (likewise), "messages" (the journal
	// keeps messages the index no longer has: a rebuilt index delivers
	// them again), "index-only-destination", "index-only-subscription",
	// "index-only-messages" (the index keeps what the journal alone would
	// drop).
	Kind         string   `json:"kind"`
	Destination  string   `json:"destination"`
	Subscription string   `json:"subscription,omitempty"`
	Count        int      `json:"count,omitempty"`
	MessageIDs   []string `json:"messageIds,omitempty"` // the first ones
}

// SeqRange is an inclusive range of sequence ids.
type SeqRange struct{ First, Last int64 }

// NumPending is the number of messages the broker delivers to the
// subscription on recovery (may differ from Count, §5.4).
func (s *Subscription) NumPending() int { return len(s.pending) }

// PendingAt returns the i-th message delivered to the subscription.
func (s *Subscription) PendingAt(i int) *Message { return &s.Destination.Messages[s.pending[i]] }

// Pending returns the delivered messages in order (a new slice).
func (s *Subscription) Pending() []*Message { return pick(s.Destination.Messages, s.pending) }

// TxKind tells local from XA transactions.
type TxKind string

// Transaction kinds.
const (
	LocalTx TxKind = "local"
	XATx    TxKind = "xa"
)

// TxState is the state of a transaction at the end of the journal.
type TxState string

// Transaction states.
const (
	// InFlight: operations but no outcome. A restarted broker rolls a
	// local one back (and writes a rollback record) and discards an XA one.
	InFlight TxState = "in-flight"
	// Prepared: XA prepared; the broker keeps it until the transaction
	// manager decides.
	Prepared TxState = "prepared"
	// Committed and RolledBack: finished.
	Committed  TxState = "committed"
	RolledBack TxState = "rolled-back"
)

// Transaction is a local or XA transaction seen in the journal.
type Transaction struct {
	ID    string // as the broker prints it: TX:<conn>:<n> or XID:[...]
	Kind  TxKind
	State TxState
	// Commands are the locations of the transaction's records in journal
	// order: its operations, then prepare / commit / rollback.
	Commands []codec.Location
	// Ops are the transaction's message operations (kept for in-flight
	// and prepared transactions only; nil for finished ones).
	Ops []TxOp
	// InDoubt are the stored messages a prepared transaction acknowledges,
	// in the order of its acks: the broker holds them back from delivery
	// until the outcome (Destination.InDoubt, Subscription.InDoubt).
	InDoubt []*Message
}

// TxOp is an operation of a transaction.
type TxOp struct {
	Add          bool // ADD, else REMOVE (ack)
	Destination  string
	MessageID    string
	Subscription string // durable ack: subscription key
	Loc          codec.Location
}

// Summary counts what the graph holds.
type Summary struct {
	Files, PinnedFiles, FreeFiles int
	Commands, SkippedCommands     int64
	Destinations, Queues, Topics  int
	Subscriptions                 int
	Messages, MessageBytes        int64 // held by destinations
	InFlight, Prepared            int
	Committed, RolledBack         int64
	CompletedTransactionsKept     int
	// LastUpdate is the location of the last update while replaying
	// (HasLastUpdate false when none); CleanupLastUpdate the one the
	// predicted cleanup uses (after a restart: the LOADED trace).
	LastUpdate, CleanupLastUpdate       codec.Location
	HasLastUpdate, HasCleanupLastUpdate bool
	// RecoveryStart is where a restarted broker starts replaying over its
	// index (HasRecoveryStart false: before the first record).
	RecoveryStart    codec.Location
	HasRecoveryStart bool
	// UsedIndex: db.data metadata was supplied and used.
	UsedIndex bool
}

// Files lists every data file in id order.
func (g *Graph) Files() []*File { return g.files }

// File returns the data file with the given id.
func (g *Graph) File(id int32) (*File, bool) { f, ok := g.fileByID[id]; return f, ok }

// CompactionSources are the ids of the files the store's ack-compaction
// files carry the acks of (File.Source of each File.Compaction), in file
// order. The replay of a compaction file depends on whether its source
// exists (§5.2): a data file appearing with one of these ids changes the
// replay of what is already there.
func (g *Graph) CompactionSources() []int32 {
	var ids []int32
	for _, f := range g.files {
		if f.Compaction && !slices.Contains(ids, f.Source) {
			ids = append(ids, f.Source)
		}
	}
	return ids
}

// Destinations lists the destinations sorted by qualified name.
func (g *Graph) Destinations() []*Destination { return g.dests }

// Destination returns the destination with the broker's key "<type>:<name>".
func (g *Graph) Destination(key string) (*Destination, bool) {
	d, ok := g.destByK[key]
	return d, ok
}

// DestinationOrder lists destination keys in the order the broker's
// cleanup visits them (Java HashMap iteration order, §6.5).
func (g *Graph) DestinationOrder() []string { return g.order }

// Subscriptions lists every durable subscription, by destination then in
// the destination's list order.
func (g *Graph) Subscriptions() []*Subscription {
	var out []*Subscription
	for _, d := range g.dests {
		out = append(out, d.Subscriptions...)
	}
	return out
}

// Transactions lists in-flight and prepared transactions first (journal
// order of their first command), then the finished transactions kept
// (Options.KeepCompleted), in journal order of their outcome.
func (g *Graph) Transactions() []*Transaction {
	if g.lazy == nil {
		return g.txs
	}
	g.allOnce.Do(func() {
		all := make([]*Transaction, 0, len(g.txs)+g.lazy.n+len(g.lazyTail))
		all = append(append(append(all, g.txs...), g.lazy.decode()...), g.lazyTail...)
		g.lazyMu.Lock()
		g.all = all
		g.lazy.ids, g.lazy.recs = nil, nil // made: the encoded form can go
		g.txIdx = nil
		g.lazyMu.Unlock()
	})
	return g.all
}

// TransactionsWithID returns the transactions of Transactions whose id is
// id, in that order, without making the finished ones a mount keeps
// encoded when they are not made yet (a message's transaction, found in
// tens of milliseconds instead of the second it takes to make them all on
// a store with 188 k).
func (g *Graph) TransactionsWithID(id string) []*Transaction {
	var out []*Transaction
	for _, t := range g.txs {
		if t.ID == id {
			out = append(out, t)
		}
	}
	if g.lazy == nil {
		return out
	}
	g.lazyMu.Lock()
	all, ids, recs, idx := g.all, g.lazy.ids, g.lazy.recs, g.txIdx
	g.lazyMu.Unlock()
	rest := g.lazyTail
	switch {
	case all != nil:
		rest = all[len(g.txs):]
	case idx != nil:
		out = append(out, idx.find(g.lazy, ids, recs, id)...)
	default:
		out = append(out, g.lazy.find(ids, recs, id)...)
	}
	for _, t := range rest {
		if t.ID == id {
			out = append(out, t)
		}
	}
	return out
}

// IndexTransactions makes the index TransactionsWithID finds the finished
// transactions a mount keeps encoded in (txIndex), so that a lookup no
// longer reads every one before the one it finds; a mount makes it ahead
// of its lookups. It does nothing when they are all made (Transactions)
// or when their encoded form does not read as it should (lookups then
// read it in order and find that too).
func (g *Graph) IndexTransactions() {
	if g.lazy == nil {
		return
	}
	g.lazyMu.Lock()
	ids, recs, done := g.lazy.ids, g.lazy.recs, g.all != nil || g.txIdx != nil
	g.lazyMu.Unlock()
	if done || ids == nil {
		return
	}
	x, ok := newTxIndex(g.lazy, ids, recs)
	if !ok {
		return
	}
	g.lazyMu.Lock()
	if g.all == nil && g.txIdx == nil {
		g.txIdx = x
	}
	g.lazyMu.Unlock()
}

// PreparedTransactions lists the prepared transactions.
func (g *Graph) PreparedTransactions() []*Transaction {
	var out []*Transaction
	for _, t := range g.txs { // the open ones come first (lazy: are all)
		if t.State == Prepared {
			out = append(out, t)
		}
	}
	return out
}

// GCCandidates are the ids of the files the broker deletes at its next
// cleanup, ascending.
func (g *Graph) GCCandidates() []int32 { return g.gc }

// GCLog is the broker's TRACE/DEBUG cleanup log as the emulation produced
// it ("Last update: …, full gc candidates set: […]", …, "Cleanup removing
// the data files: […]"), for comparison with a broker log.
func (g *Graph) GCLog() []string { return g.gcLog }

// IndexDiffs lists where the broker's index and the journal alone differ
// (nil without an index): what a broker rebuilding its index would bring
// back or lose. The tree follows the index, as a restarted broker does.
func (g *Graph) IndexDiffs() []IndexDiff { return g.diffs }

// Summary returns the counts.
func (g *Graph) Summary() Summary { return g.summary }

// Damaged reports whether some data file has damage beyond a torn tail,
// a file the index refers to is missing, or the broker's index is damaged
// (IndexDamage).
func (g *Graph) Damaged() bool { return g.damaged }

// IndexDamage says why the broker's index cannot tell what its cleanup
// keeps (damage the reader read past, structures that disagree, a key in
// a missing file, an index that could not be used), the first few; nil
// for a sound index. No file's deletion is then predicted.
func (g *Graph) IndexDamage() []string { return g.indexDamage }

// AddWarning puts w first among the warnings (for how the graph was
// made, e.g. an index the broker would discard). Call it before the
// graph is shared.
func (g *Graph) AddWarning(w string) { g.warnings = append([]string{w}, g.warnings...) }

// Pin keeps the data file id with the reason r, for a holder the replay
// does not model (package store: an mKahaDB txStore's decided commits): a
// free file becomes pinned and leaves GCCandidates. It reports whether
// the graph has the file.
func (g *Graph) Pin(id int32, r Reason) bool {
	f, ok := g.fileByID[id]
	if !ok {
		return false
	}
	f.Reasons = append(f.Reasons, r)
	if !f.Pinned {
		f.Pinned = true
		g.summary.PinnedFiles++
		g.summary.FreeFiles--
		gc := g.gc[:0:0]
		for _, x := range g.gc {
			if x != id {
				gc = append(gc, x)
			}
		}
		g.gc = gc
	}
	return true
}

// Warnings are inconsistencies met while replaying (a command the broker
// would fail on, an index that disagrees with the journal), in plain words.
func (g *Graph) Warnings() []string { return g.warnings }

func sortInt32(s []int32) { sort.Slice(s, func(i, j int) bool { return s[i] < s[j] }) }

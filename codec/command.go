package codec

import (
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/openwire"
)

// DestType is KahaDestination.DestinationType.
type DestType int32

// Destination types. Part of the wire format.
const (
	Queue     DestType = 0
	Topic     DestType = 1
	TempQueue DestType = 2
	TempTopic DestType = 3
)

// Scheme is the prefix the broker uses in qualified names ("queue").
func (t DestType) Scheme() string {
	switch t {
	case Queue:
		return "queue"
	case Topic:
		return "topic"
	case TempQueue:
		return "temp-queue"
	case TempTopic:
		return "temp-topic"
	}
	return "type" + strconv.Itoa(int(t))
}

// IsTopic reports whether messages of this type go to subscriptions.
func (t DestType) IsTopic() bool { return t == Topic || t == TempTopic }

// Destination is a KahaDestination. Name points into the record.
type Destination struct {
	Type    DestType
	Name    []byte
	HasType bool
	HasName bool
}

// String is the qualified name, e.g. queue://ORDERS.
func (d Destination) String() string { return d.Type.Scheme() + "://" + string(d.Name) }

// ParseDestination reads a qualified name as String writes it
// ("topic://T.1"); false for an unknown scheme.
func ParseDestination(s string) (Destination, bool) {
	for _, t := range []DestType{Queue, Topic, TempQueue, TempTopic} {
		if name, ok := strings.CutPrefix(s, t.Scheme()+"://"); ok {
			return NewDestination(t, []byte(name)), true
		}
	}
	return Destination{}, false
}

// Key is the broker's index key "<type>:<name>", e.g. 0:ORDERS.
func (d Destination) Key() string { return strconv.Itoa(int(d.Type)) + ":" + string(d.Name) }

// TxKind tells which transaction id a command carries.
type TxKind uint8

// Transaction id kinds.
const (
	NoTx TxKind = iota
	LocalTx
	XATx
)

// TxID is a KahaTransactionInfo. Byte fields point into the record.
type TxID struct {
	Kind TxKind
	// local
	ConnectionID    []byte
	LocalID         int64
	HasConnectionID bool
	HasLocalID      bool
	// XA
	FormatID        int32
	GlobalID        []byte
	BranchQualifier []byte
	xaFields        uint8 // presence bits 1<<field
	// previous_entry (never written by the broker)
	PrevFile, PrevOffset int32
	HasPrev              bool
	prevFields           uint8
}

// String prints the id the way the broker does: TX:<conn>:<n> or
// XID:[<fmt>,globalId=<hex>,branchId=<hex>].
func (t TxID) String() string { return string(t.AppendString(nil)) }

// AppendString appends String's text to b.
func (t TxID) AppendString(b []byte) []byte {
	if t.Kind != LocalTx && t.Kind != XATx {
		return b
	}
	return openwire.AppendTransactionID(b, t.Kind == XATx, t.ConnectionID, t.LocalID, t.FormatID, t.GlobalID, t.BranchQualifier)
}

// Key identifies the transaction (same value for the same broker identity).
func (t TxID) Key() string { return t.String() }

// Command is one decoded KahaDB command. Which fields mean something depends
// on Type; byte slices point into the record and stay valid as long as the
// data file. A Command is reused across records without allocating.
type Command struct {
	Type EntryType
	// fields has bit n set when field n (a Field... constant) is present
	// at the top level of the command (for UPDATE: of the inner add
	// command): Has, Set and Clear.
	fields uint32
	Update bool // UPDATE: the add fields below are the inner message
	// HasInner: UPDATE carries its message field.
	HasInner bool
	// Unknown fields were skipped (the broker's parser would not skip them).
	Unknown bool

	// What a replay reads of nearly every record (ADD, REMOVE) comes
	// first, the transaction's kind right after it: three cache lines of
	// a command decoded on another core instead of five.
	Dest              Destination // ADD, REMOVE, REMOVE_DESTINATION, SUBSCRIPTION
	MessageID         []byte      // ADD, REMOVE
	Message           []byte      // ADD: OpenWire message
	Priority          int32       // ADD (default 4)
	PrioritySupported bool        // ADD
	Ack               []byte      // REMOVE: OpenWire MessageAck (may be empty)
	SubscriptionKey   []byte      // REMOVE (durable topic ack), SUBSCRIPTION
	Tx                TxID        // ADD, REMOVE, PREPARE, COMMIT, ROLLBACK
	Retroactive       bool        // SUBSCRIPTION
	SubscriptionInfo  []byte      // SUBSCRIPTION: OpenWire SubscriptionInfo; absent = delete
	Text              []byte      // TRACE message
	Blob              []byte      // PRODUCER_AUDIT audit, ACK_MESSAGE_FILE_MAP map (Java serialization)

	// scheduler commands (11-15)
	Scheduler         []byte
	JobID             []byte
	CronEntry         []byte
	Payload           []byte
	StartTime         int64
	Delay             int64
	Period            int64
	NextExecutionTime int64
	ExecutionTime     int64
	EndTime           int64
	Repeat            int32
	RescheduledCount  int32

	// REWRITTEN_DATA_FILE
	SourceDataFileID   int32
	RewriteType        int32
	SkipIfSourceExists bool // default true
}

// Has reports whether top-level field n (a Field... constant) was present.
func (c *Command) Has(n int) bool { return c.fields&(1<<n) != 0 }

// Set marks the top-level fields ns (Field... constants) present: they are
// written (for building commands to write).
func (c *Command) Set(ns ...int) {
	for _, n := range ns {
		c.fields |= 1 << n
	}
}

// Clear marks the top-level fields ns absent: they are not written.
func (c *Command) Clear(ns ...int) {
	for _, n := range ns {
		c.fields &^= 1 << n
	}
}

// HasSubscriptionKey: a REMOVE that acks for a durable subscription.
func (c *Command) HasSubscriptionKey() bool {
	return c.Type == RemoveMessageCommand && c.Has(FieldRemoveSubscriptionKey)
}

// IsSubscriptionDelete: a SUBSCRIPTION command without info deletes the sub.
func (c *Command) IsSubscriptionDelete() bool {
	return c.Type == SubscriptionCommand && !c.Has(FieldSubscriptionInfo)
}

func (c *Command) reset() {
	*c = Command{Priority: 4, SkipIfSourceExists: true}
}

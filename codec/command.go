package codec

import (
	"encoding/hex"
	"strconv"
	"strings"
)

// EntryType is the KahaEntryType byte that starts every user record payload.
// Part of the wire format.
type EntryType uint8

// KahaEntryType values.
const (
	TraceCommand               EntryType = 0
	AddMessageCommand          EntryType = 1
	RemoveMessageCommand       EntryType = 2
	PrepareCommand             EntryType = 3
	CommitCommand              EntryType = 4
	RollbackCommand            EntryType = 5
	RemoveDestinationCommand   EntryType = 6
	SubscriptionCommand        EntryType = 7
	ProducerAuditCommand       EntryType = 8
	AckMessageFileMapCommand   EntryType = 9
	UpdateMessageCommand       EntryType = 10
	AddScheduledJobCommand     EntryType = 11
	RescheduleJobCommand       EntryType = 12
	RemoveScheduledJobCommand  EntryType = 13
	RemoveScheduledJobsCommand EntryType = 14
	DestroySchedulerCommand    EntryType = 15
	RewrittenDataFileCommand   EntryType = 16
	NumEntryTypes                        = 17
)

var entryTypeNames = [NumEntryTypes]string{
	"KAHA_TRACE_COMMAND",
	"KAHA_ADD_MESSAGE_COMMAND",
	"KAHA_REMOVE_MESSAGE_COMMAND",
	"KAHA_PREPARE_COMMAND",
	"KAHA_COMMIT_COMMAND",
	"KAHA_ROLLBACK_COMMAND",
	"KAHA_REMOVE_DESTINATION_COMMAND",
	"KAHA_SUBSCRIPTION_COMMAND",
	"KAHA_PRODUCER_AUDIT_COMMAND",
	"KAHA_ACK_MESSAGE_FILE_MAP_COMMAND",
	"KAHA_UPDATE_MESSAGE_COMMAND",
	"KAHA_ADD_SCHEDULED_JOB_COMMAND",
	"KAHA_RESCHEDULE_JOB_COMMAND",
	"KAHA_REMOVE_SCHEDULED_JOB_COMMAND",
	"KAHA_REMOVE_SCHEDULED_JOBS_COMMAND",
	"KAHA_DESTROY_SCHEDULER_COMMAND",
	"KAHA_REWRITTEN_DATA_FILE_COMMAND",
}

// Valid reports whether t is a known KahaEntryType.
func (t EntryType) Valid() bool { return t < NumEntryTypes }

// String is the broker's enum name, e.g. KAHA_ADD_MESSAGE_COMMAND.
func (t EntryType) String() string {
	if t.Valid() {
		return entryTypeNames[t]
	}
	return "UNKNOWN_" + strconv.Itoa(int(t))
}

// ParseEntryType is the inverse of String.
func ParseEntryType(s string) (EntryType, bool) {
	for i, n := range entryTypeNames {
		if n == s {
			return EntryType(i), true
		}
	}
	return 0, false
}

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
func (t TxID) String() string {
	switch t.Kind {
	case LocalTx:
		return "TX:" + string(t.ConnectionID) + ":" + strconv.FormatInt(t.LocalID, 10)
	case XATx:
		return "XID:[" + strconv.Itoa(int(t.FormatID)) + ",globalId=" + hex.EncodeToString(t.GlobalID) +
			",branchId=" + hex.EncodeToString(t.BranchQualifier) + "]"
	}
	return ""
}

// Key identifies the transaction (same value for the same broker identity).
func (t TxID) Key() string { return t.String() }

// Field numbers of the commands' protobuf messages (KahaDB's journal.proto),
// for Command.Has, Set and Clear: Command.Fields has bit n set when field n
// is present at the top level of the command (for UPDATE: of the inner add
// command). Part of the wire format.
const (
	// KahaAddMessageCommand (and the message of a KahaUpdateMessageCommand)
	FieldAddTransaction       = 1
	FieldAddDestination       = 2
	FieldAddMessageID         = 3
	FieldAddMessage           = 4
	FieldAddPriority          = 5
	FieldAddPrioritySupported = 6

	// KahaRemoveMessageCommand
	FieldRemoveTransaction     = 1
	FieldRemoveDestination     = 2
	FieldRemoveMessageID       = 3
	FieldRemoveAck             = 4
	FieldRemoveSubscriptionKey = 5

	// KahaSubscriptionCommand
	FieldSubscriptionDestination = 1
	FieldSubscriptionKey         = 2
	FieldSubscriptionRetroactive = 3
	FieldSubscriptionInfo        = 4

	// KahaPrepareCommand, KahaCommitCommand, KahaRollbackCommand
	FieldTransaction = 1
	// KahaTraceCommand
	FieldTraceMessage = 1
	// KahaRemoveDestinationCommand
	FieldRemoveDestinationDestination = 1
	// KahaProducerAuditCommand, KahaAckMessageFileMapCommand
	FieldBlob = 1

	// KahaRewrittenDataFileCommand
	FieldRewrittenSource             = 1
	FieldRewrittenType               = 2
	FieldRewrittenSkipIfSourceExists = 3

	// KahaXATransactionId (TxID)
	fieldXAFormatID        = 1
	fieldXABranchQualifier = 2
	fieldXAGlobalID        = 3
	// KahaLocation (TxID.previous_entry)
	fieldPrevFile   = 1
	fieldPrevOffset = 2
)

// Command is one decoded KahaDB command. Which fields mean something depends
// on Type; byte slices point into the record and stay valid as long as the
// data file. A Command is reused across records without allocating.
type Command struct {
	Type   EntryType
	Fields uint32 // presence bits of the top-level (or inner add) fields
	Update bool   // UPDATE: the add fields below are the inner message
	// HasInner: UPDATE carries its message field.
	HasInner bool
	// Unknown fields were skipped (the broker's parser would not skip them).
	Unknown bool

	Tx                TxID        // ADD, REMOVE, PREPARE, COMMIT, ROLLBACK
	Dest              Destination // ADD, REMOVE, REMOVE_DESTINATION, SUBSCRIPTION
	MessageID         []byte      // ADD, REMOVE
	Message           []byte      // ADD: OpenWire message
	Priority          int32       // ADD (default 4)
	PrioritySupported bool        // ADD
	Ack               []byte      // REMOVE: OpenWire MessageAck (may be empty)
	SubscriptionKey   []byte      // REMOVE (durable topic ack), SUBSCRIPTION
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
func (c *Command) Has(n int) bool { return c.Fields&(1<<n) != 0 }

// Set marks top-level field n present (for building commands to write).
func (c *Command) Set(n int) { c.Fields |= 1 << n }

// Clear marks top-level field n absent: it is not written.
func (c *Command) Clear(n int) { c.Fields &^= 1 << n }

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

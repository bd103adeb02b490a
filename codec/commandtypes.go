package codec

import (
	"fmt"
	"strconv"

	"github.com/kahafs/kahafs/internal/jsonw"
	"github.com/kahafs/kahafs/openwire"
	"google.golang.org/protobuf/encoding/protowire"
)

// This file is everything codec knows of each KahaDB command type: its
// KahaEntryType byte, the field numbers of its protobuf message, and its row
// of commandTypes (name, fields, JSON and text). Decoding, encoding, the
// names and both renderings are driven by that table.
//
// Adding a command type (say KAHA_FOO_COMMAND = 17 with one field):
//  1. its EntryType constant below, and NumEntryTypes one more;
//  2. its Field... constants;
//  3. a Command member for a field no other type has (command.go);
//  4. its row of commandTypes: name, fields, and what its JSON and text
//     show beyond the location, type, transaction and destination.
//
// The tests check every row (TestCommandTypes) and round-trip a command of
// every type with all its fields set. Whoever replays the journal decides
// for itself what the new type means (refgraph's Builder.process).

// EntryType is the KahaEntryType byte that starts every user record payload.
// Part of the wire format.
type EntryType uint8

// KahaEntryType values. Part of the wire format.
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
	// NumEntryTypes is one more than the largest known EntryType.
	NumEntryTypes = 17
)

// Field numbers of the commands' protobuf messages (KahaDB's journal.proto),
// for Command.Has, Set and Clear: they name the fields present at the top
// level of the command (for UPDATE: of the inner add command). Part of the
// wire format.
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
	// KahaUpdateMessageCommand: the inner KahaAddMessageCommand (Command.HasInner)
	FieldUpdateMessage = 1

	// KahaAddScheduledJobCommand
	FieldAddJobScheduler         = 1
	FieldAddJobID                = 2
	FieldAddJobStartTime         = 3
	FieldAddJobCronEntry         = 4
	FieldAddJobDelay             = 5
	FieldAddJobPeriod            = 6
	FieldAddJobRepeat            = 7
	FieldAddJobPayload           = 8
	FieldAddJobNextExecutionTime = 9

	// KahaRescheduleJobCommand
	FieldRescheduleScheduler         = 1
	FieldRescheduleJobID             = 2
	FieldRescheduleExecutionTime     = 3
	FieldRescheduleNextExecutionTime = 4
	FieldRescheduleRescheduledCount  = 5

	// KahaRemoveScheduledJobCommand
	FieldRemoveJobScheduler         = 1
	FieldRemoveJobID                = 2
	FieldRemoveJobNextExecutionTime = 3

	// KahaRemoveScheduledJobsCommand
	FieldRemoveJobsScheduler = 1
	FieldRemoveJobsStartTime = 2
	FieldRemoveJobsEndTime   = 3

	// KahaDestroySchedulerCommand
	FieldDestroyScheduler = 1

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

// commandType is what codec knows of one command type.
type commandType struct {
	// name is the broker's enum name (EntryType.String).
	name string
	// fields are the fields of the type's protobuf message, in field
	// number order: they drive DecodeCommand and AppendCommand.
	fields []field
	// wraps: the message's only field, 1, is a message of another type,
	// decoded into the same Command (UPDATE wraps an ADD: Command.Update,
	// Command.HasInner); fields is then empty.
	wraps    EntryType
	wrapping bool
	// json appends the members of the type's JSON that follow the
	// location, type, transaction and destination (AppendCommandJSON);
	// text does the same for the line of AppendCommandText. Nil: none.
	json func(o *jsonw.Writer, c *Command, opts JSONOptions)
	text func(b []byte, c *Command) []byte

	// Made by init: byNum indexes fields by number (fields[byNum[n]-1]
	// is field n; 0: none), kinds are their kinds.
	byNum [maxFieldNum + 1]uint8
	kinds []fieldKind
}

// field is one field of a command's protobuf message.
type field struct {
	num protowire.Number // 1..maxFieldNum (a bit of Command.fields)
	// at is the Command member the field is decoded into and encoded
	// from: a *[]byte (bytes), *int64, *int32 or *bool (varint), *TxID
	// (KahaTransactionInfo) or *Destination (KahaDestination). Its type
	// is the field's kind.
	at func(c *Command) any
}

// maxFieldNum is the largest field number a command type may have.
const maxFieldNum = 31

// fieldKind is what a field holds, as the type of its member says.
type fieldKind uint8

const (
	kindBytes fieldKind = iota + 1
	kindInt64
	kindInt32
	kindBool
	kindTx
	kindDest
)

// kindOf is the kind of a field with member p (field.at); 0 for a type
// no field can have.
func kindOf(p any) fieldKind {
	switch p.(type) {
	case *[]byte:
		return kindBytes
	case *int64:
		return kindInt64
	case *int32:
		return kindInt32
	case *bool:
		return kindBool
	case *TxID:
		return kindTx
	case *Destination:
		return kindDest
	}
	return 0
}

// wire is the wire type of a field of kind k.
func (k fieldKind) wire() protowire.Type {
	switch k {
	case kindInt64, kindInt32, kindBool:
		return protowire.VarintType
	}
	return protowire.BytesType
}

// The members of Command that fields fill.
func atTx(c *Command) any   { return &c.Tx }
func atDest(c *Command) any { return &c.Dest }

// commandTypes is the table of command types, indexed by EntryType.
var commandTypes = [NumEntryTypes]commandType{
	TraceCommand: {name: "KAHA_TRACE_COMMAND",
		fields: []field{
			{FieldTraceMessage, func(c *Command) any { return &c.Text }},
		},
		json: func(o *jsonw.Writer, c *Command, _ JSONOptions) {
			if c.Has(FieldTraceMessage) {
				o.Bytes("message", c.Text)
			}
		},
		text: func(b []byte, c *Command) []byte {
			return strconv.AppendQuote(append(b, ' '), string(c.Text))
		},
	},
	AddMessageCommand: {name: "KAHA_ADD_MESSAGE_COMMAND",
		fields: []field{
			{FieldAddTransaction, atTx},
			{FieldAddDestination, atDest},
			{FieldAddMessageID, func(c *Command) any { return &c.MessageID }},
			{FieldAddMessage, func(c *Command) any { return &c.Message }},
			{FieldAddPriority, func(c *Command) any { return &c.Priority }},
			{FieldAddPrioritySupported, func(c *Command) any { return &c.PrioritySupported }},
		},
		json: addJSON,
		text: addText,
	},
	RemoveMessageCommand: {name: "KAHA_REMOVE_MESSAGE_COMMAND",
		fields: []field{
			{FieldRemoveTransaction, atTx},
			{FieldRemoveDestination, atDest},
			{FieldRemoveMessageID, func(c *Command) any { return &c.MessageID }},
			{FieldRemoveAck, func(c *Command) any { return &c.Ack }},
			{FieldRemoveSubscriptionKey, func(c *Command) any { return &c.SubscriptionKey }},
		},
		json: removeJSON,
		text: func(b []byte, c *Command) []byte {
			b = append(append(b, " id="...), c.MessageID...)
			if c.HasSubscriptionKey() {
				b = append(append(b, " sub="...), c.SubscriptionKey...)
			}
			return b
		},
	},
	PrepareCommand:  {name: "KAHA_PREPARE_COMMAND", fields: []field{{FieldTransaction, atTx}}},
	CommitCommand:   {name: "KAHA_COMMIT_COMMAND", fields: []field{{FieldTransaction, atTx}}},
	RollbackCommand: {name: "KAHA_ROLLBACK_COMMAND", fields: []field{{FieldTransaction, atTx}}},
	RemoveDestinationCommand: {name: "KAHA_REMOVE_DESTINATION_COMMAND",
		fields: []field{{FieldRemoveDestinationDestination, atDest}},
	},
	SubscriptionCommand: {name: "KAHA_SUBSCRIPTION_COMMAND",
		fields: []field{
			{FieldSubscriptionDestination, atDest},
			{FieldSubscriptionKey, func(c *Command) any { return &c.SubscriptionKey }},
			{FieldSubscriptionRetroactive, func(c *Command) any { return &c.Retroactive }},
			{FieldSubscriptionInfo, func(c *Command) any { return &c.SubscriptionInfo }},
		},
		json: subscriptionJSON,
		text: func(b []byte, c *Command) []byte {
			b = append(append(b, " sub="...), c.SubscriptionKey...)
			if c.IsSubscriptionDelete() {
				b = append(b, " delete"...)
			}
			return b
		},
	},
	ProducerAuditCommand: {name: "KAHA_PRODUCER_AUDIT_COMMAND",
		fields: []field{{FieldBlob, func(c *Command) any { return &c.Blob }}},
		json:   blobJSON,
		text:   blobText,
	},
	AckMessageFileMapCommand: {name: "KAHA_ACK_MESSAGE_FILE_MAP_COMMAND",
		fields: []field{{FieldBlob, func(c *Command) any { return &c.Blob }}},
		json:   blobJSON,
		text:   blobText,
	},
	UpdateMessageCommand: {name: "KAHA_UPDATE_MESSAGE_COMMAND",
		wraps: AddMessageCommand, wrapping: true,
		json: addJSON,
		text: addText,
	},
	AddScheduledJobCommand: {name: "KAHA_ADD_SCHEDULED_JOB_COMMAND",
		fields: []field{
			{FieldAddJobScheduler, func(c *Command) any { return &c.Scheduler }},
			{FieldAddJobID, func(c *Command) any { return &c.JobID }},
			{FieldAddJobStartTime, func(c *Command) any { return &c.StartTime }},
			{FieldAddJobCronEntry, func(c *Command) any { return &c.CronEntry }},
			{FieldAddJobDelay, func(c *Command) any { return &c.Delay }},
			{FieldAddJobPeriod, func(c *Command) any { return &c.Period }},
			{FieldAddJobRepeat, func(c *Command) any { return &c.Repeat }},
			{FieldAddJobPayload, func(c *Command) any { return &c.Payload }},
			{FieldAddJobNextExecutionTime, func(c *Command) any { return &c.NextExecutionTime }},
		},
		json: func(o *jsonw.Writer, c *Command, _ JSONOptions) {
			o.Bytes("scheduler", c.Scheduler)
			o.Bytes("jobId", c.JobID)
			o.Int("startTime", c.StartTime)
			o.Bytes("cronEntry", c.CronEntry)
			o.Int("delay", c.Delay)
			o.Int("period", c.Period)
			o.Int("repeat", int64(c.Repeat))
			o.Int("payloadSize", int64(len(c.Payload)))
			o.Int("nextExecutionTime", c.NextExecutionTime)
		},
	},
	RescheduleJobCommand: {name: "KAHA_RESCHEDULE_JOB_COMMAND",
		fields: []field{
			{FieldRescheduleScheduler, func(c *Command) any { return &c.Scheduler }},
			{FieldRescheduleJobID, func(c *Command) any { return &c.JobID }},
			{FieldRescheduleExecutionTime, func(c *Command) any { return &c.ExecutionTime }},
			{FieldRescheduleNextExecutionTime, func(c *Command) any { return &c.NextExecutionTime }},
			{FieldRescheduleRescheduledCount, func(c *Command) any { return &c.RescheduledCount }},
		},
		json: func(o *jsonw.Writer, c *Command, _ JSONOptions) {
			o.Bytes("scheduler", c.Scheduler)
			o.Bytes("jobId", c.JobID)
			o.Int("executionTime", c.ExecutionTime)
			o.Int("nextExecutionTime", c.NextExecutionTime)
			o.Int("rescheduledCount", int64(c.RescheduledCount))
		},
	},
	RemoveScheduledJobCommand: {name: "KAHA_REMOVE_SCHEDULED_JOB_COMMAND",
		fields: []field{
			{FieldRemoveJobScheduler, func(c *Command) any { return &c.Scheduler }},
			{FieldRemoveJobID, func(c *Command) any { return &c.JobID }},
			{FieldRemoveJobNextExecutionTime, func(c *Command) any { return &c.NextExecutionTime }},
		},
		json: func(o *jsonw.Writer, c *Command, _ JSONOptions) {
			o.Bytes("scheduler", c.Scheduler)
			o.Bytes("jobId", c.JobID)
			o.Int("nextExecutionTime", c.NextExecutionTime)
		},
	},
	RemoveScheduledJobsCommand: {name: "KAHA_REMOVE_SCHEDULED_JOBS_COMMAND",
		fields: []field{
			{FieldRemoveJobsScheduler, func(c *Command) any { return &c.Scheduler }},
			{FieldRemoveJobsStartTime, func(c *Command) any { return &c.StartTime }},
			{FieldRemoveJobsEndTime, func(c *Command) any { return &c.EndTime }},
		},
		json: func(o *jsonw.Writer, c *Command, _ JSONOptions) {
			o.Bytes("scheduler", c.Scheduler)
			o.Int("startTime", c.StartTime)
			o.Int("endTime", c.EndTime)
		},
	},
	DestroySchedulerCommand: {name: "KAHA_DESTROY_SCHEDULER_COMMAND",
		fields: []field{{FieldDestroyScheduler, func(c *Command) any { return &c.Scheduler }}},
		json: func(o *jsonw.Writer, c *Command, _ JSONOptions) {
			o.Bytes("scheduler", c.Scheduler)
		},
	},
	RewrittenDataFileCommand: {name: "KAHA_REWRITTEN_DATA_FILE_COMMAND",
		fields: []field{
			{FieldRewrittenSource, func(c *Command) any { return &c.SourceDataFileID }},
			{FieldRewrittenType, func(c *Command) any { return &c.RewriteType }},
			{FieldRewrittenSkipIfSourceExists, func(c *Command) any { return &c.SkipIfSourceExists }},
		},
		json: func(o *jsonw.Writer, c *Command, _ JSONOptions) {
			o.Int("sourceDataFileId", int64(c.SourceDataFileID))
			o.Int("rewriteType", int64(c.RewriteType))
			o.Bool("skipIfSourceExists", c.SkipIfSourceExists)
		},
		text: func(b []byte, c *Command) []byte {
			return append(append(b, " source="...), DataFileName(c.SourceDataFileID)...)
		},
	},
}

// addJSON: ADD and UPDATE (whose message is an ADD's).
func addJSON(o *jsonw.Writer, c *Command, opts JSONOptions) {
	o.Bytes("messageId", c.MessageID)
	o.Int("priority", int64(c.Priority))
	o.Bool("prioritySupported", c.PrioritySupported)
	o.Int("messageSize", int64(len(c.Message)))
	if opts.OpenWire && len(c.Message) > 0 {
		m, err := openwire.Decoder{Version: opts.OpenWireVersion, ShareText: opts.ShareText}.Decode(c.Message)
		o.Open("openwire")
		appendSummary(o, m, err)
		o.Close()
		if m != nil {
			m.AppendJSON(o, err, openwire.JSONOptions{BodyLimit: opts.BodyLimit})
		}
		if opts.Message != nil {
			opts.Message(m)
		}
	}
}

func addText(b []byte, c *Command) []byte {
	b = append(append(b, " id="...), c.MessageID...)
	b = strconv.AppendInt(append(b, " priority="...), int64(c.Priority), 10)
	return strconv.AppendInt(append(b, " bytes="...), int64(len(c.Message)), 10)
}

func removeJSON(o *jsonw.Writer, c *Command, opts JSONOptions) {
	o.Bytes("messageId", c.MessageID)
	if c.Has(FieldRemoveSubscriptionKey) {
		o.Bytes("subscriptionKey", c.SubscriptionKey)
	}
	if !c.Has(FieldRemoveAck) {
		return
	}
	o.Int("ackSize", int64(len(c.Ack)))
	if opts.OpenWire && len(c.Ack) > 0 {
		a, err := openwire.ParseMessageAck(c.Ack)
		o.Open("ack")
		if err != nil {
			o.Str("error", err.Error())
		} else {
			o.Str("consumerId", a.ConsumerID)
			o.Int("ackType", int64(a.AckType))
			o.Str("firstMessageId", a.FirstMessageID)
			o.Str("lastMessageId", a.LastMessageID)
			o.Int("messageCount", int64(a.MessageCount))
		}
		o.Close()
	}
}

func subscriptionJSON(o *jsonw.Writer, c *Command, opts JSONOptions) {
	o.Bytes("subscriptionKey", c.SubscriptionKey)
	o.Bool("retroactive", c.Retroactive)
	o.Bool("delete", c.IsSubscriptionDelete())
	if !c.Has(FieldSubscriptionInfo) || !opts.OpenWire {
		return
	}
	si, err := openwire.ParseSubscriptionInfo(c.SubscriptionInfo)
	o.Open("subscriptionInfo")
	if err != nil {
		o.Str("error", err.Error())
	} else {
		o.Str("clientId", si.ClientID)
		o.Str("subscriptionName", si.SubscriptionName)
		if si.HasSelector {
			o.Str("selector", si.Selector)
		}
		o.Bool("noLocal", si.NoLocal)
		if si.SubscribedDestination != "" {
			o.Str("subscribedDestination", si.SubscribedDestination)
		}
	}
	o.Close()
}

// blobJSON and blobText: PRODUCER_AUDIT and ACK_MESSAGE_FILE_MAP (Java
// serialization, shown by size).
func blobJSON(o *jsonw.Writer, c *Command, _ JSONOptions) { o.Int("blobSize", int64(len(c.Blob))) }

func blobText(b []byte, c *Command) []byte {
	return strconv.AppendInt(append(b, " bytes="...), int64(len(c.Blob)), 10)
}

// field returns the field numbered num and its kind; nil when the type
// has none.
func (t *commandType) field(num protowire.Number) (*field, fieldKind) {
	if num < 1 || num > maxFieldNum || t.byNum[num] == 0 {
		return nil, 0
	}
	i := t.byNum[num] - 1
	return &t.fields[i], t.kinds[i]
}

// init completes the table: the kind of every field and the index by
// number. A row it cannot complete is a mistake in this file, reported
// when the package loads.
func init() {
	for t := range commandTypes {
		ct := &commandTypes[t]
		var scratch Command
		for i, f := range ct.fields {
			k := kindOf(f.at(&scratch))
			if k == 0 || f.num < 1 || f.num > maxFieldNum || (i > 0 && f.num <= ct.fields[i-1].num) {
				panic(fmt.Sprintf("codec: commandTypes[%s]: field %d: member %T, or not in field number order", ct.name, f.num, f.at(&scratch)))
			}
			ct.kinds = append(ct.kinds, k)
		}
		for i, f := range ct.fields {
			ct.byNum[f.num] = uint8(i + 1)
		}
	}
}

// Valid reports whether t is a known KahaEntryType.
func (t EntryType) Valid() bool { return t < NumEntryTypes }

// String is the broker's enum name, e.g. KAHA_ADD_MESSAGE_COMMAND.
func (t EntryType) String() string {
	if t.Valid() {
		return commandTypes[t].name
	}
	return "UNKNOWN_" + strconv.Itoa(int(t))
}

// ParseEntryType is the inverse of String.
func ParseEntryType(s string) (EntryType, bool) {
	for i := range commandTypes {
		if commandTypes[i].name == s {
			return EntryType(i), true
		}
	}
	return 0, false
}

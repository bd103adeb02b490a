package codec

import (
	"github.com/kahafs/kahafs/internal/jsonw"
	"github.com/kahafs/kahafs/openwire"
)

// AppendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func AppendJSONString(dst []byte, s []byte) []byte { return jsonw.AppendString(dst, s) }

// JSONOptions select optional parts of a command's JSON.
type JSONOptions struct {
	// OpenWire adds the decoded OpenWire header summary of messages, the
	// subscription info and the ack, and the message itself: its headers,
	// properties and body (package openwire).
	OpenWire bool
	// OpenWireVersion is the store's OpenWire version (see
	// StoreOpenWireVersion); 0 means openwire.DefaultVersion.
	OpenWireVersion int
	// BodyLimit is the most bytes of a message body the JSON shows (see
	// openwire.JSONOptions); 0 means openwire.DefaultBodyLimit.
	BodyLimit int
}

// AppendCommandJSON appends one JSON object describing the command c
// decoded from rec: location, type and every decoded field; with
// opts.OpenWire a message's headers, properties and body (cut at
// opts.BodyLimit).
func AppendCommandJSON(dst []byte, rec Record, c *Command, opts JSONOptions) []byte {
	o := jsonw.Object(dst)
	o.Int("file", int64(rec.Loc.File))
	o.Int("offset", int64(rec.Loc.Offset))
	o.Int("size", int64(rec.Loc.Size))
	o.Int("batch", int64(rec.Batch))
	o.Str("type", c.Type.String())
	if c.Tx.Kind != NoTx {
		o.Str("transaction", c.Tx.String())
		if c.Tx.Kind == XATx {
			o.Str("transactionKind", "xa")
		} else {
			o.Str("transactionKind", "local")
		}
	}
	switch c.Type {
	case TraceCommand:
		if c.Has(FieldTraceMessage) {
			o.Bytes("message", c.Text)
		}
	case AddMessageCommand, UpdateMessageCommand, RemoveMessageCommand, RemoveDestinationCommand, SubscriptionCommand:
		if c.Dest.HasName || c.Dest.HasType {
			o.Str("destination", c.Dest.String())
		}
	}
	switch c.Type {
	case AddMessageCommand, UpdateMessageCommand:
		o.Bytes("messageId", c.MessageID)
		o.Int("priority", int64(c.Priority))
		o.Bool("prioritySupported", c.PrioritySupported)
		o.Int("messageSize", int64(len(c.Message)))
		if opts.OpenWire && len(c.Message) > 0 {
			m, err := openwire.Decoder{Version: opts.OpenWireVersion}.Decode(c.Message)
			o.Open("openwire")
			appendSummary(&o, m, err)
			o.Close()
			if m != nil {
				m.AppendJSON(&o, err, openwire.JSONOptions{BodyLimit: opts.BodyLimit})
			}
		}
	case RemoveMessageCommand:
		o.Bytes("messageId", c.MessageID)
		if c.Has(FieldRemoveSubscriptionKey) {
			o.Bytes("subscriptionKey", c.SubscriptionKey)
		}
		if c.Has(FieldRemoveAck) {
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
	case SubscriptionCommand:
		o.Bytes("subscriptionKey", c.SubscriptionKey)
		o.Bool("retroactive", c.Retroactive)
		o.Bool("delete", c.IsSubscriptionDelete())
		if c.Has(FieldSubscriptionInfo) && opts.OpenWire {
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
	case ProducerAuditCommand, AckMessageFileMapCommand:
		o.Int("blobSize", int64(len(c.Blob)))
	case AddScheduledJobCommand, RescheduleJobCommand, RemoveScheduledJobCommand, RemoveScheduledJobsCommand, DestroySchedulerCommand:
		o.Bytes("scheduler", c.Scheduler)
		switch c.Type {
		case AddScheduledJobCommand:
			o.Bytes("jobId", c.JobID)
			o.Int("startTime", c.StartTime)
			o.Bytes("cronEntry", c.CronEntry)
			o.Int("delay", c.Delay)
			o.Int("period", c.Period)
			o.Int("repeat", int64(c.Repeat))
			o.Int("payloadSize", int64(len(c.Payload)))
			o.Int("nextExecutionTime", c.NextExecutionTime)
		case RescheduleJobCommand:
			o.Bytes("jobId", c.JobID)
			o.Int("executionTime", c.ExecutionTime)
			o.Int("nextExecutionTime", c.NextExecutionTime)
			o.Int("rescheduledCount", int64(c.RescheduledCount))
		case RemoveScheduledJobCommand:
			o.Bytes("jobId", c.JobID)
			o.Int("nextExecutionTime", c.NextExecutionTime)
		case RemoveScheduledJobsCommand:
			o.Int("startTime", c.StartTime)
			o.Int("endTime", c.EndTime)
		}
	case RewrittenDataFileCommand:
		o.Int("sourceDataFileId", int64(c.SourceDataFileID))
		o.Int("rewriteType", int64(c.RewriteType))
		o.Bool("skipIfSourceExists", c.SkipIfSourceExists)
	}
	if c.Unknown {
		o.Bool("unknownFields", true)
	}
	return o.End()
}

// appendSummary writes the members of "openwire", the header summary the
// JSON had before it showed the message itself (kept for the scripts that
// read it): the fields MessageSummary holds, from the decoded message m
// (nil when the blob is no message at all) and its header error.
func appendSummary(o *jsonw.Writer, m *openwire.Message, err error) {
	err = m.HeaderError(err)
	if m == nil {
		m = &openwire.Message{ContentOffset: -1}
	} else {
		o.Str("kind", m.Kind.String())
	}
	var buf [256]byte
	id := func(key string, b []byte) {
		if len(b) > 0 {
			o.Bytes(key, b)
		}
	}
	id("producerId", m.ProducerID.AppendTo(buf[:0]))
	id("destination", m.Destination.AppendTo(buf[:0]))
	id("transactionId", m.TransactionID.AppendTo(buf[:0]))
	id("originalDestination", m.OriginalDestination.AppendTo(buf[:0]))
	if m.GroupID != "" {
		o.Str("groupId", m.GroupID)
		o.Int("groupSequence", int64(m.GroupSequence))
	}
	if m.CorrelationID != "" {
		o.Str("correlationId", m.CorrelationID)
	}
	o.Bool("persistent", m.Persistent)
	o.Int("expiration", m.Expiration)
	o.Int("priority", int64(m.Priority))
	id("replyTo", m.ReplyTo.AppendTo(buf[:0]))
	o.Int("timestamp", m.Timestamp)
	if m.Type != "" {
		o.Str("jmsType", m.Type)
	}
	bodySize, propsSize := -1, -1
	if m.ContentOffset >= 0 {
		bodySize = len(m.Content)
	}
	if m.MarshalledProperties != nil {
		propsSize = len(m.MarshalledProperties)
	}
	o.Int("bodySize", int64(bodySize))
	o.Int("propertiesSize", int64(propsSize))
	if m.Complete {
		o.Bool("compressed", m.Compressed)
		o.Int("redeliveryCounter", int64(m.RedeliveryCounter))
		if m.UserID != "" {
			o.Str("userId", m.UserID)
		}
		o.Int("brokerInTime", m.BrokerInTime)
		o.Int("brokerOutTime", m.BrokerOutTime)
	}
	if err != nil {
		o.Str("error", err.Error())
	}
}

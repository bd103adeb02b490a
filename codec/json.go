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
		if c.Has(1) {
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
			var s MessageSummary
			err := ParseMessageSummary(c.Message, &s)
			o.Open("openwire")
			appendSummary(&o, &s, err)
			o.Close()
			d := openwire.Decoder{Version: opts.OpenWireVersion}
			if m, err := d.Decode(c.Message); m != nil {
				m.AppendJSON(&o, err, openwire.JSONOptions{BodyLimit: opts.BodyLimit})
			}
		}
	case RemoveMessageCommand:
		o.Bytes("messageId", c.MessageID)
		if c.Has(5) {
			o.Bytes("subscriptionKey", c.SubscriptionKey)
		}
		if c.Has(4) {
			o.Int("ackSize", int64(len(c.Ack)))
			if opts.OpenWire && len(c.Ack) > 0 {
				a, err := ParseMessageAck(c.Ack)
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
		if c.Has(4) && opts.OpenWire {
			si, err := ParseSubscriptionInfo(c.SubscriptionInfo)
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

func appendSummary(o *jsonw.Writer, s *MessageSummary, err error) {
	if s.Kind != "" {
		o.Str("kind", s.Kind)
	}
	if s.ProducerID != "" {
		o.Str("producerId", s.ProducerID)
	}
	if s.Destination != "" {
		o.Str("destination", s.Destination)
	}
	if s.TransactionID != "" {
		o.Str("transactionId", s.TransactionID)
	}
	if s.OriginalDestination != "" {
		o.Str("originalDestination", s.OriginalDestination)
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
}

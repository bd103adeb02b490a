package codec

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func AppendJSONString(dst []byte, s []byte) []byte {
	const hexd = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xF])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, `\ufffd`...)
		} else if r == 0x2028 || r == 0x2029 {
			dst = append(dst, '\\', 'u', '2', '0', '2', hexd[r&0xF])
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// jsonObj builds one JSON object by appending members.
type jsonObj struct {
	b     []byte
	first bool
}

func (o *jsonObj) key(k string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObj) str(k, v string) {
	o.key(k)
	o.b = AppendJSONString(o.b, []byte(v))
}

func (o *jsonObj) bytes(k string, v []byte) {
	o.key(k)
	o.b = AppendJSONString(o.b, v)
}

func (o *jsonObj) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObj) bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *jsonObj) open(k string) {
	o.key(k)
	o.b = append(o.b, '{')
	o.first = true
}

func (o *jsonObj) close() {
	o.b = append(o.b, '}')
	o.first = false
}

// JSONOptions select optional parts of a command's JSON.
type JSONOptions struct {
	// OpenWire adds the decoded OpenWire header summary of messages, the
	// subscription info and the ack.
	OpenWire bool
}

// AppendCommandJSON appends one JSON object describing the command c
// decoded from rec: location, type and every decoded field. Message bodies
// are described (kind, size), never copied.
func AppendCommandJSON(dst []byte, rec Record, c *Command, opts JSONOptions) []byte {
	o := jsonObj{b: append(dst, '{'), first: true}
	o.int("file", int64(rec.Loc.File))
	o.int("offset", int64(rec.Loc.Offset))
	o.int("size", int64(rec.Loc.Size))
	o.int("batch", int64(rec.Batch))
	o.str("type", c.Type.String())
	if c.Tx.Kind != NoTx {
		o.str("transaction", c.Tx.String())
		if c.Tx.Kind == XATx {
			o.str("transactionKind", "xa")
		} else {
			o.str("transactionKind", "local")
		}
	}
	switch c.Type {
	case TraceCommand:
		if c.Has(1) {
			o.bytes("message", c.Text)
		}
	case AddMessageCommand, UpdateMessageCommand, RemoveMessageCommand, RemoveDestinationCommand, SubscriptionCommand:
		if c.Dest.HasName || c.Dest.HasType {
			o.str("destination", c.Dest.String())
		}
	}
	switch c.Type {
	case AddMessageCommand, UpdateMessageCommand:
		o.bytes("messageId", c.MessageID)
		o.int("priority", int64(c.Priority))
		o.bool("prioritySupported", c.PrioritySupported)
		o.int("messageSize", int64(len(c.Message)))
		if opts.OpenWire && len(c.Message) > 0 {
			var s MessageSummary
			err := ParseMessageSummary(c.Message, &s)
			o.open("openwire")
			appendSummary(&o, &s, err)
			o.close()
		}
	case RemoveMessageCommand:
		o.bytes("messageId", c.MessageID)
		if c.Has(5) {
			o.bytes("subscriptionKey", c.SubscriptionKey)
		}
		if c.Has(4) {
			o.int("ackSize", int64(len(c.Ack)))
			if opts.OpenWire && len(c.Ack) > 0 {
				a, err := ParseMessageAck(c.Ack)
				o.open("ack")
				if err != nil {
					o.str("error", err.Error())
				} else {
					o.str("consumerId", a.ConsumerID)
					o.int("ackType", int64(a.AckType))
					o.str("firstMessageId", a.FirstMessageID)
					o.str("lastMessageId", a.LastMessageID)
					o.int("messageCount", int64(a.MessageCount))
				}
				o.close()
			}
		}
	case SubscriptionCommand:
		o.bytes("subscriptionKey", c.SubscriptionKey)
		o.bool("retroactive", c.Retroactive)
		o.bool("delete", c.IsSubscriptionDelete())
		if c.Has(4) && opts.OpenWire {
			si, err := ParseSubscriptionInfo(c.SubscriptionInfo)
			o.open("subscriptionInfo")
			if err != nil {
				o.str("error", err.Error())
			} else {
				o.str("clientId", si.ClientID)
				o.str("subscriptionName", si.SubscriptionName)
				if si.HasSelector {
					o.str("selector", si.Selector)
				}
				o.bool("noLocal", si.NoLocal)
				if si.SubscribedDestination != "" {
					o.str("subscribedDestination", si.SubscribedDestination)
				}
			}
			o.close()
		}
	case ProducerAuditCommand, AckMessageFileMapCommand:
		o.int("blobSize", int64(len(c.Blob)))
	case AddScheduledJobCommand, RescheduleJobCommand, RemoveScheduledJobCommand, RemoveScheduledJobsCommand, DestroySchedulerCommand:
		o.bytes("scheduler", c.Scheduler)
		switch c.Type {
		case AddScheduledJobCommand:
			o.bytes("jobId", c.JobID)
			o.int("startTime", c.StartTime)
			o.bytes("cronEntry", c.CronEntry)
			o.int("delay", c.Delay)
			o.int("period", c.Period)
			o.int("repeat", int64(c.Repeat))
			o.int("payloadSize", int64(len(c.Payload)))
			o.int("nextExecutionTime", c.NextExecutionTime)
		case RescheduleJobCommand:
			o.bytes("jobId", c.JobID)
			o.int("executionTime", c.ExecutionTime)
			o.int("nextExecutionTime", c.NextExecutionTime)
			o.int("rescheduledCount", int64(c.RescheduledCount))
		case RemoveScheduledJobCommand:
			o.bytes("jobId", c.JobID)
			o.int("nextExecutionTime", c.NextExecutionTime)
		case RemoveScheduledJobsCommand:
			o.int("startTime", c.StartTime)
			o.int("endTime", c.EndTime)
		}
	case RewrittenDataFileCommand:
		o.int("sourceDataFileId", int64(c.SourceDataFileID))
		o.int("rewriteType", int64(c.RewriteType))
		o.bool("skipIfSourceExists", c.SkipIfSourceExists)
	}
	if c.Unknown {
		o.bool("unknownFields", true)
	}
	return append(o.b, '}')
}

func appendSummary(o *jsonObj, s *MessageSummary, err error) {
	if s.Kind != "" {
		o.str("kind", s.Kind)
	}
	if s.ProducerID != "" {
		o.str("producerId", s.ProducerID)
	}
	if s.Destination != "" {
		o.str("destination", s.Destination)
	}
	if s.TransactionID != "" {
		o.str("transactionId", s.TransactionID)
	}
	if s.OriginalDestination != "" {
		o.str("originalDestination", s.OriginalDestination)
	}
	if s.GroupID != "" {
		o.str("groupId", s.GroupID)
		o.int("groupSequence", int64(s.GroupSequence))
	}
	if s.CorrelationID != "" {
		o.str("correlationId", s.CorrelationID)
	}
	o.bool("persistent", s.Persistent)
	o.int("expiration", s.Expiration)
	o.int("priority", int64(s.Priority))
	if s.ReplyTo != "" {
		o.str("replyTo", s.ReplyTo)
	}
	o.int("timestamp", s.Timestamp)
	if s.JMSType != "" {
		o.str("jmsType", s.JMSType)
	}
	o.int("bodySize", int64(s.BodySize))
	o.int("propertiesSize", int64(s.PropertiesSize))
	if s.Complete {
		o.bool("compressed", s.Compressed)
		o.int("redeliveryCounter", int64(s.RedeliveryCounter))
		if s.UserID != "" {
			o.str("userId", s.UserID)
		}
		o.int("brokerInTime", s.BrokerInTime)
		o.int("brokerOutTime", s.BrokerOutTime)
	}
	if err != nil {
		o.str("error", err.Error())
	}
}

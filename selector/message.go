package selector

import (
	"strings"

	"github.com/kahafs/kahafs/openwire"
)

// Message is what a selector reads of a message: the header fields
// ActiveMQ exposes to selectors and the application properties. Strings
// that are "" are null (the journal does not tell an absent string from an
// empty one: openwire decodes both as "").
type Message struct {
	MessageID     string // JMSMessageID
	CorrelationID string // JMSCorrelationID
	Type          string // JMSType
	GroupID       string // JMSXGroupID
	// UserID is JMSXUserID; when null, the property JMSXUserID is read.
	UserID string
	// Destination is JMSDestination, the destination as ActiveMQ prints it
	// ("queue://Q.A", "topic://T", "temp-queue://..."; a composite one is
	// its physical name): the original destination of a message that has
	// one (a dead-lettered message's), else its destination.
	Destination string
	ReplyTo     string // JMSReplyTo, printed the same way
	// ProducerTXID is JMSXProducerTXID: the original transaction id, else
	// the transaction id ("TX:ID:...:5", "XID:[...]").
	ProducerTXID string

	Persistent        bool  // JMSDeliveryMode: "PERSISTENT" or "NON_PERSISTENT"
	Priority          int8  // JMSPriority (an Integer)
	Timestamp         int64 // JMSTimestamp (a Long)
	Expiration        int64 // JMSExpiration (a Long)
	RedeliveryCounter int32 // JMSRedelivered (> 0) and JMSXDeliveryCount (+ 1)
	GroupSeq          int32 // JMSXGroupSeq
	BrokerInTime      int64 // JMSActiveMQBrokerInTime
	BrokerOutTime     int64 // JMSActiveMQBrokerOutTime
	// BrokerPath is JMSActiveMQBrokerPath, which ActiveMQ prints with
	// Arrays.toString: "[a, b]", and "null" when BrokerPath is nil.
	BrokerPath            []string
	GroupFirstForConsumer bool // JMSXGroupFirstForConsumer

	// Properties are the application properties (nil: none).
	// PropertiesErr, when not nil, is why they could not be read: then
	// every property a selector reads fails as ActiveMQ's does, with a
	// JMSException (the broker does not deliver the message).
	Properties    *openwire.Map
	PropertiesErr error
}

// FromOpenWire is what a selector reads of a stored message.
func FromOpenWire(m *openwire.Message) *Message {
	out := &Message{
		CorrelationID:         m.CorrelationID,
		Type:                  m.Type,
		GroupID:               m.GroupID,
		UserID:                m.UserID,
		Persistent:            m.Persistent,
		Priority:              m.Priority,
		Timestamp:             m.Timestamp,
		Expiration:            m.Expiration,
		RedeliveryCounter:     m.RedeliveryCounter,
		GroupSeq:              m.GroupSequence,
		BrokerInTime:          m.BrokerInTime,
		BrokerOutTime:         m.BrokerOutTime,
		BrokerPath:            m.BrokerPath,
		GroupFirstForConsumer: m.JMSXGroupFirstForConsumer,
		Properties:            m.Properties,
		PropertiesErr:         m.PropertiesErr,
	}
	if m.MessageID != nil {
		out.MessageID = m.MessageID.String()
	}
	d := m.OriginalDestination
	if d == nil {
		d = m.Destination
	}
	out.Destination = destString(d)
	out.ReplyTo = destString(m.ReplyTo)
	tx := m.OriginalTransactionID
	if tx == nil {
		tx = m.TransactionID
	}
	if tx != nil {
		out.ProducerTXID = tx.String()
	}
	return out
}

// destString is ActiveMQDestination.toString: its qualified name, or the
// physical name of a composite destination (a ',' after the first
// character).
func destString(d *openwire.Destination) string {
	if d == nil {
		return ""
	}
	if strings.IndexByte(d.Name, ',') > 0 {
		return d.Name
	}
	return d.String()
}

// headers are the names PropertyExpression maps to message fields; any
// other name is a property. Names are case-sensitive.
var headers = map[string]func(m *Message) val{
	"JMSDestination":   func(m *Message) val { return nullableStr(m.Destination) },
	"JMSReplyTo":       func(m *Message) val { return nullableStr(m.ReplyTo) },
	"JMSType":          func(m *Message) val { return nullableStr(m.Type) },
	"JMSMessageID":     func(m *Message) val { return nullableStr(m.MessageID) },
	"JMSCorrelationID": func(m *Message) val { return nullableStr(m.CorrelationID) },
	"JMSXGroupID":      func(m *Message) val { return nullableStr(m.GroupID) },
	"JMSXProducerTXID": func(m *Message) val { return nullableStr(m.ProducerTXID) },
	"JMSDeliveryMode": func(m *Message) val {
		if m.Persistent {
			return strVal("PERSISTENT")
		}
		return strVal("NON_PERSISTENT")
	},
	"JMSPriority":              func(m *Message) val { return intVal(int32(m.Priority)) },
	"JMSTimestamp":             func(m *Message) val { return longVal(m.Timestamp) },
	"JMSExpiration":            func(m *Message) val { return longVal(m.Expiration) },
	"JMSRedelivered":           func(m *Message) val { return boolVal(m.RedeliveryCounter > 0) },
	"JMSXDeliveryCount":        func(m *Message) val { return intVal(m.RedeliveryCounter + 1) },
	"JMSXGroupSeq":             func(m *Message) val { return intVal(m.GroupSeq) },
	"JMSActiveMQBrokerInTime":  func(m *Message) val { return longVal(m.BrokerInTime) },
	"JMSActiveMQBrokerOutTime": func(m *Message) val { return longVal(m.BrokerOutTime) },
	"JMSActiveMQBrokerPath": func(m *Message) val {
		if m.BrokerPath == nil {
			return strVal("null")
		}
		return strVal("[" + strings.Join(m.BrokerPath, ", ") + "]")
	},
	"JMSXGroupFirstForConsumer": func(m *Message) val { return boolVal(m.GroupFirstForConsumer) },
	// JMSXUserID is special: evalCtx.property reads the property when the
	// field is null.
	"JMSXUserID": func(m *Message) val { return nullableStr(m.UserID) },
}

func nullableStr(s string) val {
	if s == "" {
		return vNull
	}
	return strVal(s)
}

// fromOpenWire converts a property value, giving each byte array, map and
// list its own identity.
func fromOpenWire(v openwire.Value) val {
	switch v.Type {
	case openwire.TypeBoolean:
		return boolVal(v.Bool())
	case openwire.TypeByte:
		return val{k: kByte, i: int64(int8(v.Int))}
	case openwire.TypeChar:
		return val{k: kChar, i: int64(uint16(v.Int))}
	case openwire.TypeShort:
		return val{k: kShort, i: int64(int16(v.Int))}
	case openwire.TypeInt:
		return val{k: kInt, i: int64(int32(v.Int))}
	case openwire.TypeLong:
		return val{k: kLong, i: v.Int}
	case openwire.TypeFloat:
		return floatVal(float32(v.Float))
	case openwire.TypeDouble:
		return doubleVal(v.Float)
	case openwire.TypeString:
		return strVal(v.Str)
	case openwire.TypeBytes:
		return val{k: kBytes, o: &object{b: v.Bytes}}
	case openwire.TypeMap:
		if v.Map == nil {
			return vNull
		}
		m := make(map[string]val, v.Map.Len())
		for _, e := range v.Map.Entries {
			m[e.Name] = fromOpenWire(e.Value)
		}
		return val{k: kMap, o: &object{m: m}}
	case openwire.TypeList:
		l := make([]val, len(v.List))
		for i, e := range v.List {
			l[i] = fromOpenWire(e)
		}
		return newList(l)
	}
	return vNull
}

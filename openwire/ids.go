package openwire

import (
	"encoding/hex"
	"strconv"
)

// Data structure types of OpenWire (CommandTypes), the byte before a data
// structure's fields. Part of the wire format.
const (
	TypeMessageAck       = 22
	TypeMessage          = 23
	TypeBytesMessage     = 24
	TypeMapMessage       = 25
	TypeObjectMessage    = 26
	TypeStreamMessage    = 27
	TypeTextMessage      = 28
	TypeBlobMessage      = 29
	TypeSubscriptionInfo = 55
	TypeQueue            = 100
	TypeTopic            = 101
	TypeTempQueue        = 102
	TypeTempTopic        = 103
	TypeMessageID        = 110
	TypeLocalTxID        = 111
	TypeXATxID           = 112
	TypeConnectionID     = 120
	TypeSessionID        = 121
	TypeConsumerID       = 122
	TypeProducerID       = 123
	TypeBrokerID         = 124
)

// Destination is a queue or topic (temporary or not).
type Destination struct {
	Type string // "queue", "topic", "temp-queue", "temp-topic"
	Name string // the physical name
}

// String is the destination as ActiveMQ qualifies it: queue://NAME.
func (d *Destination) String() string { return string(d.AppendTo(nil)) }

// AppendTo appends String (nothing for nil).
func (d *Destination) AppendTo(dst []byte) []byte {
	if d == nil {
		return dst
	}
	dst = append(dst, d.Type...)
	dst = append(dst, "://"...)
	return append(dst, d.Name...)
}

// ProducerID identifies a producer: connection id, session, producer.
type ProducerID struct {
	ConnectionID string
	SessionID    int64
	Value        int64
}

// String is the id as ActiveMQ prints it: CONNECTION:SESSION:VALUE.
func (p *ProducerID) String() string { return string(p.AppendTo(nil)) }

// AppendTo appends String (nothing for nil).
func (p *ProducerID) AppendTo(dst []byte) []byte {
	if p == nil {
		return dst
	}
	return appendTriple(dst, p.ConnectionID, p.SessionID, p.Value)
}

func appendTriple(dst []byte, conn string, a, b int64) []byte {
	dst = append(dst, conn...)
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, a, 10)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, b, 10)
}

// MessageID is an OpenWire MessageId. TextView, when set (OpenWire 10 and
// later, for ids given by other protocols), is the id itself.
type MessageID struct {
	TextView         string
	ProducerID       *ProducerID
	ProducerSequence int64
	BrokerSequence   int64
}

// String is the JMSMessageID: TextView, else PRODUCER:SEQUENCE.
func (m *MessageID) String() string { return string(m.AppendTo(nil)) }

// AppendTo appends String (nothing for nil).
func (m *MessageID) AppendTo(dst []byte) []byte {
	switch {
	case m == nil:
		return dst
	case m.TextView != "":
		return append(dst, m.TextView...)
	}
	dst = m.ProducerID.AppendTo(dst)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, m.ProducerSequence, 10)
}

// TransactionID is a local transaction (ConnectionID, Value) or an XA one
// (XA set: FormatID, GlobalID, BranchQualifier).
type TransactionID struct {
	XA              bool
	ConnectionID    string
	Value           int64
	FormatID        int32
	GlobalID        []byte
	BranchQualifier []byte
}

// String is the id as ActiveMQ prints it: TX:CONNECTION:N or
// XID:[FORMAT,globalId=HEX,branchId=HEX].
func (t *TransactionID) String() string { return string(t.AppendTo(nil)) }

// AppendTo appends String (nothing for nil).
func (t *TransactionID) AppendTo(dst []byte) []byte {
	if t == nil {
		return dst
	}
	return AppendTransactionID(dst, t.XA, t.ConnectionID, t.Value, t.FormatID, t.GlobalID, t.BranchQualifier)
}

// AppendTransactionID appends a transaction id as ActiveMQ prints it: a
// local one (TX:CONNECTION:VALUE) or, xa set, an XA one
// (XID:[FORMAT,globalId=HEX,branchId=HEX]). The journal's transaction ids
// (codec.TxID) are printed through it too.
func AppendTransactionID[S ~string | ~[]byte](dst []byte, xa bool, connectionID S, value int64, formatID int32, globalID, branchQualifier []byte) []byte {
	if xa {
		dst = append(dst, "XID:["...)
		dst = strconv.AppendInt(dst, int64(formatID), 10)
		dst = append(dst, ",globalId="...)
		dst = hex.AppendEncode(dst, globalID)
		dst = append(dst, ",branchId="...)
		dst = hex.AppendEncode(dst, branchQualifier)
		return append(dst, ']')
	}
	dst = append(dst, "TX:"...)
	dst = append(dst, connectionID...)
	dst = append(dst, ':')
	return strconv.AppendInt(dst, value, 10)
}

// ConsumerID identifies a consumer: connection id, session, consumer.
type ConsumerID struct {
	ConnectionID string
	SessionID    int64
	Value        int64
}

// String is the id as ActiveMQ prints it: CONNECTION:SESSION:VALUE.
func (c *ConsumerID) String() string { return string(c.AppendTo(nil)) }

// AppendTo appends String (nothing for nil).
func (c *ConsumerID) AppendTo(dst []byte) []byte {
	if c == nil {
		return dst
	}
	return appendTriple(dst, c.ConnectionID, c.SessionID, c.Value)
}

// nested reads the "present" flag and the type byte of a nested object
// (the store writes no marshal cache: a cached object is a nested one).
// It returns 0 when the object is absent, and fails unless the type is
// one of want.
func (r *reader) nested(what string, want ...byte) byte {
	if !r.bool(what) {
		return 0
	}
	at := r.pos
	t := r.u8(what)
	if r.err != nil {
		return 0
	}
	for _, w := range want {
		if t == w {
			return t
		}
	}
	r.failAt(at, ErrMalformed, what+": data structure type "+strconv.Itoa(int(t))+" where "+typeList(want)+" belongs")
	return 0
}

func typeList(ts []byte) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += "/"
		}
		s += strconv.Itoa(int(t))
	}
	return s
}

func (r *reader) destination(what string) *Destination {
	var typ string
	switch r.nested(what, TypeQueue, TypeTopic, TypeTempQueue, TypeTempTopic) {
	case 0:
		return nil
	case TypeQueue:
		typ = "queue"
	case TypeTopic:
		typ = "topic"
	case TypeTempQueue:
		typ = "temp-queue"
	case TypeTempTopic:
		typ = "temp-topic"
	}
	d := &Destination{Type: typ, Name: r.looseString(what)}
	if r.err != nil {
		return nil
	}
	return d
}

// producerIDBody reads a ProducerId's fields (after its type byte).
func (r *reader) producerIDBody(what string) *ProducerID {
	p := &ProducerID{ConnectionID: r.looseString(what)}
	p.Value = r.i64(what)
	p.SessionID = r.i64(what)
	return p
}

func (r *reader) producerID(what string) *ProducerID {
	if r.nested(what, TypeProducerID) == 0 {
		return nil
	}
	return r.producerIDBody(what)
}

// messageID reads a MessageId; textView says whether the version has the
// field (10 and later).
func (r *reader) messageID(what string, textView bool) *MessageID {
	if r.nested(what, TypeMessageID) == 0 {
		return nil
	}
	m := &MessageID{}
	if textView {
		m.TextView = r.looseString(what)
	}
	m.ProducerID = r.producerID(what)
	m.ProducerSequence = r.i64(what)
	m.BrokerSequence = r.i64(what)
	return m
}

func (r *reader) transactionID(what string) *TransactionID {
	switch r.nested(what, TypeLocalTxID, TypeXATxID) {
	case TypeLocalTxID:
		t := &TransactionID{Value: r.i64(what)}
		if r.nested(what, TypeConnectionID) != 0 {
			t.ConnectionID = r.looseString(what)
		}
		return t
	case TypeXATxID:
		t := &TransactionID{XA: true, FormatID: r.i32(what)}
		t.GlobalID, _ = r.byteSeq(what)
		t.BranchQualifier, _ = r.byteSeq(what)
		return t
	}
	return nil
}

func (r *reader) consumerID(what string) *ConsumerID {
	if r.nested(what, TypeConsumerID) == 0 {
		return nil
	}
	c := &ConsumerID{ConnectionID: r.looseString(what)}
	c.SessionID = r.i64(what)
	c.Value = r.i64(what)
	return c
}

// brokerIDs reads an array of BrokerIds (brokerPath, cluster): bool
// present, short count, that many nested BrokerIds.
func (r *reader) brokerIDs(what string) []string {
	if !r.bool(what) {
		return nil
	}
	n := int(r.i16(what))
	if n < 0 {
		r.failf(ErrMalformed, "%s: negative count %d", what, n)
		return nil
	}
	// Each element takes at least one byte (its present flag).
	if n > r.left() {
		r.failf(ErrTruncated, "%s: %d broker ids, %d bytes left", what, n, r.left())
		return nil
	}
	ids := make([]string, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		if r.nested(what, TypeBrokerID) != 0 {
			ids = append(ids, r.looseString(what))
		} else {
			ids = append(ids, "")
		}
	}
	return ids
}

package openwire

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
)

// The summary readers: the header fields of a message, a SubscriptionInfo
// and a MessageAck, read straight off the loose encoding the journal
// stores (OpenWire v11, no marshal cache, size prefix), cheaply and
// without decoding bodies. Message (Decoder) is the full reading.

// Limits of the summary readers (OpenWire v11, loose encoding, no marshal
// cache, size prefix; the data structure types are in ids.go).
const (
	owMaxStringBytes    = 1 << 16
	owMaxNestingAllowed = 4
)

// errSummary: a data structure the summary readers cannot read. It is an
// ErrMalformed.
var errSummary = fmt.Errorf("openwire: %w data", ErrMalformed)

var owTypeNames = map[byte]string{
	TypeMessage: "Message", TypeBytesMessage: "BytesMessage", TypeMapMessage: "MapMessage",
	TypeObjectMessage: "ObjectMessage", TypeStreamMessage: "StreamMessage", TypeTextMessage: "TextMessage",
	TypeBlobMessage: "BlobMessage",
}

// MessageSummary is what the OpenWire message of an ADD command holds
// beyond the command itself: header fields cheap to read. BodyOffset and
// BodySize locate the body inside the blob so that it can be read on demand
// without being kept.
type MessageSummary struct {
	Kind                string // TextMessage, BytesMessage, ...
	ProducerID          string
	Destination         string
	TransactionID       string
	OriginalDestination string
	MessageID           string
	GroupID             string
	GroupSequence       int32
	CorrelationID       string
	Persistent          bool
	Expiration          int64
	Priority            int8
	ReplyTo             string
	Timestamp           int64
	JMSType             string
	BodyOffset          int // offset of the body bytes in the blob, -1 if none
	BodySize            int // -1 if no body
	PropertiesSize      int // -1 if no properties
	Compressed          bool
	RedeliveryCounter   int32
	Arrival             int64
	UserID              string
	BrokerInTime        int64
	BrokerOutTime       int64
	// Complete: every field up to BrokerOutTime was read. False when the
	// message carries an embedded data structure (advisories), whose
	// encoding this summary does not follow.
	Complete bool
}

type owReader struct {
	b   []byte
	pos int
	err error
}

func (r *owReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", errSummary, what, r.pos)
	}
}

func (r *owReader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || r.pos+n > len(r.b) {
		r.fail("short data")
		return false
	}
	return true
}

func (r *owReader) u8() byte {
	if !r.need(1) {
		return 0
	}
	v := r.b[r.pos]
	r.pos++
	return v
}

func (r *owReader) bool() bool { return r.u8() != 0 }

func (r *owReader) i16() int16 {
	if !r.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(r.b[r.pos:])
	r.pos += 2
	return int16(v)
}

func (r *owReader) i32() int32 {
	if !r.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(r.b[r.pos:])
	r.pos += 4
	return int32(v)
}

func (r *owReader) i64() int64 {
	if !r.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(r.b[r.pos:])
	r.pos += 8
	return int64(v)
}

// str reads a loose string: bool present, u16 length, modified UTF-8.
func (r *owReader) str() string {
	if !r.bool() {
		return ""
	}
	n := int(uint16(r.i16()))
	if !r.need(n) {
		return ""
	}
	s := ModifiedUTF8(r.b[r.pos : r.pos+n])
	r.pos += n
	return s
}

// bytesSeq reads a loose byte sequence: bool present, int32 length, bytes.
// It returns the offset and length (-1 when absent).
func (r *owReader) bytesSeq() (int, int) {
	if !r.bool() {
		return -1, -1
	}
	n := int(r.i32())
	if !r.need(n) {
		return -1, -1
	}
	off := r.pos
	r.pos += n
	return off, n
}

// obj reads a nested object and renders the kinds found in messages.
func (r *owReader) obj(depth int) string {
	if !r.bool() {
		return ""
	}
	if depth > owMaxNestingAllowed {
		r.fail("nesting too deep")
		return ""
	}
	t := r.u8()
	switch t {
	case TypeQueue:
		return "queue://" + r.str()
	case TypeTopic:
		return "topic://" + r.str()
	case TypeTempQueue:
		return "temp-queue://" + r.str()
	case TypeTempTopic:
		return "temp-topic://" + r.str()
	case TypeProducerID:
		conn := r.str()
		value := r.i64()
		session := r.i64()
		return conn + ":" + strconv.FormatInt(session, 10) + ":" + strconv.FormatInt(value, 10)
	case TypeMessageID:
		text := r.str()
		prod := r.obj(depth + 1)
		seq := r.i64()
		r.i64() // broker sequence id
		if text != "" {
			return text
		}
		return prod + ":" + strconv.FormatInt(seq, 10)
	case TypeLocalTxID:
		value := r.i64()
		conn := r.obj(depth + 1)
		return "TX:" + conn + ":" + strconv.FormatInt(value, 10)
	case TypeXATxID:
		format := r.i32()
		go1, gn := r.bytesSeq()
		bo, bn := r.bytesSeq()
		if r.err != nil {
			return ""
		}
		return "XID:[" + strconv.Itoa(int(format)) + ",globalId=" + hexOf(r.b, go1, gn) + ",branchId=" + hexOf(r.b, bo, bn) + "]"
	case TypeConnectionID, TypeBrokerID:
		return r.str()
	case TypeSessionID:
		conn := r.str()
		return conn + ":" + strconv.FormatInt(r.i64(), 10)
	case TypeConsumerID:
		conn := r.str()
		session := r.i64()
		value := r.i64()
		return conn + ":" + strconv.FormatInt(session, 10) + ":" + strconv.FormatInt(value, 10)
	}
	r.fail("unsupported nested type " + strconv.Itoa(int(t)))
	return ""
}

func hexOf(b []byte, off, n int) string {
	if off < 0 {
		return ""
	}
	return hex.EncodeToString(b[off : off+n])
}

// header reads the size prefix and type byte.
func (r *owReader) header() byte {
	size := r.i32()
	if r.err == nil && int(size) != len(r.b)-4 {
		r.fail(fmt.Sprintf("size prefix %d for %d bytes", size, len(r.b)-4))
	}
	return r.u8()
}

// ParseMessageSummary reads the header fields of an OpenWire message blob
// (KahaAddMessageCommand.message). On error s holds what was read before it.
func ParseMessageSummary(b []byte, s *MessageSummary) error {
	*s = MessageSummary{BodyOffset: -1, BodySize: -1, PropertiesSize: -1}
	r := &owReader{b: b}
	t := r.header()
	if r.err != nil {
		return r.err
	}
	name, ok := owTypeNames[t]
	if !ok {
		return fmt.Errorf("%w: type %d is not a message", errSummary, t)
	}
	s.Kind = name
	r.i32()  // commandId
	r.bool() // responseRequired
	s.ProducerID = r.obj(0)
	s.Destination = r.obj(0)
	s.TransactionID = r.obj(0)
	s.OriginalDestination = r.obj(0)
	s.MessageID = r.obj(0)
	r.obj(0) // originalTransactionId
	s.GroupID = r.str()
	s.GroupSequence = r.i32()
	s.CorrelationID = r.str()
	s.Persistent = r.bool()
	s.Expiration = r.i64()
	s.Priority = int8(r.u8())
	s.ReplyTo = r.obj(0)
	s.Timestamp = r.i64()
	s.JMSType = r.str()
	s.BodyOffset, s.BodySize = r.bytesSeq()
	_, s.PropertiesSize = r.bytesSeq()
	if r.err != nil {
		return r.err
	}
	if r.bool() { // dataStructure: an embedded command; stop here
		return nil
	}
	r.obj(0) // targetConsumerId
	s.Compressed = r.bool()
	s.RedeliveryCounter = r.i32()
	if r.bool() { // brokerPath
		n := int(r.i16())
		for i := 0; i < n && r.err == nil; i++ {
			r.obj(0)
		}
	}
	s.Arrival = r.i64()
	s.UserID = r.str()
	r.bool()      // recievedByDFBridge
	r.bool()      // droppable
	if r.bool() { // cluster
		n := int(r.i16())
		for i := 0; i < n && r.err == nil; i++ {
			r.obj(0)
		}
	}
	s.BrokerInTime = r.i64()
	s.BrokerOutTime = r.i64()
	if r.err != nil {
		return r.err
	}
	s.Complete = true
	return nil
}

// SubscriptionInfo is the OpenWire SubscriptionInfo of a KahaSubscriptionCommand.
type SubscriptionInfo struct {
	ClientID              string
	Destination           string
	Selector              string
	HasSelector           bool
	SubscriptionName      string
	SubscribedDestination string
	NoLocal               bool
}

// ParseSubscriptionInfo decodes KahaSubscriptionCommand.subscriptionInfo.
func ParseSubscriptionInfo(b []byte) (SubscriptionInfo, error) {
	var si SubscriptionInfo
	r := &owReader{b: b}
	if t := r.header(); r.err == nil && t != TypeSubscriptionInfo {
		return si, fmt.Errorf("%w: type %d is not a SubscriptionInfo", errSummary, t)
	}
	si.ClientID = r.str()
	si.Destination = r.obj(0)
	if r.err == nil && r.pos < len(r.b) && r.b[r.pos] != 0 {
		si.HasSelector = true
	}
	si.Selector = r.str()
	si.SubscriptionName = r.str()
	si.SubscribedDestination = r.obj(0)
	si.NoLocal = r.bool()
	return si, r.err
}

// AckSummary is the OpenWire MessageAck of a KahaRemoveMessageCommand.
type AckSummary struct {
	Destination    string
	TransactionID  string
	ConsumerID     string
	AckType        int8
	FirstMessageID string
	LastMessageID  string
	MessageCount   int32
}

// ParseMessageAck decodes KahaRemoveMessageCommand.ack (when not empty).
func ParseMessageAck(b []byte) (AckSummary, error) {
	var a AckSummary
	r := &owReader{b: b}
	if t := r.header(); r.err == nil && t != TypeMessageAck {
		return a, fmt.Errorf("%w: type %d is not a MessageAck", errSummary, t)
	}
	r.i32()
	r.bool()
	a.Destination = r.obj(0)
	a.TransactionID = r.obj(0)
	a.ConsumerID = r.obj(0)
	a.AckType = int8(r.u8())
	a.FirstMessageID = r.obj(0)
	a.LastMessageID = r.obj(0)
	a.MessageCount = r.i32()
	return a, r.err
}

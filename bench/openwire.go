package main

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/openwire"
)

// The OpenWire blobs inside the journal (KahaAddMessageCommand.message,
// KahaRemoveMessageCommand.ack, KahaSubscriptionCommand.subscriptionInfo)
// use the loose encoding: a 4-byte size prefix, a type byte, then the fields
// in order, with no length prefixes of their own except those of strings
// (u16) and byte arrays (int32). A field can therefore be replaced by another
// encoding of the same field as long as the size prefix is fixed afterwards:
// that is all the generator does to the broker's templates.

// Limits of the template rewriting (OpenWire v11; the data structure types
// are openwire's).
const (
	owMaxDepth   = 4
	owHeaderSize = 5 // size prefix + type
)

var errOpenWire = errors.New("openwire template")

// span is a byte range [start, end) of a blob.
type span struct{ start, end int }

// owWalker skips over loose-encoded fields, remembering where it is.
type owWalker struct {
	b   []byte
	pos int
	err error
}

func (w *owWalker) skip(n int) {
	if w.err == nil && (n < 0 || w.pos+n > len(w.b)) {
		w.err = fmt.Errorf("%w: short data at byte %d", errOpenWire, w.pos)
	}
	if w.err == nil {
		w.pos += n
	}
}

func (w *owWalker) present() bool {
	if w.skip(1); w.err != nil {
		return false
	}
	return w.b[w.pos-1] != 0
}

func (w *owWalker) u8() byte {
	if w.skip(1); w.err != nil {
		return 0
	}
	return w.b[w.pos-1]
}

// str skips a loose string: presence byte, u16 length, bytes.
func (w *owWalker) str() span {
	if !w.present() {
		return span{w.pos, w.pos}
	}
	if w.skip(2); w.err != nil {
		return span{}
	}
	n := int(binary.BigEndian.Uint16(w.b[w.pos-2:]))
	start := w.pos
	w.skip(n)
	return span{start, w.pos}
}

// bytesSeq skips a loose byte array: presence byte, int32 length, bytes.
func (w *owWalker) bytesSeq() {
	if !w.present() {
		return
	}
	if w.skip(4); w.err != nil {
		return
	}
	w.skip(int(int32(binary.BigEndian.Uint32(w.b[w.pos-4:]))))
}

// obj skips a nested object (of the kinds found in messages and acks) and
// returns its whole encoding, presence byte included.
func (w *owWalker) obj(depth int) span {
	start := w.pos
	if !w.present() || w.err != nil {
		return span{start, w.pos}
	}
	if depth > owMaxDepth {
		w.err = fmt.Errorf("%w: nesting too deep at byte %d", errOpenWire, w.pos)
		return span{}
	}
	switch t := w.u8(); t {
	case openwire.TypeQueue, openwire.TypeTopic, openwire.TypeTempQueue, openwire.TypeTempTopic, openwire.TypeConnectionID, openwire.TypeBrokerID:
		w.str()
	case openwire.TypeProducerID, openwire.TypeConsumerID:
		w.str()
		w.skip(16)
	case openwire.TypeSessionID:
		w.str()
		w.skip(8)
	case openwire.TypeMessageID:
		w.str()
		w.obj(depth + 1)
		w.skip(16)
	case openwire.TypeLocalTxID:
		w.skip(8)
		w.obj(depth + 1)
	case openwire.TypeXATxID:
		w.skip(4)
		w.bytesSeq()
		w.bytesSeq()
	default:
		if w.err == nil {
			w.err = fmt.Errorf("%w: unsupported nested type %d at byte %d", errOpenWire, t, w.pos-1)
		}
	}
	return span{start, w.pos}
}

// msgLayout locates the fields of a message blob that the generator
// replaces.
type msgLayout struct {
	producer, dest, tx, messageID span
	body                          span // the body's int32 length and content
}

// parseMessageLayout reads an uncompressed TextMessage blob whose body is
// the int32 length of its UTF-8 text followed by the text.
func parseMessageLayout(b []byte) (msgLayout, error) {
	var l msgLayout
	var s openwire.MessageSummary
	if err := openwire.ParseMessageSummary(b, &s); err != nil {
		return l, err
	}
	if s.Kind != "TextMessage" || s.Compressed || !s.Complete || s.BodySize < 4 {
		return l, fmt.Errorf("%w: want a complete uncompressed TextMessage with a body, got %s", errOpenWire, s.Kind)
	}
	if n := int(binary.BigEndian.Uint32(b[s.BodyOffset:])); n != s.BodySize-4 {
		return l, fmt.Errorf("%w: text length %d in a body of %d bytes", errOpenWire, n, s.BodySize)
	}
	w := &owWalker{b: b, pos: owHeaderSize}
	w.skip(4 + 1) // commandId, responseRequired
	l.producer = w.obj(0)
	l.dest = w.obj(0)
	l.tx = w.obj(0)
	w.obj(0) // originalDestination
	l.messageID = w.obj(0)
	l.body = span{s.BodyOffset - 4, s.BodyOffset + s.BodySize}
	if w.err == nil && l.body.start < w.pos {
		w.err = fmt.Errorf("%w: body before the message id", errOpenWire)
	}
	return l, w.err
}

// ackLayout locates the fields of a MessageAck blob that are replaced.
type ackLayout struct {
	dest, tx, first, last span
}

func parseAckLayout(b []byte) (ackLayout, error) {
	var l ackLayout
	if len(b) < owHeaderSize || int(binary.BigEndian.Uint32(b)) != len(b)-4 {
		return l, fmt.Errorf("%w: ack size prefix", errOpenWire)
	}
	w := &owWalker{b: b, pos: owHeaderSize}
	w.skip(4 + 1) // commandId, responseRequired
	l.dest = w.obj(0)
	l.tx = w.obj(0)
	w.obj(0)  // consumerId
	w.skip(1) // ackType
	l.first = w.obj(0)
	l.last = w.obj(0)
	return l, w.err
}

// subLayout locates the fields of a SubscriptionInfo blob that are replaced.
type subLayout struct {
	clientID, dest, subName, subscribedDest span
}

func parseSubLayout(b []byte) (subLayout, error) {
	var l subLayout
	if len(b) < owHeaderSize || int(binary.BigEndian.Uint32(b)) != len(b)-4 {
		return l, fmt.Errorf("%w: subscription info size prefix", errOpenWire)
	}
	w := &owWalker{b: b, pos: owHeaderSize}
	start := w.pos
	w.str()
	l.clientID = span{start, w.pos}
	l.dest = w.obj(0)
	w.str() // selector
	start = w.pos
	w.str()
	l.subName = span{start, w.pos}
	l.subscribedDest = w.obj(0)
	return l, w.err
}

// edit replaces a span of a template with new bytes.
type edit struct {
	at   span
	with []byte
}

// splice appends to dst the template src with the edits applied (spans in
// ascending order, not overlapping) and sets the size prefix.
func splice(dst, src []byte, edits []edit) []byte {
	start := len(dst)
	pos := 0
	for _, e := range edits {
		dst = append(dst, src[pos:e.at.start]...)
		dst = append(dst, e.with...)
		pos = e.at.end
	}
	dst = append(dst, src[pos:]...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// Encoders of loose-encoded fields (strings are ASCII, which Java's
// modified UTF-8 writes unchanged).

func owAppendStr(dst []byte, s string) []byte {
	dst = append(dst, 1)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func owAppendBytes(dst, b []byte) []byte {
	dst = append(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

func owAppendDest(dst []byte, d codec.Destination) []byte {
	t := byte(openwire.TypeQueue)
	if d.Type == codec.Topic {
		t = openwire.TypeTopic
	}
	return owAppendStr(append(dst, 1, t), string(d.Name))
}

func owAppendTx(dst []byte, tx codec.TxID) []byte {
	switch tx.Kind {
	case codec.LocalTx:
		dst = binary.BigEndian.AppendUint64(append(dst, 1, openwire.TypeLocalTxID), uint64(tx.LocalID))
		return owAppendStr(append(dst, 1, openwire.TypeConnectionID), string(tx.ConnectionID))
	case codec.XATx:
		dst = binary.BigEndian.AppendUint32(append(dst, 1, openwire.TypeXATxID), uint32(tx.FormatID))
		dst = owAppendBytes(dst, tx.GlobalID)
		return owAppendBytes(dst, tx.BranchQualifier)
	}
	return append(dst, 0)
}

// producer names one message producer: connection, session, producer value.
type producer struct {
	conn           string
	session, value int64
}

// String is ProducerId.toString(): conn:session:value.
func (p producer) String() string { return fmt.Sprintf("%s:%d:%d", p.conn, p.session, p.value) }

func owAppendProducer(dst []byte, p producer) []byte {
	dst = owAppendStr(append(dst, 1, openwire.TypeProducerID), p.conn)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.value))
	return binary.BigEndian.AppendUint64(dst, uint64(p.session))
}

// owAppendMessageID writes a MessageId without text view, as the broker
// stores it: producer id, producer sequence id, broker sequence id.
func owAppendMessageID(dst []byte, p producer, seq, brokerSeq int64) []byte {
	dst = append(dst, 1, openwire.TypeMessageID, 0)
	dst = owAppendProducer(dst, p)
	dst = binary.BigEndian.AppendUint64(dst, uint64(seq))
	return binary.BigEndian.AppendUint64(dst, uint64(brokerSeq))
}

// owAppendTextBody writes a TextMessage body (int32 text length, text) in
// place of the template's (its presence byte stays).
func owAppendTextBody(dst, text []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(4+len(text)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(text)))
	return append(dst, text...)
}

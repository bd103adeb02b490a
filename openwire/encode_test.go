package openwire_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"math"
)

// enc writes the loose OpenWire encoding the store uses, to build test
// blobs (the marshallers' looseMarshal, in Go).
type enc struct{ b []byte }

func (e *enc) u8(v byte)   { e.b = append(e.b, v) }
func (e *enc) i16(v int16) { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *enc) i32(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) i64(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// utf writes DataOutput.writeUTF (the test strings are plain UTF-8 unless
// raw bytes are given).
func (e *enc) utf(s string) { e.i16(int16(len(s))); e.b = append(e.b, s...) }

// str writes a loose string; "" is absent (null).
func (e *enc) str(s string) {
	e.bool(s != "")
	if s != "" {
		e.utf(s)
	}
}

// seq writes a loose byte sequence; nil is absent.
func (e *enc) seq(b []byte) {
	e.bool(b != nil)
	if b != nil {
		e.i32(int32(len(b)))
		e.b = append(e.b, b...)
	}
}

func (e *enc) null() { e.u8(0) }

func (e *enc) dest(typ byte, name string) { e.u8(1); e.u8(typ); e.str(name) }

func (e *enc) producerID(conn string, value, session int64) {
	e.u8(1)
	e.u8(123)
	e.str(conn)
	e.i64(value)
	e.i64(session)
}

// msg describes a message blob to build.
type msg struct {
	kind                  byte // 23..29
	version               int  // 0: 11
	producerConn          string
	dest                  string // a queue; "" none
	localTx               int64  // > 0: a local transaction id
	origDest              string
	textView              string
	seq                   int64
	groupID               string
	groupSeq              int32
	correlationID         string
	persistent            bool
	expiration            int64
	priority              byte
	replyTo               string // a topic
	timestamp             int64
	jmsType               string
	content               []byte
	props                 []byte
	dataStructure         byte
	compressed            bool
	redeliveries          int32
	brokerPath            []string
	userID                string
	brokerIn, brokerOut   int64
	groupFirst            bool
	blobURL, blobMimeType string
}

// build marshals m with a size prefix.
func (m msg) build() []byte {
	v := m.version
	if v == 0 {
		v = 11
	}
	e := &enc{b: make([]byte, 4)}
	e.u8(m.kind)
	e.i32(7)      // commandId
	e.bool(false) // responseRequired
	e.producerID(m.producerConn, 1, 1)
	if m.dest != "" {
		e.dest(100, m.dest)
	} else {
		e.null()
	}
	if m.localTx > 0 {
		e.u8(1)
		e.u8(111)
		e.i64(m.localTx)
		e.u8(1)
		e.u8(120)
		e.str(m.producerConn)
	} else {
		e.null()
	}
	if m.origDest != "" {
		e.dest(100, m.origDest)
	} else {
		e.null()
	}
	e.u8(1) // messageId
	e.u8(110)
	if v >= 10 {
		e.str(m.textView)
	}
	e.producerID(m.producerConn, 1, 1)
	e.i64(m.seq)
	e.i64(0)
	e.null() // originalTransactionId
	e.str(m.groupID)
	e.i32(m.groupSeq)
	e.str(m.correlationID)
	e.bool(m.persistent)
	e.i64(m.expiration)
	e.u8(m.priority)
	if m.replyTo != "" {
		e.dest(101, m.replyTo)
	} else {
		e.null()
	}
	e.i64(m.timestamp)
	e.str(m.jmsType)
	e.seq(m.content)
	e.seq(m.props)
	if m.dataStructure != 0 {
		e.u8(1)
		e.u8(m.dataStructure)
		e.b = append(e.b, 1, 2, 3) // whatever it holds
	} else {
		e.null()
		e.null() // targetConsumerId
		e.bool(m.compressed)
		e.i32(m.redeliveries)
		if m.brokerPath != nil {
			e.u8(1)
			e.i16(int16(len(m.brokerPath)))
			for _, id := range m.brokerPath {
				e.u8(1)
				e.u8(124)
				e.str(id)
			}
		} else {
			e.null()
		}
		e.i64(0) // arrival
		e.str(m.userID)
		e.bool(false) // recievedByDFBridge
		e.bool(false) // droppable
		e.null()      // cluster
		e.i64(m.brokerIn)
		e.i64(m.brokerOut)
		if v >= 10 {
			e.bool(m.groupFirst)
		}
		if m.kind == 29 {
			e.str(m.blobURL)
			e.str(m.blobMimeType)
			e.bool(true)
		}
	}
	binary.BigEndian.PutUint32(e.b, uint32(len(e.b)-4))
	return e.b
}

// pm writes a primitive map or list and its values
// (MarshallingSupport).
type pm struct{ enc }

func (p *pm) count(n int)        { p.i32(int32(n)) }
func (p *pm) name(s string)      { p.utf(s) }
func (p *pm) null()              { p.u8(0) }
func (p *pm) boolean(v bool)     { p.u8(1); p.bool(v) }
func (p *pm) byte_(v int8)       { p.u8(2); p.u8(byte(v)) }
func (p *pm) char(v uint16)      { p.u8(3); p.i16(int16(v)) }
func (p *pm) short(v int16)      { p.u8(4); p.i16(v) }
func (p *pm) int_(v int32)       { p.u8(5); p.i32(v) }
func (p *pm) long(v int64)       { p.u8(6); p.i64(v) }
func (p *pm) double(v float64)   { p.u8(7); p.i64(int64(math.Float64bits(v))) }
func (p *pm) float(v float32)    { p.u8(8); p.i32(int32(math.Float32bits(v))) }
func (p *pm) string_(v string)   { p.u8(9); p.utf(v) }
func (p *pm) bigString(v string) { p.u8(13); p.i32(int32(len(v))); p.b = append(p.b, v...) }
func (p *pm) bytes_(v []byte)    { p.u8(10); p.i32(int32(len(v))); p.b = append(p.b, v...) }
func (p *pm) mapOf(n int)        { p.u8(11); p.count(n) }
func (p *pm) listOf(n int)       { p.u8(12); p.count(n) }
func (p *pm) raw(b ...byte) *pm  { p.b = append(p.b, b...); return p }
func (p *pm) done() []byte       { return p.b }
func newPM(entries int) *pm      { p := &pm{}; p.count(entries); return p }
func textContent(s string) []byte {
	e := &enc{}
	e.i32(int32(len(s)))
	e.b = append(e.b, s...)
	return e.b
}
func deflate(b []byte) []byte {
	var o bytes.Buffer
	w := zlib.NewWriter(&o)
	w.Write(b)
	w.Close()
	return o.Bytes()
}
func compressedBytes(b []byte) []byte {
	e := &enc{}
	e.i32(int32(len(b)))
	e.b = append(e.b, deflate(b)...)
	return e.b
}
func javaObject(class string) []byte {
	e := &enc{b: []byte{0xAC, 0xED, 0, 5, 0x73, 0x72}}
	e.utf(class)
	e.i64(1)
	return e.b
}

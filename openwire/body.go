package openwire

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"io"
	"strconv"
	"unsafe"
)

// BodyKind says what a decoded body holds.
type BodyKind byte

const (
	// BodyNone: no content (a plain Message, a TextMessage without text,
	// an ObjectMessage holding null, a MapMessage never written to).
	BodyNone BodyKind = iota
	// BodyText: Body.Text (a TextMessage).
	BodyText
	// BodyBytes: Body.Bytes (a BytesMessage).
	BodyBytes
	// BodyMap: Body.Map (a MapMessage).
	BodyMap
	// BodyStream: Body.Stream (a StreamMessage).
	BodyStream
	// BodyObject: Body.Bytes is the Java serialization stream of an
	// ObjectMessage, Body.ClassName the class its header names.
	BodyObject
	// BodyUnknown: content whose encoding the message type does not say
	// (a plain Message or a BlobMessage with content): Body.Bytes.
	BodyUnknown
)

var bodyKindNames = [...]string{
	BodyNone: "none", BodyText: "text", BodyBytes: "bytes", BodyMap: "map", BodyStream: "stream",
	BodyObject: "object", BodyUnknown: "unknown",
}

func (k BodyKind) String() string {
	if int(k) < len(bodyKindNames) {
		return bodyKindNames[k]
	}
	return "BodyKind(" + strconv.Itoa(int(k)) + ")"
}

// Body is a message's content, decoded (and inflated when it was stored
// compressed).
type Body struct {
	Kind       BodyKind
	Compressed bool
	// StoredSize is the size of the content as stored (compressed when
	// Compressed); -1 when there is none.
	StoredSize int
	Text       string
	// Bytes: a BytesMessage's bytes, an ObjectMessage's serialization
	// stream, unknown content; and, when Err is set, the content as
	// stored (still compressed when Compressed).
	Bytes  []byte
	Map    *Map
	Stream []Value
	// ClassName: the class an ObjectMessage's stream header names
	// ("java.lang.String" for a string, "[I" for an int[], ...);
	// ClassNameErr says why it is "" when the header does not parse.
	ClassName    string
	ClassNameErr error
	// Err: the content does not decode. The headers and properties are
	// still good.
	Err error
}

// decodeBody decodes m.Content according to m.Kind and m.Compressed.
func (d Decoder) decodeBody(m *Message) Body {
	b := Body{Kind: BodyNone, Compressed: m.Compressed, StoredSize: -1}
	if m.Content == nil {
		return b
	}
	b.StoredSize = len(m.Content)
	limit := d.MaxBodySize
	if limit <= 0 {
		limit = DefaultMaxBodySize
	}
	fail := func(err error) Body {
		b.Kind, b.Bytes, b.Err = bodyKindOf(m.Kind), m.Content, err
		b.Text, b.Map, b.Stream, b.ClassName = "", nil, nil, ""
		return b
	}
	content := m.Content
	r := &reader{field: "body", base: m.ContentOffset}
	if m.Compressed {
		var err error
		if m.Kind == KindBytesMessage {
			content, err = inflateBytes(m.Content, m.ContentOffset, limit)
		} else {
			content, err = inflate(m.Content, m.ContentOffset, limit)
		}
		if err != nil {
			return fail(err)
		}
		r = &reader{field: "body", inflated: true, content: m.ContentOffset}
	}
	r.b = content
	switch m.Kind {
	case KindTextMessage:
		n := int(r.i32("text length"))
		if r.err == nil && n == -1 {
			return b // null text
		}
		text := r.take(n, "text")
		if r.err != nil {
			return fail(r.err)
		}
		b.Kind, b.Text = BodyText, d.text(text)
	case KindBytesMessage:
		b.Kind, b.Bytes = BodyBytes, content
	case KindMapMessage:
		r.field = "body map"
		mp := r.primitiveMap(0)
		if r.err != nil {
			return fail(r.err)
		}
		b.Kind, b.Map = BodyMap, mp
		if mp == nil {
			b.Kind = BodyNone
		}
	case KindStreamMessage:
		r.field = "body stream"
		var items []Value
		for r.left() > 0 && r.err == nil {
			items = append(items, r.value(0))
		}
		if r.err != nil {
			return fail(r.err)
		}
		b.Kind, b.Stream = BodyStream, items
	case KindObjectMessage:
		b.Kind, b.Bytes = BodyObject, content
		b.ClassName, b.ClassNameErr = javaClassName(content, r)
	default:
		b.Kind, b.Bytes = BodyUnknown, content
	}
	return b
}

// text is a TextMessage's text (see ShareText).
func (d Decoder) text(b []byte) string {
	if d.ShareText && plainUTF8(b) {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return ModifiedUTF8(b)
}

// bodyKindOf is the body kind a message kind has.
func bodyKindOf(k Kind) BodyKind {
	switch k {
	case KindTextMessage:
		return BodyText
	case KindBytesMessage:
		return BodyBytes
	case KindMapMessage:
		return BodyMap
	case KindStreamMessage:
		return BodyStream
	case KindObjectMessage:
		return BodyObject
	}
	return BodyUnknown
}

// inflate inflates a zlib stream (java.util.zip.DeflaterOutputStream: a
// compressed Text, Map, Object or Stream body) of at most limit bytes.
func inflate(b []byte, off, limit int) ([]byte, error) {
	fail := func(sentinel error, detail string) error {
		return &DecodeError{Field: "body", Offset: off, Err: sentinel, Detail: detail}
	}
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fail(ErrInflate, err.Error())
	}
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, fail(ErrInflate, err.Error())
	}
	if n > int64(limit) {
		return nil, fail(ErrTooLarge, "more than "+strconv.Itoa(limit)+" bytes inflated")
	}
	return out.Bytes(), nil
}

// inflateBytes inflates a compressed BytesMessage body: int32 length of
// the bytes, then a zlib stream of them (ActiveMQBytesMessage.doCompress).
// Like the client, it takes at most that many bytes from the stream.
func inflateBytes(b []byte, off, limit int) ([]byte, error) {
	if len(b) < 4 {
		return nil, &DecodeError{Field: "body", Offset: off, Err: ErrTruncated, Detail: "compressed bytes: no length"}
	}
	n := int64(int32(binary.BigEndian.Uint32(b)))
	switch {
	case n < 0:
		return nil, &DecodeError{Field: "body", Offset: off, Err: ErrMalformed, Detail: "compressed bytes: length " + strconv.FormatInt(n, 10)}
	case n > int64(limit):
		return nil, &DecodeError{Field: "body", Offset: off, Err: ErrTooLarge, Detail: "compressed bytes: length " + strconv.FormatInt(n, 10) + ", more than " + strconv.Itoa(limit)}
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[4:]))
	if err != nil {
		return nil, &DecodeError{Field: "body", Offset: off + 4, Err: ErrInflate, Detail: err.Error()}
	}
	var out bytes.Buffer
	if _, err := io.Copy(&out, io.LimitReader(zr, n)); err != nil {
		return nil, &DecodeError{Field: "body", Offset: off + 4, Err: ErrInflate, Detail: err.Error()}
	}
	return out.Bytes(), nil
}

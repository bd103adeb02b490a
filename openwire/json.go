package openwire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/kahafs/kahafs/internal/jsonw"
)

// JSONOptions shape the JSON of a message.
type JSONOptions struct {
	// BodyLimit is the most bytes of body the JSON shows: of a text (as
	// UTF-8), of bytes and of a serialized object (before base64), of all
	// the strings and byte arrays of a map or stream together; beyond it
	// the JSON says the full size and that it was cut. The properties get
	// the same allowance. 0 means DefaultBodyLimit.
	BodyLimit int
}

// DefaultBodyLimit is JSONOptions.BodyLimit's default.
const DefaultBodyLimit = 4096

// AppendJSON appends the members "headers", "properties" and "body" (and
// "propertiesError" when the properties do not decode) to the object w is
// writing. m may be partial (a decoding error): err is the error Decode
// returned, shown in headers.error when it is a header error.
func (m *Message) AppendJSON(w *jsonw.Writer, err error, opts JSONOptions) {
	limit := opts.BodyLimit
	if limit <= 0 {
		limit = DefaultBodyLimit
	}
	m.appendHeaders(w, err)
	w.Open("properties")
	budget := &budget{left: limit}
	if m.Properties != nil {
		appendTypedMembers(w, m.Properties, budget)
	}
	w.Close()
	if m.PropertiesErr != nil {
		w.Str("propertiesError", m.PropertiesErr.Error())
	}
	if m.Complete || m.Body.Err != nil {
		w.Open("body")
		m.appendBody(w, limit)
		w.Close()
	}
}

// timeMillis writes a time member as RFC 3339 (UTC, milliseconds; null for
// 0) and, as KEYMillis, the milliseconds since 1970 themselves.
func timeMillis(w *jsonw.Writer, key, millisKey string, ms int64) {
	if ms == 0 {
		w.Null(key)
	} else {
		var buf [40]byte
		w.Bytes(key, AppendMillis(buf[:0], ms))
	}
	w.Int(millisKey, ms)
}

// AppendMillis appends milliseconds since 1970 as RFC 3339 in UTC with
// milliseconds: 2026-11-29T22:13:36.985Z.
func AppendMillis(dst []byte, ms int64) []byte {
	const msPerDay = 24 * 60 * 60 * 1000
	days, inDay := ms/msPerDay, ms%msPerDay
	if inDay < 0 {
		days, inDay = days-1, inDay+msPerDay
	}
	y, m, d := civil(days)
	if y < 0 || y > 9999 {
		return time.UnixMilli(ms).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
	}
	// by hand, as AppendFormat spells it (every message's JSON has two:
	// a fifth of rendering it went to AppendFormat)
	two := func(dst []byte, v int64) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }
	dst = two(dst, y/100)
	dst = two(dst, y%100)
	dst = two(append(dst, '-'), m)
	dst = two(append(dst, '-'), d)
	dst = two(append(dst, 'T'), inDay/3600000)
	dst = two(append(dst, ':'), inDay/60000%60)
	dst = two(append(dst, ':'), inDay/1000%60)
	ms3 := inDay % 1000
	return append(dst, '.', byte('0'+ms3/100), byte('0'+ms3/10%10), byte('0'+ms3%10), 'Z')
}

// civil returns the proleptic Gregorian date of the day days after
// 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
func civil(days int64) (year, month, day int64) {
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365]
	mp := (5*doy + 2) / 153                                // [0, 11], from March
	day = doy - (153*mp+2)/5 + 1
	month = mp + 3
	if mp >= 10 {
		month = mp - 9
	}
	year = yoe + era*400
	if month <= 2 {
		year++
	}
	return year, month, day
}

// putID writes the member key when the id appended to its scratch space
// is there.
func putID(w *jsonw.Writer, key string, b []byte) {
	if len(b) > 0 {
		w.Bytes(key, b)
	}
}

func (m *Message) appendHeaders(w *jsonw.Writer, err error) {
	var buf [256]byte // ids are appended here, then copied
	w.Open("headers")
	w.Str("kind", m.Kind.String())
	putID(w, "JMSMessageID", m.MessageID.AppendTo(buf[:0]))
	putID(w, "JMSDestination", m.Destination.AppendTo(buf[:0]))
	if m.jmsHeaders {
		timeMillis(w, "JMSTimestamp", "JMSTimestampMillis", m.Timestamp)
		timeMillis(w, "JMSExpiration", "JMSExpirationMillis", m.Expiration)
		w.Int("JMSPriority", int64(m.Priority))
		if m.Persistent {
			w.Str("JMSDeliveryMode", "PERSISTENT")
		} else {
			w.Str("JMSDeliveryMode", "NON_PERSISTENT")
		}
		if m.CorrelationID != "" {
			w.Str("JMSCorrelationID", m.CorrelationID)
		}
		if m.Type != "" {
			w.Str("JMSType", m.Type)
		}
		putID(w, "JMSReplyTo", m.ReplyTo.AppendTo(buf[:0]))
		if m.GroupID != "" {
			w.Str("JMSXGroupID", m.GroupID)
			w.Int("JMSXGroupSeq", int64(m.GroupSequence))
		}
	}
	if m.Complete {
		w.Bool("JMSRedelivered", m.Redelivered())
		w.Int("redeliveryCounter", int64(m.RedeliveryCounter))
		if m.UserID != "" {
			w.Str("JMSXUserID", m.UserID)
		}
	}
	putID(w, "originalDestination", m.OriginalDestination.AppendTo(buf[:0]))
	putID(w, "originalTransactionId", m.OriginalTransactionID.AppendTo(buf[:0]))
	putID(w, "producerId", m.ProducerID.AppendTo(buf[:0]))
	putID(w, "transactionId", m.TransactionID.AppendTo(buf[:0]))
	if m.Complete {
		w.Bool("compressed", m.Compressed)
		timeMillis(w, "brokerInTime", "brokerInTimeMillis", m.BrokerInTime)
		timeMillis(w, "brokerOutTime", "brokerOutTimeMillis", m.BrokerOutTime)
		if m.Arrival != 0 {
			timeMillis(w, "arrival", "arrivalMillis", m.Arrival)
		}
		putID(w, "targetConsumerId", m.TargetConsumerID.AppendTo(buf[:0]))
		appendStrings(w, "brokerPath", m.BrokerPath)
		appendStrings(w, "cluster", m.Cluster)
		if m.Droppable {
			w.Bool("droppable", true)
		}
		if m.JMSXGroupFirstForConsumer {
			w.Bool("JMSXGroupFirstForConsumer", true)
		}
		if b := m.Blob; b != nil {
			w.Open("blob")
			w.Str("remoteBlobUrl", b.RemoteBlobURL)
			w.Str("mimeType", b.MimeType)
			w.Bool("deletedByBroker", b.DeletedByBroker)
			w.Close()
		}
	}
	if m.DataStructure != 0 {
		w.Int("dataStructure", int64(m.DataStructure))
	}
	if err := m.HeaderError(err); err != nil {
		w.Str("error", err.Error())
	}
	w.Close()
}

func appendStrings(w *jsonw.Writer, key string, ss []string) {
	if len(ss) == 0 {
		return
	}
	w.OpenArray(key)
	for _, s := range ss {
		w.StrValue(s)
	}
	w.CloseArray()
}

func (m *Message) appendBody(w *jsonw.Writer, limit int) {
	b := &m.Body
	w.Str("type", b.Kind.String())
	w.Bool("compressed", b.Compressed)
	w.Int("storedSize", int64(b.StoredSize))
	if b.Err != nil {
		w.Str("error", b.Err.Error())
		w.Int("size", int64(len(b.Bytes)))
		appendCutBytes(w, "base64", b.Bytes, limit)
		return
	}
	switch b.Kind {
	case BodyNone:
		w.Int("size", 0)
	case BodyText:
		w.Int("size", int64(len(b.Text)))
		cut := cutUTF8(b.Text, limit)
		w.Str("text", cut)
		w.Bool("truncated", len(cut) < len(b.Text))
	case BodyBytes, BodyUnknown:
		w.Int("size", int64(len(b.Bytes)))
		appendCutBytes(w, "base64", b.Bytes, limit)
	case BodyObject:
		if b.ClassNameErr != nil {
			w.Null("className")
			w.Str("classNameError", b.ClassNameErr.Error())
		} else {
			w.Str("className", b.ClassName)
		}
		w.Int("size", int64(len(b.Bytes)))
		appendCutBytes(w, "base64", b.Bytes, limit)
	case BodyMap:
		w.Int("size", int64(len(m.AppendRawBody(nil))))
		w.Int("entries", int64(b.Map.Len()))
		w.Open("map")
		bg := &budget{left: limit}
		appendTypedMembers(w, b.Map, bg)
		w.Close()
		w.Bool("truncated", bg.cut)
	case BodyStream:
		w.Int("size", int64(len(m.AppendRawBody(nil))))
		w.Int("entries", int64(len(b.Stream)))
		w.OpenArray("stream")
		bg := &budget{left: limit}
		appendTypedElements(w, b.Stream, bg)
		w.CloseArray()
		w.Bool("truncated", bg.cut)
	}
}

func appendCutBytes(w *jsonw.Writer, key string, b []byte, limit int) {
	cut := b[:min(len(b), limit)]
	w.Key(key)
	w.RawValue(appendBase64(nil, cut))
	w.Bool("truncated", len(cut) < len(b))
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// cutUTF8 cuts s to at most n bytes, at a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// budget is what is left of the bytes a JSON may show of the strings and
// byte arrays of a map, a list or a stream; cut records that something
// was left out.
type budget struct {
	left int
	cut  bool
}

// take accounts for an entry (names and small values cost a byte, so that
// the number of entries is bounded too) and reports whether it fits.
func (b *budget) take() bool {
	if b.left <= 0 {
		b.cut = true
		return false
	}
	b.left--
	return true
}

// appendTypedMembers writes the entries of mp as members NAME: TYPED.
func appendTypedMembers(w *jsonw.Writer, mp *Map, b *budget) {
	for _, e := range mp.Entries {
		if !b.take() {
			return
		}
		w.Key(e.Name)
		appendTyped(w, e.Value, b)
	}
}

func appendTypedElements(w *jsonw.Writer, vs []Value, b *budget) {
	for _, v := range vs {
		if !b.take() {
			return
		}
		appendTyped(w, v, b)
	}
}

// appendTyped writes {"type":T,"value":V}; a string or byte array cut to
// the budget also has "size" (its full size in bytes) and "truncated", a
// map or list cut short "entries" and "truncated".
func appendTyped(w *jsonw.Writer, v Value, b *budget) {
	w.OpenValue()
	w.Str("type", v.Type.String())
	switch v.Type {
	case TypeNull:
		w.Null("value")
	case TypeBoolean:
		w.Bool("value", v.Bool())
	case TypeByte, TypeShort, TypeInt, TypeLong:
		w.Int("value", v.Int)
	case TypeChar:
		u := uint16(v.Int)
		w.Str("value", string(utf16.Decode([]uint16{u})))
		if utf16.IsSurrogate(rune(u)) {
			w.Int("code", int64(u))
		}
	case TypeFloat:
		w.Key("value")
		w.FloatValue(v.Float, 32)
	case TypeDouble:
		w.Key("value")
		w.FloatValue(v.Float, 64)
	case TypeString:
		cut := cutUTF8(v.Str, max(b.left, 0))
		b.left -= len(cut)
		w.Str("value", cut)
		if len(cut) < len(v.Str) {
			b.cut = true
			w.Int("size", int64(len(v.Str)))
			w.Bool("truncated", true)
		}
	case TypeBytes:
		cut := v.Bytes[:min(len(v.Bytes), max(b.left, 0))]
		b.left -= len(cut)
		w.Key("value")
		w.RawValue(appendBase64(nil, cut))
		if len(cut) < len(v.Bytes) {
			b.cut = true
			w.Int("size", int64(len(v.Bytes)))
			w.Bool("truncated", true)
		}
	case TypeMap:
		if v.Map == nil {
			w.Null("value")
			break
		}
		w.Open("value")
		before := b.cut
		b.cut = false
		appendTypedMembers(w, v.Map, b)
		w.Close()
		if b.cut {
			w.Int("entries", int64(v.Map.Len()))
			w.Bool("truncated", true)
		}
		b.cut = b.cut || before
	case TypeList:
		w.OpenArray("value")
		before := b.cut
		b.cut = false
		appendTypedElements(w, v.List, b)
		w.CloseArray()
		if b.cut {
			w.Int("entries", int64(len(v.List)))
			w.Bool("truncated", true)
		}
		b.cut = b.cut || before
	}
	w.Close()
}

// AppendRawBody appends the body itself, what the tree's .body file holds:
// a text as UTF-8, bytes and a serialized object (or content of unknown
// encoding) as they are, a map as a JSON object and a stream as a JSON
// array (indented, plain values: numbers, strings, booleans, null, byte
// arrays in base64, chars as one-character strings, NaN and infinities as
// strings), nothing when there is no body. A body that does not decode
// gives its content as stored.
func (m *Message) AppendRawBody(dst []byte) []byte {
	b := &m.Body
	if b.Err != nil {
		return append(dst, b.Bytes...)
	}
	switch b.Kind {
	case BodyText:
		return append(dst, b.Text...)
	case BodyBytes, BodyObject, BodyUnknown:
		return append(dst, b.Bytes...)
	case BodyMap, BodyStream:
		w := jsonw.New(nil)
		if b.Kind == BodyMap {
			appendPlain(&w, Value{Type: TypeMap, Map: b.Map})
		} else {
			appendPlain(&w, Value{Type: TypeList, List: b.Stream})
		}
		var out bytes.Buffer
		out.Grow(len(w.B) * 2)
		if err := json.Indent(&out, w.B, "", "  "); err != nil {
			return append(dst, w.B...) // cannot happen: jsonw writes valid JSON
		}
		dst = append(dst, out.Bytes()...)
		return append(dst, '\n')
	}
	return dst
}

// appendPlain writes v as a plain JSON value (no types).
func appendPlain(w *jsonw.Writer, v Value) {
	switch v.Type {
	case TypeNull:
		w.NullValue()
	case TypeBoolean:
		w.BoolValue(v.Bool())
	case TypeByte, TypeShort, TypeInt, TypeLong:
		w.IntValue(v.Int)
	case TypeChar:
		w.StrValue(string(utf16.Decode([]uint16{uint16(v.Int)})))
	case TypeFloat:
		w.FloatValue(v.Float, 32)
	case TypeDouble:
		w.FloatValue(v.Float, 64)
	case TypeString:
		w.StrValue(v.Str)
	case TypeBytes:
		w.RawValue(appendBase64(nil, v.Bytes))
	case TypeMap:
		if v.Map == nil {
			w.NullValue()
			return
		}
		w.OpenValue()
		for _, e := range v.Map.Entries {
			w.Key(e.Name)
			appendPlain(w, e.Value)
		}
		w.Close()
	case TypeList:
		w.OpenArrayValue()
		for _, e := range v.List {
			appendPlain(w, e)
		}
		w.CloseArray()
	}
}

package openwire

import "strconv"

// Kind is the type of a message: which JMS interface it implements, and
// so how its body is encoded.
type Kind byte

// Message kinds: their OpenWire data structure types. Part of the wire
// format.
const (
	KindMessage       Kind = TypeMessage
	KindBytesMessage  Kind = TypeBytesMessage
	KindMapMessage    Kind = TypeMapMessage
	KindObjectMessage Kind = TypeObjectMessage
	KindStreamMessage Kind = TypeStreamMessage
	KindTextMessage   Kind = TypeTextMessage
	KindBlobMessage   Kind = TypeBlobMessage
)

var kindNames = [...]string{
	KindMessage - KindMessage:       "Message",
	KindBytesMessage - KindMessage:  "BytesMessage",
	KindMapMessage - KindMessage:    "MapMessage",
	KindObjectMessage - KindMessage: "ObjectMessage",
	KindStreamMessage - KindMessage: "StreamMessage",
	KindTextMessage - KindMessage:   "TextMessage",
	KindBlobMessage - KindMessage:   "BlobMessage",
}

func (k Kind) valid() bool { return k >= KindMessage && k <= KindBlobMessage }

// String is the JMS-style name: TextMessage, BytesMessage, ...
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k-KindMessage]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// OpenWire versions whose message layout the decoder knows. The store
// marshals with its own version (KahaDB's storeOpenWireVersion: 11 in
// 5.17; an index written before the field existed means 6). Versions 3 to
// 9 lay a message out alike, and so do 10 to 12, which add
// MessageId.textView and jmsXGroupFirstForConsumer; 1 and 2 lack fields
// at the end (testdata/openwire: blobs of ActiveMQ's own marshallers).
const (
	DefaultVersion = 11
	MinVersion     = 3
	MaxVersion     = 12
)

// Message is an OpenWire message (ActiveMQMessage and its subtypes) as
// the journal holds it: KahaAddMessageCommand.message, loose encoding, no
// marshal cache, size prefix. Strings that are absent are "", ids and
// destinations that are absent are nil.
type Message struct {
	Kind    Kind
	Version int // the OpenWire version it was decoded with

	CommandID        int32
	ResponseRequired bool

	ProducerID            *ProducerID
	Destination           *Destination
	TransactionID         *TransactionID
	OriginalDestination   *Destination // where a dead-lettered message was sent
	MessageID             *MessageID
	OriginalTransactionID *TransactionID
	GroupID               string // JMSXGroupID
	GroupSequence         int32  // JMSXGroupSeq
	CorrelationID         string
	Persistent            bool
	Expiration            int64 // ms since 1970; 0: never
	Priority              int8
	ReplyTo               *Destination
	Timestamp             int64  // ms since 1970; 0: not set
	Type                  string // JMSType

	// Content is the body as stored (compressed when Compressed), aliasing
	// the blob; ContentOffset is its offset there (-1: no content).
	Content       []byte
	ContentOffset int
	// MarshalledProperties are the properties as stored; Properties holds
	// them decoded (nil when there are none or PropertiesErr says why not).
	MarshalledProperties []byte
	Properties           *Map
	PropertiesErr        error

	// DataStructure is the type of an embedded data structure (advisory
	// messages), 0 when none. Its content and every field after it are
	// not decoded: Complete is false.
	DataStructure byte

	TargetConsumerID          *ConsumerID
	Compressed                bool
	RedeliveryCounter         int32
	BrokerPath                []string
	Arrival                   int64
	UserID                    string // JMSXUserID
	ReceivedByDFBridge        bool
	Droppable                 bool
	Cluster                   []string
	BrokerInTime              int64
	BrokerOutTime             int64
	JMSXGroupFirstForConsumer bool // OpenWire 10 and later

	// Blob: a BlobMessage's own fields.
	Blob *BlobInfo

	// Body is the decoded content.
	Body Body

	// Complete: every field of the layout was read.
	Complete bool
	// jmsHeaders: the fields up to Type were read.
	jmsHeaders bool
}

// BlobInfo are the fields a BlobMessage adds.
type BlobInfo struct {
	RemoteBlobURL   string
	MimeType        string
	DeletedByBroker bool
}

// HeaderError is err, an error Decode returned with m, unless it is only
// the properties' or the body's (m.PropertiesErr, m.Body.Err), which leave
// the headers whole: then nil.
func (m *Message) HeaderError(err error) error {
	if m != nil && err != nil && (err == m.PropertiesErr || err == m.Body.Err) {
		return nil
	}
	return err
}

// Redelivered is JMSRedelivered: the broker has delivered the message
// before (ActiveMQ: redeliveryCounter > 0).
func (m *Message) Redelivered() bool { return m.RedeliveryCounter > 0 }

// Decoder decodes message blobs of one store.
type Decoder struct {
	// Version is the store's OpenWire version; 0 means DefaultVersion.
	Version int
	// MaxBodySize bounds a body once inflated (a compressed body may
	// claim or inflate to anything); 0 means DefaultMaxBodySize.
	MaxBodySize int
	// ShareText lets a TextMessage's Body.Text share the memory of the
	// blob (or of the inflated body) instead of a copy, when its
	// modified UTF-8 is plain UTF-8: for a caller done with the message
	// before the blob's bytes change (a renderer that reuses its record
	// buffer; the text is most of what decoding would allocate).
	ShareText bool
}

// DefaultMaxBodySize is Decoder.MaxBodySize's default.
const DefaultMaxBodySize = 64 << 20

// DecodeMessage decodes a message blob of a store of the default OpenWire
// version (11). See Decoder.Decode.
func DecodeMessage(b []byte) (*Message, error) { return Decoder{}.Decode(b) }

// Decode decodes a message blob (KahaAddMessageCommand.message): headers,
// properties and body. The error is the first thing that failed, a
// *DecodeError naming the field and the offset. The message is nil only
// when b is not a message at all (size prefix or type wrong); otherwise it
// holds what was decoded: a header error stops the decoding there, while
// properties and body that do not decode are reported in PropertiesErr and
// Body.Err and leave the rest intact. Nothing is allocated beyond what b
// holds, except for inflating a compressed body (at most MaxBodySize).
func (d Decoder) Decode(b []byte) (*Message, error) {
	version := d.Version
	if version == 0 {
		version = DefaultVersion
	}
	r := &reader{b: b, field: "size prefix"}
	size := r.i32("size prefix")
	if r.err == nil && int64(size) != int64(len(b))-4 {
		r.failAt(0, ErrMalformed, "size prefix "+strconv.Itoa(int(size))+" for "+strconv.Itoa(len(b)-4)+" bytes")
	}
	r.field = "type"
	k := Kind(r.u8("type"))
	if r.err != nil {
		return nil, r.err
	}
	if !k.valid() {
		return nil, &DecodeError{Field: "type", Offset: 4, Err: ErrNotMessage, Detail: "data structure type " + strconv.Itoa(int(k))}
	}
	m := &Message{Kind: k, Version: version, ContentOffset: -1}
	if err := d.decode(r, m); err != nil {
		return m, err
	}
	return m, firstErr(m.PropertiesErr, m.Body.Err)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// decode reads the fields after the type byte (MessageMarshaller.
// looseUnmarshal) and then properties and body. It returns a header error.
func (d Decoder) decode(r *reader, m *Message) error {
	f := func(name string) string { r.field = name; return name }
	m.CommandID = r.i32(f("commandId"))
	m.ResponseRequired = r.bool(f("responseRequired"))
	m.ProducerID = r.producerID(f("producerId"))
	m.Destination = r.destination(f("destination"))
	m.TransactionID = r.transactionID(f("transactionId"))
	m.OriginalDestination = r.destination(f("originalDestination"))
	if r.err != nil {
		return r.err
	}
	if m.Version < MinVersion || m.Version > MaxVersion {
		return &DecodeError{Field: "messageId", Offset: r.pos, Err: ErrUnsupportedVersion,
			Detail: "version " + strconv.Itoa(m.Version) + " (this decoder reads " + strconv.Itoa(MinVersion) + " to " + strconv.Itoa(MaxVersion) + ")"}
	}
	v10 := m.Version >= 10 // MessageId.textView, jmsXGroupFirstForConsumer
	m.MessageID = r.messageID(f("messageId"), v10)
	m.OriginalTransactionID = r.transactionID(f("originalTransactionId"))
	m.GroupID = r.looseString(f("groupId"))
	m.GroupSequence = r.i32(f("groupSequence"))
	m.CorrelationID = r.looseString(f("correlationId"))
	m.Persistent = r.bool(f("persistent"))
	m.Expiration = r.i64(f("expiration"))
	m.Priority = int8(r.u8(f("priority")))
	m.ReplyTo = r.destination(f("replyTo"))
	m.Timestamp = r.i64(f("timestamp"))
	m.Type = r.looseString(f("type"))
	m.jmsHeaders = r.err == nil
	m.Content, m.ContentOffset = r.byteSeq(f("content"))
	var propsOffset int
	m.MarshalledProperties, propsOffset = r.byteSeq(f("marshalledProperties"))
	if r.err != nil {
		return r.err
	}
	m.Properties, m.PropertiesErr = decodeProperties(m.MarshalledProperties, propsOffset)
	f("dataStructure")
	if r.bool("dataStructure") {
		m.DataStructure = r.u8("dataStructure")
		if r.err != nil {
			return r.err
		}
		m.Body = Body{Kind: BodyUnknown, StoredSize: len(m.Content), Bytes: m.Content,
			Err: &DecodeError{Field: "dataStructure", Offset: r.pos - 1, Err: ErrIncomplete, Detail: "data structure type " + strconv.Itoa(int(m.DataStructure))}}
		if m.Content == nil {
			m.Body.StoredSize = -1
		}
		return nil
	}
	m.TargetConsumerID = r.consumerID(f("targetConsumerId"))
	m.Compressed = r.bool(f("compressed"))
	m.RedeliveryCounter = r.i32(f("redeliveryCounter"))
	m.BrokerPath = r.brokerIDs(f("brokerPath"))
	m.Arrival = r.i64(f("arrival"))
	m.UserID = r.looseString(f("userId"))
	m.ReceivedByDFBridge = r.bool(f("recievedByDFBridge"))
	m.Droppable = r.bool(f("droppable"))
	m.Cluster = r.brokerIDs(f("cluster"))
	m.BrokerInTime = r.i64(f("brokerInTime"))
	m.BrokerOutTime = r.i64(f("brokerOutTime"))
	if v10 {
		m.JMSXGroupFirstForConsumer = r.bool(f("jmsXGroupFirstForConsumer"))
	}
	if m.Kind == KindBlobMessage {
		m.Blob = &BlobInfo{RemoteBlobURL: r.looseString(f("remoteBlobUrl")), MimeType: r.looseString(f("mimeType"))}
		m.Blob.DeletedByBroker = r.bool(f("deletedByBroker"))
	}
	if r.err != nil {
		return r.err
	}
	if r.left() != 0 {
		r.fail(ErrMalformed, strconv.Itoa(r.left())+" bytes after the last field")
		return r.err
	}
	m.Complete = true
	m.Body = d.decodeBody(m)
	return nil
}

package codec

import (
	"strconv"

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
	// Message, when set, is called with the message an ADD or UPDATE
	// holds once it is decoded for the JSON (with OpenWire), so that a
	// caller that renders the message's body too decodes it once
	// (kahafs grep). m is the caller's until the call returns.
	Message func(m *openwire.Message)
	// ShareText decodes a message's text without copying it
	// (openwire.Decoder.ShareText): the caller keeps the record's bytes
	// unchanged until the call returns, and keeps nothing of the
	// message the Message function gets.
	ShareText bool
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
	if c.Dest.HasName || c.Dest.HasType {
		o.Str("destination", c.Dest.String())
	}
	if c.Type.Valid() {
		if fn := commandTypes[c.Type].json; fn != nil {
			fn(&o, c, opts)
		}
	}
	if c.Unknown {
		o.Bool("unknownFields", true)
	}
	return o.End()
}

// AppendCommandText appends the command c decoded from rec as one line
// of text (no newline): location, size, type, destination, what the type
// says beyond them, transaction. Names and ids are as the journal has
// them: a terminal needs them escaped.
func AppendCommandText(b []byte, rec Record, c *Command) []byte {
	b = append(b, rec.Loc.String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(rec.Loc.Size), 10)
	b = append(b, ' ')
	b = append(b, c.Type.String()...)
	if c.Dest.HasName || c.Dest.HasType {
		b = append(b, ' ')
		b = append(b, c.Dest.String()...)
	}
	if c.Type.Valid() {
		if fn := commandTypes[c.Type].text; fn != nil {
			b = fn(b, c)
		}
	}
	if c.Tx.Kind != NoTx {
		b = append(b, " tx="...)
		b = append(b, c.Tx.String()...)
	}
	return b
}

// appendSummary writes the members of "openwire", the header summary the
// JSON had before it showed the message itself (kept for the scripts that
// read it): the fields MessageSummary holds, from the decoded message m
// (nil when the blob is no message at all) and its header error.
func appendSummary(o *jsonw.Writer, m *openwire.Message, err error) {
	err = m.HeaderError(err)
	if m == nil {
		m = &openwire.Message{ContentOffset: -1}
	} else {
		o.Str("kind", m.Kind.String())
	}
	var buf [256]byte
	id := func(key string, b []byte) {
		if len(b) > 0 {
			o.Bytes(key, b)
		}
	}
	id("producerId", m.ProducerID.AppendTo(buf[:0]))
	id("destination", m.Destination.AppendTo(buf[:0]))
	id("transactionId", m.TransactionID.AppendTo(buf[:0]))
	id("originalDestination", m.OriginalDestination.AppendTo(buf[:0]))
	if m.GroupID != "" {
		o.Str("groupId", m.GroupID)
		o.Int("groupSequence", int64(m.GroupSequence))
	}
	if m.CorrelationID != "" {
		o.Str("correlationId", m.CorrelationID)
	}
	o.Bool("persistent", m.Persistent)
	o.Int("expiration", m.Expiration)
	o.Int("priority", int64(m.Priority))
	id("replyTo", m.ReplyTo.AppendTo(buf[:0]))
	o.Int("timestamp", m.Timestamp)
	if m.Type != "" {
		o.Str("jmsType", m.Type)
	}
	bodySize, propsSize := -1, -1
	if m.ContentOffset >= 0 {
		bodySize = len(m.Content)
	}
	if m.MarshalledProperties != nil {
		propsSize = len(m.MarshalledProperties)
	}
	o.Int("bodySize", int64(bodySize))
	o.Int("propertiesSize", int64(propsSize))
	if m.Complete {
		o.Bool("compressed", m.Compressed)
		o.Int("redeliveryCounter", int64(m.RedeliveryCounter))
		if m.UserID != "" {
			o.Str("userId", m.UserID)
		}
		o.Int("brokerInTime", m.BrokerInTime)
		o.Int("brokerOutTime", m.BrokerOutTime)
	}
	if err != nil {
		o.Str("error", err.Error())
	}
}

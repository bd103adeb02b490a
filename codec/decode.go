package codec

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// DecodeRecord decodes the command in rec into c. Errors are
// *CorruptionError values naming file and offset and wrapping ErrDecode or
// ErrUnknownCommand.
func DecodeRecord(file string, rec Record, c *Command) error {
	if err := DecodeCommand(rec.Payload(), c); err != nil {
		return &CorruptionError{File: file, FileID: rec.Loc.File, Offset: int64(rec.Loc.Offset),
			End: int64(rec.Loc.Offset) + int64(rec.Loc.Size), Err: unwrapSentinel(err), Detail: err.Error()}
	}
	return nil
}

type decodeError struct {
	sentinel error
	msg      string
}

func (e *decodeError) Error() string { return e.msg }
func (e *decodeError) Unwrap() error { return e.sentinel }

func unwrapSentinel(err error) error {
	if de, ok := err.(*decodeError); ok {
		return de.sentinel
	}
	return ErrDecode
}

func errDecode(format string, a ...any) error {
	return &decodeError{sentinel: ErrDecode, msg: fmt.Sprintf(format, a...)}
}

// DecodeCommand decodes a user record payload (entry type byte, varint
// length, protobuf message) into c, without allocating. Byte fields of c
// point into payload.
func DecodeCommand(payload []byte, c *Command) error {
	return decodeCommand(payload, c, decodeFields)
}

// decodeCommand is DecodeCommand decoding a command's fields with fields
// (decodeFields; the tests give decodeByTable).
func decodeCommand(payload []byte, c *Command, fields func(EntryType, []byte, *Command) error) error {
	c.reset()
	if len(payload) == 0 {
		return errDecode("empty payload")
	}
	c.Type = EntryType(payload[0])
	if !c.Type.Valid() {
		return &decodeError{sentinel: ErrUnknownCommand, msg: fmt.Sprintf("entry type %d", payload[0])}
	}
	l, n := protowire.ConsumeVarint(payload[1:])
	if n < 0 {
		return errDecode("bad message length varint")
	}
	body := payload[1+n:]
	if l > uint64(len(body)) {
		return errDecode("message length %d exceeds record (%d bytes left)", l, len(body))
	}
	body = body[:l]
	if t := &commandTypes[c.Type]; t.wrapping {
		c.Update = true
		return walk(body, func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
			if num != 1 || typ != protowire.BytesType {
				c.Unknown = true
				return nil
			}
			c.HasInner = true
			return fields(t.wraps, b, c)
		})
	}
	return fields(c.Type, body, c)
}

// walk calls fn for every field of a protobuf message. For varint and
// fixed fields v holds the value, for bytes fields b holds the bytes.
func walk(msg []byte, fn func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error) error {
	for len(msg) > 0 {
		num, typ, v, b, n, err := nextField(msg)
		if err != nil {
			return err
		}
		msg = msg[n:]
		if err := fn(num, typ, v, b); err != nil {
			return err
		}
	}
	return nil
}

// nextField reads the field msg (not empty) starts with: its number, wire
// type, value (varint and fixed fields) or bytes (bytes fields), and the
// bytes it takes. The loops over a message's fields (walk, and the ones
// of the hot commands) are written around it.
func nextField(msg []byte) (num protowire.Number, typ protowire.Type, v uint64, b []byte, size int, err error) {
	// One-byte tags, varints and lengths (nearly all of KahaDB's) are
	// read here; the rest, and every error, by protowire.
	n := 0
	if t := msg[0]; t < 0x80 && t>>3 != 0 {
		num, typ, n = protowire.Number(t>>3), protowire.Type(t&7), 1
	} else if num, typ, n = protowire.ConsumeTag(msg); n < 0 {
		return 0, 0, 0, nil, 0, errDecode("bad field tag: %v", protowire.ParseError(n))
	}
	size = n
	msg = msg[n:]
	switch typ {
	case protowire.VarintType:
		if len(msg) > 0 && msg[0] < 0x80 {
			v, n = uint64(msg[0]), 1
		} else {
			v, n = protowire.ConsumeVarint(msg)
		}
	case protowire.BytesType:
		if len(msg) > 0 && msg[0] < 0x80 && int(msg[0]) < len(msg) {
			l := int(msg[0])
			b, n = msg[1:1+l], 1+l
		} else {
			b, n = protowire.ConsumeBytes(msg)
		}
	case protowire.Fixed32Type:
		var x uint32
		x, n = protowire.ConsumeFixed32(msg)
		v = uint64(x)
	case protowire.Fixed64Type:
		v, n = protowire.ConsumeFixed64(msg)
	default:
		n = protowire.ConsumeFieldValue(num, typ, msg)
	}
	if n < 0 {
		return 0, 0, 0, nil, 0, errDecode("field %d: %v", num, protowire.ParseError(n))
	}
	return num, typ, v, b, size + n, nil
}

// decodeFields decodes the message body of a command of type t into c
// (commandTypes[t].fields).
func decodeFields(t EntryType, body []byte, c *Command) error {
	switch t {
	case AddMessageCommand:
		return decodeAdd(body, c)
	case RemoveMessageCommand:
		return decodeRemove(body, c)
	}
	return decodeByTable(t, body, c)
}

// decodeByTable is decodeFields for any type, driven by commandTypes. ADD
// and REMOVE, nearly every record of a journal, have loops of their own
// that do the same without the table's indirect calls (decodeAdd,
// decodeRemove; the tests hold them to this one).
func decodeByTable(t EntryType, body []byte, c *Command) error {
	ct := &commandTypes[t]
	return walk(body, func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
		f, kind := ct.field(num)
		if f == nil {
			c.Unknown = true
			return nil
		}
		if typ != kind.wire() {
			return errDecode("%s field %d has wire type %d", t, num, typ)
		}
		c.fields |= 1 << num
		switch p := f.at(c); kind {
		case kindBytes:
			*p.(*[]byte) = b
		case kindInt64:
			*p.(*int64) = int64(v)
		case kindInt32:
			*p.(*int32) = int32(v)
		case kindBool:
			*p.(*bool) = v != 0
		case kindTx:
			return decodeTx(b, p.(*TxID))
		case kindDest:
			return decodeDest(b, p.(*Destination))
		}
		return nil
	})
}

func decodeDest(b []byte, d *Destination) error {
	for len(b) > 0 {
		num, typ, v, s, n, err := nextField(b)
		if err != nil {
			return err
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			d.Type, d.HasType = DestType(int32(v)), true
		case num == 2 && typ == protowire.BytesType:
			d.Name, d.HasName = s, true
		default:
			return errDecode("destination field %d wire type %d", num, typ)
		}
	}
	return nil
}

// decodeAdd is decodeByTable(AddMessageCommand, ...) without the table:
// the same fields, presence bits, errors and Unknown.
func decodeAdd(body []byte, c *Command) error {
	for len(body) > 0 {
		num, typ, v, b, n, err := nextField(body)
		if err != nil {
			return err
		}
		body = body[n:]
		want := protowire.BytesType
		if num == FieldAddPriority || num == FieldAddPrioritySupported {
			want = protowire.VarintType
		}
		if num < FieldAddTransaction || num > FieldAddPrioritySupported {
			c.Unknown = true
			continue
		}
		if typ != want {
			return errDecode("%s field %d has wire type %d", AddMessageCommand, num, typ)
		}
		c.fields |= 1 << num
		switch num {
		case FieldAddTransaction:
			if err := decodeTx(b, &c.Tx); err != nil {
				return err
			}
		case FieldAddDestination:
			if err := decodeDest(b, &c.Dest); err != nil {
				return err
			}
		case FieldAddMessageID:
			c.MessageID = b
		case FieldAddMessage:
			c.Message = b
		case FieldAddPriority:
			c.Priority = int32(v)
		case FieldAddPrioritySupported:
			c.PrioritySupported = v != 0
		}
	}
	return nil
}

// decodeRemove is decodeByTable(RemoveMessageCommand, ...) without the
// table.
func decodeRemove(body []byte, c *Command) error {
	for len(body) > 0 {
		num, typ, _, b, n, err := nextField(body)
		if err != nil {
			return err
		}
		body = body[n:]
		if num < FieldRemoveTransaction || num > FieldRemoveSubscriptionKey {
			c.Unknown = true
			continue
		}
		if typ != protowire.BytesType {
			return errDecode("%s field %d has wire type %d", RemoveMessageCommand, num, typ)
		}
		c.fields |= 1 << num
		switch num {
		case FieldRemoveTransaction:
			if err := decodeTx(b, &c.Tx); err != nil {
				return err
			}
		case FieldRemoveDestination:
			if err := decodeDest(b, &c.Dest); err != nil {
				return err
			}
		case FieldRemoveMessageID:
			c.MessageID = b
		case FieldRemoveAck:
			c.Ack = b
		case FieldRemoveSubscriptionKey:
			c.SubscriptionKey = b
		}
	}
	return nil
}

// decodeTx decodes KahaTransactionInfo. KahaLocalTransactionId declares
// connection_id and transaction_id both as field 1; they differ by wire type
// (0x0A string, 0x08 varint).
func decodeTx(b []byte, t *TxID) error {
	return walk(b, func(num protowire.Number, typ protowire.Type, v uint64, s []byte) error {
		if typ != protowire.BytesType {
			return errDecode("transaction info field %d wire type %d", num, typ)
		}
		switch num {
		case 1:
			t.Kind = LocalTx
			return walk(s, func(num protowire.Number, typ protowire.Type, v uint64, s []byte) error {
				switch {
				case num == 1 && typ == protowire.BytesType:
					t.ConnectionID, t.HasConnectionID = s, true
				case num == 1 && typ == protowire.VarintType:
					t.LocalID, t.HasLocalID = int64(v), true
				default:
					return errDecode("local transaction id field %d wire type %d", num, typ)
				}
				return nil
			})
		case 2:
			t.Kind = XATx
			return walk(s, func(num protowire.Number, typ protowire.Type, v uint64, s []byte) error {
				switch {
				case num == 1 && typ == protowire.VarintType:
					t.FormatID = int32(v)
				case num == 2 && typ == protowire.BytesType:
					t.BranchQualifier = s
				case num == 3 && typ == protowire.BytesType:
					t.GlobalID = s
				default:
					return errDecode("XA transaction id field %d wire type %d", num, typ)
				}
				t.xaFields |= 1 << num
				return nil
			})
		case 3:
			t.HasPrev = true
			return walk(s, func(num protowire.Number, typ protowire.Type, v uint64, s []byte) error {
				switch {
				case num == 1 && typ == protowire.VarintType:
					t.PrevFile = int32(v)
				case num == 2 && typ == protowire.VarintType:
					t.PrevOffset = int32(v)
				default:
					return errDecode("location field %d wire type %d", num, typ)
				}
				t.prevFields |= 1 << num
				return nil
			})
		}
		return errDecode("transaction info field %d", num)
	})
}

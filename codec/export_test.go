package codec

import "google.golang.org/protobuf/encoding/protowire"

// WalkedField is one field as walk hands it on, for FuzzWalk.
type WalkedField struct {
	Num      int32
	Type     int8
	V        uint64
	Len, Cap int
	Nil      bool
	First    int // first byte of a byte string, -1 when empty
}

// WalkFields lists the fields walk hands on, and its error.
func WalkFields(msg []byte) ([]WalkedField, error) {
	var out []WalkedField
	err := walk(msg, func(num protowire.Number, typ protowire.Type, v uint64, b []byte) error {
		f := WalkedField{Num: int32(num), Type: int8(typ), V: v, Len: len(b), Cap: cap(b), Nil: b == nil, First: -1}
		if len(b) > 0 {
			f.First = int(b[0])
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// ErrDecodef makes a decoding error as codec does.
var ErrDecodef = errDecode

// DecodeCommandByTable is DecodeCommand with every type's fields decoded
// by the table (decodeByTable), without the ADD and REMOVE fast paths: the
// reference they are held to.
func DecodeCommandByTable(payload []byte, c *Command) error {
	return decodeCommand(payload, c, decodeByTable)
}

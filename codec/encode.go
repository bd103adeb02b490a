package codec

import (
	"google.golang.org/protobuf/encoding/protowire"
)

// AppendCommand appends the user record payload of c (entry type byte,
// varint length, protobuf message) to dst. Fields are written in field
// number order and only when present (Command.Has), as the broker does,
// so a decoded command re-encodes to the same bytes. Unknown fields that the
// decoder skipped are not written.
func AppendCommand(dst []byte, c *Command) []byte {
	dst = append(dst, byte(c.Type))
	start := len(dst)
	if c.Type.Valid() && commandTypes[c.Type].wrapping {
		if c.HasInner {
			dst = protowire.AppendTag(dst, 1, protowire.BytesType)
			in := len(dst)
			dst = appendFields(dst, commandTypes[c.Type].wraps, c)
			dst = insertLen(dst, in)
		}
	} else {
		dst = appendFields(dst, c.Type, c)
	}
	return insertLen(dst, start)
}

// insertLen turns dst[start:] into a length-delimited value: the varint
// length is inserted at start.
func insertLen(dst []byte, start int) []byte {
	n := len(dst) - start
	k := protowire.SizeVarint(uint64(n))
	for i := 0; i < k; i++ {
		dst = append(dst, 0)
	}
	copy(dst[start+k:], dst[start:start+n])
	protowire.AppendVarint(dst[start:start], uint64(n))
	return dst
}

func appendBytes(dst []byte, num protowire.Number, b []byte) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, b)
}

func appendVarint(dst []byte, num protowire.Number, v uint64) []byte {
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

func appendBool(dst []byte, num protowire.Number, b bool) []byte {
	return appendVarint(dst, num, protowire.EncodeBool(b))
}

func i32(v int32) uint64 { return uint64(int64(v)) }

// appendFields appends the fields of c present (Command.Has) as the
// message of a command of type t (commandTypes[t].fields).
func appendFields(dst []byte, t EntryType, c *Command) []byte {
	if !t.Valid() {
		return dst
	}
	ct := &commandTypes[t]
	for i, f := range ct.fields {
		if !c.Has(int(f.num)) {
			continue
		}
		switch p := f.at(c); ct.kinds[i] {
		case kindBytes:
			dst = appendBytes(dst, f.num, *p.(*[]byte))
		case kindInt64:
			dst = appendVarint(dst, f.num, uint64(*p.(*int64)))
		case kindInt32:
			dst = appendVarint(dst, f.num, i32(*p.(*int32)))
		case kindBool:
			dst = appendBool(dst, f.num, *p.(*bool))
		case kindTx:
			dst = appendTx(dst, f.num, p.(*TxID))
		case kindDest:
			dst = appendDest(dst, f.num, p.(*Destination))
		}
	}
	return dst
}

func appendDest(dst []byte, num protowire.Number, d *Destination) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	start := len(dst)
	if d.HasType {
		dst = appendVarint(dst, 1, i32(int32(d.Type)))
	}
	if d.HasName {
		dst = appendBytes(dst, 2, d.Name)
	}
	return insertLen(dst, start)
}

func appendTx(dst []byte, num protowire.Number, t *TxID) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	start := len(dst)
	switch t.Kind {
	case LocalTx:
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		in := len(dst)
		if t.HasConnectionID {
			dst = appendBytes(dst, 1, t.ConnectionID)
		}
		if t.HasLocalID {
			dst = appendVarint(dst, 1, uint64(t.LocalID))
		}
		dst = insertLen(dst, in)
	case XATx:
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		in := len(dst)
		if t.xaFields&(1<<fieldXAFormatID) != 0 {
			dst = appendVarint(dst, 1, i32(t.FormatID))
		}
		if t.xaFields&(1<<fieldXABranchQualifier) != 0 {
			dst = appendBytes(dst, 2, t.BranchQualifier)
		}
		if t.xaFields&(1<<fieldXAGlobalID) != 0 {
			dst = appendBytes(dst, 3, t.GlobalID)
		}
		dst = insertLen(dst, in)
	}
	if t.HasPrev {
		dst = protowire.AppendTag(dst, 3, protowire.BytesType)
		in := len(dst)
		if t.prevFields&(1<<fieldPrevFile) != 0 {
			dst = appendVarint(dst, 1, i32(t.PrevFile))
		}
		if t.prevFields&(1<<fieldPrevOffset) != 0 {
			dst = appendVarint(dst, 2, i32(t.PrevOffset))
		}
		dst = insertLen(dst, in)
	}
	return insertLen(dst, start)
}

// NewLocalTx builds a local transaction id as the broker writes it.
func NewLocalTx(connectionID []byte, id int64) TxID {
	return TxID{Kind: LocalTx, ConnectionID: connectionID, LocalID: id, HasConnectionID: true, HasLocalID: true}
}

// NewXATx builds an XA transaction id as the broker writes it.
func NewXATx(formatID int32, globalID, branch []byte) TxID {
	return TxID{Kind: XATx, FormatID: formatID, GlobalID: globalID, BranchQualifier: branch, xaFields: 1<<fieldXAFormatID | 1<<fieldXABranchQualifier | 1<<fieldXAGlobalID}
}

// NewDestination builds a destination as the broker writes it.
func NewDestination(t DestType, name []byte) Destination {
	return Destination{Type: t, Name: name, HasType: true, HasName: true}
}

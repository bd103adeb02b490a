package javaser

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/kahafs/kahafs/openwire"
)

// ErrMalformed: a Java object-serialization stream that this reader does
// not understand or that is malformed.
var ErrMalformed = errors.New("java serialization: malformed or unsupported stream")

// ParseAckMap decodes the blob of a KahaAckMessageFileMapCommand: a Java
// serialized java.util.HashMap<Integer, HashSet<Integer>> mapping an ack
// file id to the ids of the files holding the messages it acks. Value sets
// come back sorted, each element once. A null set reads as an empty one.
func ParseAckMap(b []byte) (map[int32][]int32, error) {
	v, err := parseJavaObject(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(*javaMap)
	if !ok {
		return nil, fmt.Errorf("%w: top-level object is %T, not a HashMap", ErrMalformed, v)
	}
	out := make(map[int32][]int32, len(m.keys))
	for i, k := range m.keys {
		ki, ok := k.(int32)
		if !ok {
			return nil, fmt.Errorf("%w: map key %d is %T, not an Integer", ErrMalformed, i, k)
		}
		refs := []int32{}
		switch s := m.values[i].(type) {
		case nil:
		case *javaSet:
			for _, e := range s.elems {
				ei, ok := e.(int32)
				if !ok {
					return nil, fmt.Errorf("%w: set element is %T, not an Integer", ErrMalformed, e)
				}
				refs = append(refs, ei)
			}
		default:
			return nil, fmt.Errorf("%w: map value is %T, not a HashSet", ErrMalformed, s)
		}
		// A HashSet holds an element once (a stream naming one twice
		// reads as one, as HashSet.readObject adds it again).
		slices.Sort(refs)
		out[ki] = slices.Compact(refs)
	}
	return out, nil
}

// Java object serialization stream constants (java.io.ObjectStreamConstants).
const (
	jsMagic          = 0xACED
	jsVersion        = 5
	tcNull           = 0x70
	tcReference      = 0x71
	tcClassDesc      = 0x72
	tcObject         = 0x73
	tcString         = 0x74
	tcArray          = 0x75
	tcClass          = 0x76
	tcBlockData      = 0x77
	tcEndBlockData   = 0x78
	tcReset          = 0x79
	tcBlockDataLong  = 0x7A
	tcLongString     = 0x7C
	tcProxyClassDesc = 0x7D
	tcEnum           = 0x7E
	jsBaseHandle     = 0x7E0000
	scWriteMethod    = 0x01
	scSerializable   = 0x02
	scExternalizable = 0x04
	scBlockData      = 0x08
	jsMaxDepth       = 32
	jsMaxElems       = 1 << 24
)

type javaField struct {
	typ  byte
	name string
}

type javaClass struct {
	name   string
	flags  byte
	fields []javaField
	super  *javaClass
}

// javaObject is an object of a class this reader has no model for.
type javaObject struct {
	class  string
	fields map[string]any
}

type javaMap struct{ keys, values []any }

type javaSet struct{ elems []any }

type jsReader struct {
	b       []byte
	off     int
	handles []any
	depth   int
}

func parseJavaObject(b []byte) (any, error) {
	r := &jsReader{b: b}
	if len(b) < 4 || binary.BigEndian.Uint16(b) != jsMagic || binary.BigEndian.Uint16(b[2:]) != jsVersion {
		return nil, fmt.Errorf("%w: no stream header", ErrMalformed)
	}
	r.off = 4
	return r.content()
}

func (r *jsReader) errf(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrMalformed, r.off, fmt.Sprintf(format, args...))
}

func (r *jsReader) need(n int) error {
	if n < 0 || len(r.b)-r.off < n {
		return r.errf("need %d bytes, have %d", n, len(r.b)-r.off)
	}
	return nil
}

func (r *jsReader) u8() (byte, error) {
	if err := r.need(1); err != nil {
		return 0, err
	}
	r.off++
	return r.b[r.off-1], nil
}

func (r *jsReader) u16() (uint16, error) {
	if err := r.need(2); err != nil {
		return 0, err
	}
	r.off += 2
	return binary.BigEndian.Uint16(r.b[r.off-2:]), nil
}

func (r *jsReader) u32() (uint32, error) {
	if err := r.need(4); err != nil {
		return 0, err
	}
	r.off += 4
	return binary.BigEndian.Uint32(r.b[r.off-4:]), nil
}

func (r *jsReader) u64() (uint64, error) {
	if err := r.need(8); err != nil {
		return 0, err
	}
	r.off += 8
	return binary.BigEndian.Uint64(r.b[r.off-8:]), nil
}

func (r *jsReader) utf() (string, error) {
	n, err := r.u16()
	if err != nil {
		return "", err
	}
	if err := r.need(int(n)); err != nil {
		return "", err
	}
	s := openwire.ModifiedUTF8(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s, nil
}

func (r *jsReader) newHandle(v any) int {
	r.handles = append(r.handles, v)
	return len(r.handles) - 1
}

func (r *jsReader) handle() (any, error) {
	h, err := r.u32()
	if err != nil {
		return nil, err
	}
	i := int64(h) - jsBaseHandle
	if i < 0 || i >= int64(len(r.handles)) {
		return nil, r.errf("bad handle %#x", h)
	}
	return r.handles[i], nil
}

// content reads one object (TC_OBJECT, TC_STRING, TC_NULL, ...).
func (r *jsReader) content() (any, error) {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > jsMaxDepth {
		return nil, r.errf("nesting too deep")
	}
	tc, err := r.u8()
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		return r.handle()
	case tcString:
		s, err := r.utf()
		if err != nil {
			return nil, err
		}
		r.newHandle(s)
		return s, nil
	case tcLongString:
		n, err := r.u64()
		if err != nil {
			return nil, err
		}
		if n > uint64(len(r.b)) {
			return nil, r.errf("long string of %d bytes", n)
		}
		if err := r.need(int(n)); err != nil {
			return nil, err
		}
		s := openwire.ModifiedUTF8(r.b[r.off : r.off+int(n)])
		r.off += int(n)
		r.newHandle(s)
		return s, nil
	case tcObject:
		return r.object()
	case tcArray:
		return r.array()
	case tcClassDesc, tcProxyClassDesc:
		r.off--
		return r.classDesc()
	case tcReset:
		r.handles = r.handles[:0]
		return r.content()
	}
	return nil, r.errf("unsupported type code %#x", tc)
}

// classDesc reads a class descriptor (TC_CLASSDESC, TC_REFERENCE, TC_NULL).
func (r *jsReader) classDesc() (*javaClass, error) {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > jsMaxDepth {
		return nil, r.errf("nesting too deep")
	}
	tc, err := r.u8()
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		v, err := r.handle()
		if err != nil {
			return nil, err
		}
		c, ok := v.(*javaClass)
		if !ok {
			return nil, r.errf("handle is not a class descriptor")
		}
		return c, nil
	case tcClassDesc:
	default:
		return nil, r.errf("expected a class descriptor, got %#x", tc)
	}
	c := &javaClass{}
	if c.name, err = r.utf(); err != nil {
		return nil, err
	}
	if _, err := r.u64(); err != nil { // serialVersionUID
		return nil, err
	}
	r.newHandle(c)
	if c.flags, err = r.u8(); err != nil {
		return nil, err
	}
	n, err := r.u16()
	if err != nil {
		return nil, err
	}
	for i := 0; i < int(n); i++ {
		var f javaField
		if f.typ, err = r.u8(); err != nil {
			return nil, err
		}
		if f.name, err = r.utf(); err != nil {
			return nil, err
		}
		if f.typ == 'L' || f.typ == '[' {
			if _, err := r.content(); err != nil { // class name string
				return nil, err
			}
		}
		c.fields = append(c.fields, f)
	}
	if _, _, err := r.annotation(); err != nil {
		return nil, err
	}
	if c.super, err = r.classDesc(); err != nil {
		return nil, err
	}
	return c, nil
}

// annotation reads block data and objects up to TC_ENDBLOCKDATA.
func (r *jsReader) annotation() (data []byte, objs []any, err error) {
	for {
		if err := r.need(1); err != nil {
			return nil, nil, err
		}
		switch r.b[r.off] {
		case tcEndBlockData:
			r.off++
			return data, objs, nil
		case tcBlockData:
			r.off++
			n, err := r.u8()
			if err != nil {
				return nil, nil, err
			}
			if err := r.need(int(n)); err != nil {
				return nil, nil, err
			}
			data = append(data, r.b[r.off:r.off+int(n)]...)
			r.off += int(n)
		case tcBlockDataLong:
			r.off++
			n, err := r.u32()
			if err != nil {
				return nil, nil, err
			}
			if err := r.need(int(int32(n))); err != nil {
				return nil, nil, err
			}
			data = append(data, r.b[r.off:r.off+int(n)]...)
			r.off += int(n)
		default:
			o, err := r.content()
			if err != nil {
				return nil, nil, err
			}
			if len(objs) >= jsMaxElems {
				return nil, nil, r.errf("too many objects")
			}
			objs = append(objs, o)
		}
	}
}

func (r *jsReader) fieldValue(typ byte) (any, error) {
	switch typ {
	case 'B':
		v, err := r.u8()
		return int8(v), err
	case 'Z':
		v, err := r.u8()
		return v != 0, err
	case 'C', 'S':
		v, err := r.u16()
		return int16(v), err
	case 'I':
		v, err := r.u32()
		return int32(v), err
	case 'F':
		v, err := r.u32()
		return math.Float32frombits(v), err
	case 'J':
		v, err := r.u64()
		return int64(v), err
	case 'D':
		v, err := r.u64()
		return math.Float64frombits(v), err
	case 'L', '[':
		return r.content()
	}
	return nil, r.errf("unknown field type %q", typ)
}

func (r *jsReader) object() (any, error) {
	c, err := r.classDesc()
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, r.errf("object without class")
	}
	h := r.newHandle(nil)
	// class chain, top-most superclass first
	var chain []*javaClass
	for k := c; k != nil; k = k.super {
		chain = append([]*javaClass{k}, chain...)
		if len(chain) > jsMaxDepth {
			return nil, r.errf("class hierarchy too deep")
		}
	}
	fields := map[string]any{}
	var data []byte
	var objs []any
	for _, k := range chain {
		if k.flags&scExternalizable != 0 {
			if k.flags&scBlockData == 0 {
				return nil, r.errf("externalizable %s without block data", k.name)
			}
			d, o, err := r.annotation()
			if err != nil {
				return nil, err
			}
			data, objs = d, o
			continue
		}
		for _, f := range k.fields {
			v, err := r.fieldValue(f.typ)
			if err != nil {
				return nil, err
			}
			fields[f.name] = v
		}
		if k.flags&scWriteMethod != 0 {
			d, o, err := r.annotation()
			if err != nil {
				return nil, err
			}
			if k == c {
				data, objs = d, o
			}
		}
	}
	var v any
	switch c.name {
	case "java.lang.Integer":
		i, ok := fields["value"].(int32)
		if !ok {
			return nil, r.errf("Integer without value")
		}
		v = i
	case "java.util.HashMap", "java.util.LinkedHashMap":
		if len(data) < 8 {
			return nil, r.errf("%s without size", c.name)
		}
		n := int(int32(binary.BigEndian.Uint32(data[4:8])))
		if n < 0 || 2*n != len(objs) {
			return nil, r.errf("%s of size %d with %d objects", c.name, n, len(objs))
		}
		m := &javaMap{}
		for i := 0; i < n; i++ {
			m.keys = append(m.keys, objs[2*i])
			m.values = append(m.values, objs[2*i+1])
		}
		v = m
	case "java.util.HashSet", "java.util.LinkedHashSet":
		if len(data) < 12 {
			return nil, r.errf("%s without size", c.name)
		}
		n := int(int32(binary.BigEndian.Uint32(data[8:12])))
		if n < 0 || n != len(objs) {
			return nil, r.errf("%s of size %d with %d objects", c.name, n, len(objs))
		}
		v = &javaSet{elems: objs}
	default:
		v = &javaObject{class: c.name, fields: fields}
	}
	if err := r.setHandle(h, v); err != nil {
		return nil, err
	}
	return v, nil
}

// setHandle fills handle h once its object is complete. A TC_RESET inside
// the object's content clears the handle table, which leaves h dangling:
// the stream is then malformed.
func (r *jsReader) setHandle(h int, v any) error {
	if h < 0 || h >= len(r.handles) {
		return r.errf("handle table reset inside an object")
	}
	r.handles[h] = v
	return nil
}

func (r *jsReader) array() (any, error) {
	c, err := r.classDesc()
	if err != nil {
		return nil, err
	}
	if c == nil || len(c.name) < 2 || c.name[0] != '[' {
		return nil, r.errf("array without array class")
	}
	h := r.newHandle(nil)
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if int32(n) < 0 || n > uint32(len(r.b)) {
		return nil, r.errf("array of %d elements", int32(n))
	}
	out := make([]any, 0, min(int(n), 1024))
	for i := 0; i < int(n); i++ {
		v, err := r.fieldValue(c.name[1])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := r.setHandle(h, out); err != nil {
		return nil, err
	}
	return out, nil
}

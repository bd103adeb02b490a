package openwire

import "strconv"

// ValueType is the type of a value of a primitive map or list (message
// properties, MapMessage and StreamMessage bodies).
type ValueType byte

// Value types: their type bytes in MarshallingSupport. Part of the wire
// format. A long string (BIG_STRING_TYPE, int32 length) decodes to
// TypeString.
const (
	TypeNull    ValueType = 0
	TypeBoolean ValueType = 1
	TypeByte    ValueType = 2
	TypeChar    ValueType = 3
	TypeShort   ValueType = 4
	TypeInt     ValueType = 5
	TypeLong    ValueType = 6
	TypeDouble  ValueType = 7
	TypeFloat   ValueType = 8
	TypeString  ValueType = 9
	TypeBytes   ValueType = 10
	TypeMap     ValueType = 11
	TypeList    ValueType = 12
	typeBigStr  ValueType = 13
)

var typeNames = [...]string{
	TypeNull: "null", TypeBoolean: "boolean", TypeByte: "byte", TypeChar: "char", TypeShort: "short",
	TypeInt: "int", TypeLong: "long", TypeDouble: "double", TypeFloat: "float", TypeString: "string",
	TypeBytes: "bytes", TypeMap: "map", TypeList: "list",
}

// String is the type's name: null, boolean, byte, char, short, int, long,
// double, float, string, bytes, map, list.
func (t ValueType) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Value is one typed value. Which field holds it depends on Type:
// Int for boolean (0, 1), byte, short, int, long and char (a UTF-16 code
// unit); Float for float (exactly, as float64) and double; Str for string;
// Bytes for bytes (aliasing the blob or the inflated body); Map and List.
type Value struct {
	Type  ValueType
	Int   int64
	Float float64
	Str   string
	Bytes []byte
	Map   *Map
	List  []Value
}

// Bool is the value of a boolean.
func (v Value) Bool() bool { return v.Int != 0 }

// Map is a primitive map, its entries in the order they are encoded (Java
// writes a HashMap's iteration order).
type Map struct {
	Entries []Entry
}

// Entry is a named value.
type Entry struct {
	Name  string
	Value Value
}

// Get returns the value called name (the last one, should a hostile map
// hold the name twice: what Java's HashMap would keep).
func (m *Map) Get(name string) (Value, bool) {
	if m == nil {
		return Value{}, false
	}
	for i := len(m.Entries) - 1; i >= 0; i-- {
		if m.Entries[i].Name == name {
			return m.Entries[i].Value, true
		}
	}
	return Value{}, false
}

// Len is the number of entries.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.Entries)
}

// maxDepth bounds the nesting of maps and lists (Java has no bound but its
// stack; a hostile blob could otherwise nest as deep as it is long).
const maxDepth = 32

// Smallest encodings, to bound counts by the bytes left: a map entry is a
// u16 name length and a type byte; a list element a type byte.
const (
	minEntrySize   = 3
	minElementSize = 1
)

// primitiveMap reads MarshallingSupport.marshalPrimitiveMap: int32 count
// (-1: null), then count times a writeUTF name and a value.
func (r *reader) primitiveMap(depth int) *Map {
	at := r.pos
	n := int(r.i32("map size"))
	if r.err != nil || n < 0 { // negative: a null map, as Java reads it
		return nil
	}
	if n > r.left()/minEntrySize {
		r.failAt(at, ErrTruncated, "map of "+strconv.Itoa(n)+" entries in "+strconv.Itoa(r.left())+" bytes")
		return nil
	}
	m := &Map{Entries: make([]Entry, 0, n)}
	for i := 0; i < n && r.err == nil; i++ {
		name := r.utf("map entry name")
		v := r.value(depth)
		m.Entries = append(m.Entries, Entry{Name: name, Value: v})
	}
	return m
}

// primitiveList reads marshalPrimitiveList: int32 count, count values.
func (r *reader) primitiveList(depth int) []Value {
	at := r.pos
	n := int(r.i32("list size"))
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.failAt(at, ErrMalformed, "list size "+strconv.Itoa(n))
		return nil
	}
	if n > r.left()/minElementSize {
		r.failAt(at, ErrTruncated, "list of "+strconv.Itoa(n)+" elements in "+strconv.Itoa(r.left())+" bytes")
		return nil
	}
	l := make([]Value, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		l = append(l, r.value(depth))
	}
	return l
}

// value reads one marshalPrimitive value: a type byte and its encoding.
func (r *reader) value(depth int) Value {
	at := r.pos
	t := ValueType(r.u8("value type"))
	if r.err != nil {
		return Value{}
	}
	v := Value{Type: t}
	switch t {
	case TypeNull:
	case TypeBoolean:
		if r.bool("boolean") {
			v.Int = 1
		}
	case TypeByte:
		v.Int = int64(int8(r.u8("byte")))
	case TypeChar:
		v.Int = int64(r.u16("char"))
	case TypeShort:
		v.Int = int64(r.i16("short"))
	case TypeInt:
		v.Int = int64(r.i32("int"))
	case TypeLong:
		v.Int = r.i64("long")
	case TypeFloat:
		v.Float = float64(r.f32("float"))
	case TypeDouble:
		v.Float = r.f64("double")
	case TypeString:
		v.Str = r.utf("string")
	case typeBigStr:
		v.Type = TypeString
		v.Str = ModifiedUTF8(r.take(int(r.i32("long string")), "long string"))
	case TypeBytes:
		v.Bytes = r.take(int(r.i32("bytes")), "bytes")
	case TypeMap, TypeList:
		if depth >= maxDepth {
			r.failAt(at, ErrMalformed, "maps and lists nested more than "+strconv.Itoa(maxDepth)+" deep")
			return Value{}
		}
		if t == TypeMap {
			v.Map = r.primitiveMap(depth + 1)
		} else {
			v.List = r.primitiveList(depth + 1)
		}
	default:
		r.failAt(at, ErrMalformed, "unknown value type "+strconv.Itoa(int(t)))
		return Value{}
	}
	if r.err != nil {
		return Value{}
	}
	return v
}

// decodeProperties decodes marshalledProperties (at offset off of the
// blob); nil, nil when there are none.
func decodeProperties(b []byte, off int) (*Map, error) {
	if b == nil {
		return nil, nil
	}
	r := &reader{b: b, base: off, field: "properties"}
	m := r.primitiveMap(0)
	if r.err == nil && r.left() != 0 {
		r.fail(ErrMalformed, strconv.Itoa(r.left())+" bytes after the properties")
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

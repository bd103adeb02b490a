package javaser

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Streams written by java.io.ObjectOutputStream (OpenJDK 17) for
// HashMap<Integer, HashSet<Integer>> values.
var javaAckMaps = []struct {
	name string
	hex  string
	want map[int32][]int32
}{
	{"empty", "aced0005737200116a6176612e7574696c2e486173684d61700507dac1c31660d103000246000a6c6f6164466163746f724900097468726573686f6c6478703f400000000000007708000000100000000078",
		map[int32][]int32{}},
	// small Integers are shared objects: the stream refers back to them
	{"small", "aced0005737200116a6176612e7574696c2e486173684d61700507dac1c31660d103000246000a6c6f6164466163746f724900097468726573686f6c6478703f4000000000000c77080000001000000003737200116a6176612e6c616e672e496e746567657212e2a0a4f781873802000149000576616c7565787200106a6176612e6c616e672e4e756d62657286ac951d0b94e08b020000787000000002737200116a6176612e7574696c2e48617368536574ba44859596b8b7340300007870770c000000103f40000000000000787371007e0002000000087371007e0005770c000000103f400000000000037371007e00020000000171007e00047371007e000200000003787371007e0002000000097371007e0005770c000000103f4000000000000271007e000971007e00077878",
		map[int32][]int32{2: {}, 8: {1, 2, 3}, 9: {1, 8}}},
	// a null value set reads as empty
	{"large", "aced0005737200116a6176612e7574696c2e486173684d61700507dac1c31660d103000246000a6c6f6164466163746f724900097468726573686f6c6478703f4000000000000c77080000001000000002737200116a6176612e6c616e672e496e746567657212e2a0a4f781873802000149000576616c7565787200106a6176612e6c616e672e4e756d62657286ac951d0b94e08b0200007870000003e8737200116a6176612e7574696c2e48617368536574ba44859596b8b7340300007870770c000000103f400000000000037371007e0002000111707371007e0002000003e87371007e00020000012c787371007e0002000000c87078",
		map[int32][]int32{1000: {300, 1000, 70000}, 200: {}}},
}

func ackHex(t testing.TB, s string) []byte {
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func TestParseAckMapJava(t *testing.T) {
	for _, tc := range javaAckMaps {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAckMap(ackHex(t, tc.hex))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseAckMapErrors(t *testing.T) {
	small := ackHex(t, javaAckMaps[1].hex)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad magic", append([]byte{0xAC, 0xEE}, small[2:]...)},
		{"a string", ackHex(t, "aced000574000178")},
		{"truncated", small[:len(small)/2]},
		{"truncated by one", small[:len(small)-1]},
		{"bad handle", append(append([]byte{}, small[:4]...), 0x71, 0, 0x7e, 0x99, 0x99)},
		{"unsupported type code", []byte{0xAC, 0xED, 0, 5, 0x7B}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAckMap(tc.b)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrMalformed), "%v", err)
		})
	}
}

// TestParseAckMapFixture reads the ack map the index of a real broker's
// store names; the broker logged it as {6=[5], 8=[6], 9=[8], 10=[1]} when
// it reloaded it (ackcompact fixture, brokerkit Inspect).
func TestParseAckMapFixture(t *testing.T) {
	dir := "../testdata/stores/ackcompact/store"
	m, err := kahaindex.ReadHead(dir)
	if errors.Is(err, fs.ErrNotExist) {
		need.Skip(t, "ackcompact fixture not available: %v", err)
	}
	require.NoError(t, err, "the fixture's index head")
	require.NotNil(t, m.AckMap)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	fi, ok := st.File(m.AckMap.File)
	require.True(t, ok)
	var got map[int32][]int32
	_, err = codec.ScanFile(fi, codec.ReadOptions{}, func(rec codec.Record, c *codec.Command) error {
		if rec.Loc.Offset == m.AckMap.Offset {
			require.Equal(t, codec.AckMessageFileMapCommand, c.Type)
			got, err = ParseAckMap(c.Blob)
			require.NoError(t, err)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, map[int32][]int32{6: {5}, 8: {6}, 9: {8}, 10: {1}}, got)
}

// FuzzParseAckMap: any bytes parse without panic; an error wraps
// ErrMalformed; a parsed map's sets are sorted, without duplicates (a
// HashSet's). And the input, read as an ack map (fuzzAckMap), written as
// Java writes it (ackMapWriter), parses to that map.
func FuzzParseAckMap(f *testing.F) {
	for _, tc := range javaAckMaps {
		f.Add(ackHex(f, tc.hex))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseAckMap(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
		} else {
			if m == nil {
				t.Fatal("nil map without error")
			}
			for k, set := range m {
				for i := 1; i < len(set); i++ {
					if set[i-1] >= set[i] {
						t.Fatalf("set of %d not sorted or with a duplicate: %v", k, set)
					}
				}
			}
		}
		want := fuzzAckMap(b)
		got, err := ParseAckMap(writeAckMap(want))
		if err != nil {
			t.Fatalf("%v written as Java writes it: %v", want, err)
		}
		for k, set := range want {
			if set == nil {
				want[k] = []int32{} // a null set reads as empty
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("wrote %v, parsed %v", want, got)
		}
	})
}

// fuzzAckMap reads b as an ack map: up to 8 file ids, each with a null or
// a sorted set of up to 8 file ids (small ones often, Java shares them).
func fuzzAckMap(b []byte) map[int32][]int32 {
	next := func() int32 {
		if len(b) < 2 {
			b = nil
			return 0
		}
		v := int32(int16(binary.BigEndian.Uint16(b)))
		if b[0]&0x80 != 0 { // a big one, not a shared Integer
			v *= 977
		}
		b = b[2:]
		return v
	}
	m := map[int32][]int32{}
	for n := int(next() & 7); n > 0; n-- {
		k := next()
		e := int(next() & 15)
		if e > 8 {
			m[k] = nil
			continue
		}
		set := map[int32]bool{}
		for ; e > 0; e-- {
			set[next()] = true
		}
		m[k] = slices.Sorted(maps.Keys(set))
	}
	return m
}

// writeAckMap writes m the way ObjectOutputStream (OpenJDK 17) writes a
// HashMap<Integer, HashSet<Integer>> (keys and elements in ascending
// order, which is HashMap's for small ones; a nil set as null): class
// descriptors written once and referred to after, Integers from -128 to
// 127 shared (Integer.valueOf), set and map sizes in block data.
func writeAckMap(m map[int32][]int32) []byte {
	w := &ackMapWriter{b: []byte{0xAC, 0xED, 0, 5}, descs: map[string]int{}, ints: map[int32]int{}}
	w.u8(tcObject)
	w.desc("java.util.HashMap", 0x0507dac1c31660d1, scWriteMethod|scSerializable, []javaField{{'F', "loadFactor"}, {'I', "threshold"}}, nil)
	w.handle()
	c := capacity(len(m))
	w.u32(math.Float32bits(0.75))
	if len(m) == 0 {
		w.u32(0) // no table yet: a new HashMap's threshold field
	} else {
		w.u32(uint32(c * 3 / 4))
	}
	w.u8(tcBlockData)
	w.u8(8)
	w.u32(uint32(c))
	w.u32(uint32(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w.integer(k)
		set := m[k]
		if set == nil {
			w.u8(tcNull)
			continue
		}
		w.u8(tcObject)
		w.desc("java.util.HashSet", 0xba44859596b8b734, scWriteMethod|scSerializable, nil, nil)
		w.handle()
		w.u8(tcBlockData)
		w.u8(12)
		w.u32(uint32(capacity(len(set))))
		w.u32(math.Float32bits(0.75))
		w.u32(uint32(len(set)))
		for _, e := range set {
			w.integer(e)
		}
		w.u8(tcEndBlockData)
	}
	w.u8(tcEndBlockData)
	return w.b
}

// capacity is HashMap's table size for n entries.
func capacity(n int) int {
	c := 16
	for float64(n) > 0.75*float64(c) {
		c *= 2
	}
	return c
}

type ackMapWriter struct {
	b     []byte
	next  int
	descs map[string]int
	ints  map[int32]int
}

func (w *ackMapWriter) u8(v byte)    { w.b = append(w.b, v) }
func (w *ackMapWriter) u32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *ackMapWriter) utf(s string) {
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(s)))
	w.b = append(w.b, s...)
}
func (w *ackMapWriter) handle() int { w.next++; return w.next - 1 }
func (w *ackMapWriter) ref(h int)   { w.u8(tcReference); w.u32(uint32(jsBaseHandle + h)) }

// desc writes a class descriptor, or a reference to it once written.
func (w *ackMapWriter) desc(name string, suid uint64, flags byte, fields []javaField, super func()) {
	if h, ok := w.descs[name]; ok {
		w.ref(h)
		return
	}
	w.u8(tcClassDesc)
	w.utf(name)
	w.b = binary.BigEndian.AppendUint64(w.b, suid)
	w.descs[name] = w.handle()
	w.u8(flags)
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(fields)))
	for _, f := range fields {
		w.u8(f.typ)
		w.utf(f.name)
	}
	w.u8(tcEndBlockData)
	if super == nil {
		w.u8(tcNull)
	} else {
		super()
	}
}

func (w *ackMapWriter) integer(v int32) {
	if h, ok := w.ints[v]; ok {
		w.ref(h)
		return
	}
	w.u8(tcObject)
	w.desc("java.lang.Integer", 0x12e2a0a4f7818738, scSerializable, []javaField{{'I', "value"}}, func() {
		w.desc("java.lang.Number", 0x86ac951d0b94e08b, scSerializable, nil, nil)
	})
	h := w.handle()
	if v >= -128 && v <= 127 {
		w.ints[v] = h
	}
	w.u32(uint32(v))
}

// TestWriteAckMapIsJavas: the test's writer writes what OpenJDK wrote for
// the maps whose order it shares.
func TestWriteAckMapIsJavas(t *testing.T) {
	for _, tc := range javaAckMaps[:2] {
		assert.Equal(t, tc.hex, hex.EncodeToString(writeAckMap(tc.want)), tc.name)
	}
}

// TestParseAckMapDuplicates: a set holding an element twice (no Java
// HashSet writes it, a damaged stream may) reads as the set Java's
// HashSet.readObject makes of it: once.
func TestParseAckMapDuplicates(t *testing.T) {
	b := writeAckMap(map[int32][]int32{7: {1000, 1000, 3}})
	got, err := ParseAckMap(b)
	require.NoError(t, err)
	assert.Equal(t, map[int32][]int32{7: {3, 1000}}, got)
}

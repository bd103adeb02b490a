package javaser

import (
	"encoding/hex"
	"errors"
	"io/fs"
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

func FuzzParseAckMap(f *testing.F) {
	for _, tc := range javaAckMaps {
		f.Add(ackHex(f, tc.hex))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseAckMap(b)
		if err == nil && m == nil {
			t.Fatal("nil map without error")
		}
	})
}

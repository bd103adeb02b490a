package codec

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestCommandTypes: every entry type has a row with a name of its own
// that ParseEntryType reads back, and a body to decode (fields, or a
// wrapped type that has some).
func TestCommandTypes(t *testing.T) {
	seen := map[string]bool{}
	for i := range commandTypes {
		typ := EntryType(i)
		ct := &commandTypes[i]
		require.True(t, strings.HasPrefix(ct.name, "KAHA_") && strings.HasSuffix(ct.name, "_COMMAND"), "type %d: name %q", i, ct.name)
		assert.False(t, seen[ct.name], "name %s twice", ct.name)
		seen[ct.name] = true
		back, ok := ParseEntryType(typ.String())
		assert.True(t, ok && back == typ, "ParseEntryType(%s)", typ)
		if ct.wrapping {
			assert.Empty(t, ct.fields, "%s wraps %s: its own fields are unused", typ, ct.wraps)
			assert.False(t, commandTypes[ct.wraps].wrapping, "%s wraps a wrapping type", typ)
		} else {
			assert.NotEmpty(t, ct.fields, "%s has no fields", typ)
		}
		assert.Len(t, ct.kinds, len(ct.fields))
	}
	_, ok := ParseEntryType("UNKNOWN_17")
	assert.False(t, ok)
	assert.Equal(t, "UNKNOWN_200", EntryType(200).String())
}

// fullCommand is a command of type typ with every field of its message
// set, to values that differ by field.
func fullCommand(typ EntryType) *Command {
	c := &Command{}
	c.reset()
	c.Type = typ
	ct := &commandTypes[typ]
	if ct.wrapping {
		c.Update, c.HasInner = true, true
		ct = &commandTypes[ct.wraps]
	}
	for _, f := range ct.fields {
		n := int64(f.num)
		switch p := f.at(c).(type) {
		case *[]byte:
			*p = []byte(fmt.Sprintf("%s field %d", typ, n))
		case *int64:
			*p = -n*1e12 - 7
		case *int32:
			*p = int32(-n*1000 - 7)
		case *bool:
			*p = n%2 == 0 // differs from every default in some field
		case *TxID:
			*p = NewXATx(int32(n), []byte{byte(n), 0xAB}, []byte{0xCD})
		case *Destination:
			*p = NewDestination(Topic, []byte(fmt.Sprintf("T.%d", n)))
		default:
			panic(fmt.Sprintf("%s field %d: %T", typ, n, p))
		}
		c.Set(int(f.num))
	}
	return c
}

// TestEveryCommandType: a command of every type with all its fields, and
// one with none, re-encode to the same bytes and decode to the command
// that was written; its JSON is an object naming the type, its text line
// names it too.
func TestEveryCommandType(t *testing.T) {
	for i := range commandTypes {
		typ := EntryType(i)
		t.Run(typ.String(), func(t *testing.T) {
			full := fullCommand(typ)
			empty := &Command{}
			empty.reset()
			empty.Type, empty.Update = typ, full.Update
			for _, c := range []*Command{full, empty} {
				payload := AppendCommand(nil, c)
				var d Command
				require.NoError(t, DecodeCommand(payload, &d))
				assert.Equal(t, *c, d)
				assert.Equal(t, payload, AppendCommand(nil, &d), "re-encoding")

				j := AppendCommandJSON(nil, Record{}, &d, JSONOptions{OpenWire: true})
				var m map[string]any
				require.NoError(t, json.Unmarshal(j, &m), "%s", j)
				assert.Equal(t, typ.String(), m["type"])
				assert.Contains(t, string(AppendCommandText(nil, Record{}, &d)), " "+typ.String())
			}
		})
	}
}

// TestFieldWireTypes: a field of the wrong wire type is a decoding error;
// a field number the type does not have is skipped and noted (Unknown).
func TestFieldWireTypes(t *testing.T) {
	msg := func(typ EntryType, body []byte) []byte {
		return append(protowire.AppendVarint([]byte{byte(typ)}, uint64(len(body))), body...)
	}
	for i := range commandTypes {
		typ := EntryType(i)
		ct := &commandTypes[i]
		if ct.wrapping {
			continue
		}
		for j, f := range ct.fields {
			var body []byte
			if ct.kinds[j].wire() == protowire.BytesType {
				body = protowire.AppendVarint(protowire.AppendTag(nil, f.num, protowire.VarintType), 1)
			} else {
				body = protowire.AppendBytes(protowire.AppendTag(nil, f.num, protowire.BytesType), []byte{1})
			}
			var c Command
			assert.ErrorIs(t, DecodeCommand(msg(typ, body), &c), ErrDecode, "%s field %d", typ, f.num)
		}
		last := ct.fields[len(ct.fields)-1].num
		var c Command
		require.NoError(t, DecodeCommand(msg(typ, protowire.AppendVarint(protowire.AppendTag(nil, last+1, protowire.VarintType), 1)), &c))
		assert.True(t, c.Unknown, "%s field %d", typ, last+1)
		assert.False(t, c.Has(int(last+1)))
	}
}

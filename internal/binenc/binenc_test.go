package binenc

import (
	"errors"
	"math"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	var w Writer
	w.Uvarint(math.MaxUint64)
	w.Varint(math.MinInt64)
	w.Int(-7)
	w.Bool(true)
	w.Byte(9)
	w.String("héllo")
	w.Bytes(nil)
	w.Location(codec.Location{File: 3, Offset: 1 << 30, Size: 7})
	d := &codec.CorruptionError{File: "/s/db-3.log", FileID: 3, Offset: 28, End: 99, Err: codec.ErrChecksum, Detail: "x"}
	require.NoError(t, w.DamageList([]*codec.CorruptionError{d, {File: "other", Err: codec.ErrTornTail}}, "/s/db-3.log"))

	r := NewReader(w.B)
	assert.Equal(t, uint64(math.MaxUint64), r.Uvarint())
	assert.Equal(t, int64(math.MinInt64), r.Varint())
	assert.Equal(t, -7, r.Int())
	assert.True(t, r.Bool())
	assert.Equal(t, byte(9), r.Byte())
	assert.Equal(t, "héllo", r.String())
	assert.Empty(t, r.Bytes())
	assert.Equal(t, codec.Location{File: 3, Offset: 1 << 30, Size: 7}, r.Location())
	ds := r.DamageList("/t/db-3.log")
	require.NoError(t, r.Err())
	assert.Zero(t, r.Len())
	require.Len(t, ds, 2)
	assert.Equal(t, codec.CorruptionError{File: "/t/db-3.log", FileID: 3, Offset: 28, End: 99, Err: codec.ErrChecksum, Detail: "x"}, *ds[0])
	assert.Equal(t, "other", ds[1].File)
	assert.True(t, errors.Is(ds[1], codec.ErrTornTail))
}

func TestBounded(t *testing.T) {
	// a count the input cannot hold fails before anything is allocated
	var w Writer
	w.Uvarint(1 << 40)
	r := NewReader(w.B)
	assert.Zero(t, r.Count(1))
	assert.ErrorIs(t, r.Err(), ErrCorrupt)
	// errors stick
	assert.Zero(t, r.Uvarint())
	assert.Empty(t, r.String())

	r = NewReader([]byte{0x80})
	r.Uvarint()
	assert.Error(t, r.Err())

	w = Writer{}
	w.Varint(1 << 40)
	r = NewReader(w.B)
	assert.Zero(t, r.Int32())
	assert.Error(t, r.Err())

	r = NewReader([]byte{2})
	r.Bool()
	assert.Error(t, r.Err())

	w = Writer{}
	err := w.Damage(&codec.CorruptionError{Err: errors.New("not a sentinel")}, "")
	assert.ErrorIs(t, err, ErrUnencodable)

	r = NewReader([]byte{99})
	assert.Nil(t, r.Damage(""))
	assert.Error(t, r.Err())
}

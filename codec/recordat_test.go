package codec

import (
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordIn: a record is taken at its location only when the bytes
// read hold it as the location says; otherwise the error says how, with
// errors.Is.
func TestRecordIn(t *testing.T) {
	fi := FileInfo{ID: 3, Name: "db-3.log", Path: "/store/db-3.log"}
	// bytes read from offset 100: 20 bytes of something, then a user
	// record of 12 bytes at 120
	buf := make([]byte, 32)
	binary.BigEndian.PutUint32(buf[20:], 12)
	buf[24] = RecordTypeUser
	at := Location{File: 3, Offset: 120, Size: 12}
	b, err := RecordIn(fi, at, buf, 100, nil)
	require.NoError(t, err)
	assert.Equal(t, buf[20:32], b)

	ioErr := errors.New("input/output error")
	for _, tc := range []struct {
		name    string
		loc     Location
		buf     []byte
		readErr error
		want    []error
		changed bool
	}{
		{"other size", Location{File: 3, Offset: 120, Size: 11}, buf, nil, []error{ErrBadSize}, true},
		{"not at a record", Location{File: 3, Offset: 110, Size: 12}, buf, nil, []error{ErrBadSize}, true},
		{"file ends before", at, buf[:30], nil, []error{ErrTruncated}, true},
		{"file ends before (EOF)", at, buf[:30], io.EOF, []error{ErrTruncated}, true},
		{"read failed", at, buf[:30], ioErr, []error{ErrUnreadable}, false},
		{"negative offset", Location{File: 3, Offset: -1, Size: 12}, buf, nil, []error{ErrBadSize}, false},
		{"too small", Location{File: 3, Offset: 120, Size: 5}, buf, nil, []error{ErrBadSize}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RecordIn(fi, tc.loc, tc.buf, 100, tc.readErr)
			for _, w := range tc.want {
				assert.ErrorIs(t, err, w)
			}
			assert.Equal(t, tc.changed, errors.Is(err, ErrChanged), "%v", err)
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, int64(tc.loc.Offset), ce.Offset)
			assert.Equal(t, fi.Path, ce.File)
		})
	}
}

package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ReadRecordAt reads the user record at loc of the data file fi (one
// pread, the file opened without blocking) and decodes it into c, which
// then points into a buffer of its own. The header must say what loc
// says: a user record of loc.Size bytes. It returns loc with its size.
//
// A location without a size (the index keeps none for a durable
// subscription's command) takes the size from the record's header.
func ReadRecordAt(fi FileInfo, loc Location, c *Command) (Location, error) {
	if loc.Size == 0 {
		size, err := recordSizeAt(fi, loc.Offset)
		if err != nil {
			return loc, err
		}
		loc.Size = size
	}
	return loc, readRecordAt(fi, loc, c)
}

func readRecordAt(fi FileInfo, loc Location, c *Command) error {
	if loc.Offset < 0 || loc.Size < RecordHeaderSize+1 || loc.Size > 1<<30 {
		return &CorruptionError{File: fi.Path, FileID: fi.ID, Offset: int64(loc.Offset), Err: ErrBadSize, Detail: fmt.Sprintf("no record can be %d bytes", loc.Size)}
	}
	fd, _, err := openDataFD(fi)
	if err != nil {
		return &CorruptionError{File: fi.Path, FileID: fi.ID, Offset: int64(loc.Offset), Err: ErrUnreadable, Detail: err.Error()}
	}
	defer fd.Close()
	b := make([]byte, loc.Size)
	if _, err := fd.ReadAt(b, int64(loc.Offset)); err != nil {
		return &CorruptionError{File: fi.Path, FileID: fi.ID, Offset: int64(loc.Offset), Err: ErrTruncated, Detail: err.Error()}
	}
	if size := int32(binary.BigEndian.Uint32(b)); size != loc.Size || b[4] != RecordTypeUser {
		return &CorruptionError{File: fi.Path, FileID: fi.ID, Offset: int64(loc.Offset), Err: ErrBadSize,
			Detail: fmt.Sprintf("the header says %d bytes of type %d, the location %d bytes of a user record", size, b[4], loc.Size)}
	}
	return DecodeRecord(fi.Path, Record{Loc: loc, Batch: -1, Data: b}, c)
}

// recordSizeAt reads the size field of the record header at off.
func recordSizeAt(fi FileInfo, off int32) (int32, error) {
	fd, _, err := openDataFD(fi)
	if err != nil {
		return 0, &CorruptionError{File: fi.Path, FileID: fi.ID, Offset: int64(off), Err: ErrUnreadable, Detail: err.Error()}
	}
	defer fd.Close()
	var h [RecordHeaderSize]byte
	if _, err := fd.ReadAt(h[:], int64(off)); err != nil {
		return 0, &CorruptionError{File: fi.Path, FileID: fi.ID, Offset: int64(off), Err: ErrTruncated, Detail: err.Error()}
	}
	return int32(binary.BigEndian.Uint32(h[:])), nil
}

// ErrChanged: a record is not what an earlier reading of its data file
// found at its location: the file was replaced, truncated or rewritten
// since. An error that wraps it also wraps ErrBadSize (the header there
// now says another record) or ErrTruncated (the file now ends before the
// record does).
var ErrChanged = errors.New("data file changed since the store was read")

// changedError is ErrChanged with the sentinel that says how.
type changedError struct{ how error }

func (e changedError) Error() string        { return ErrChanged.Error() + " (" + e.how.Error() + ")" }
func (e changedError) Is(target error) bool { return target == ErrChanged }
func (e changedError) Unwrap() error        { return e.how }

// RecordIn returns the bytes of the user record at loc, a location an
// earlier reading of the data file fi found a record at, out of buf: the
// bytes that reading fi from offset base returned, readErr the read's
// error (nil or io.EOF when it reached the end of the file). It is the one
// way a record is taken at a location; reading the bytes (one pread, a
// read-ahead buffer) is the caller's.
//
// The record must lie within buf and its header say what loc says, a user
// record of loc.Size bytes; anything else is a *CorruptionError wrapping
// ErrChanged (the file changed since), or ErrUnreadable when the read
// failed, or ErrBadSize for a location no record can have.
func RecordIn(fi FileInfo, loc Location, buf []byte, base int64, readErr error) ([]byte, error) {
	fail := func(err error, detail string) error {
		return &CorruptionError{File: fi.Path, FileID: fi.ID, Offset: int64(loc.Offset), End: int64(loc.Offset) + int64(loc.Size), Err: err, Detail: detail}
	}
	if loc.Offset < 0 || loc.Size < RecordHeaderSize+1 || loc.Size > 1<<30 {
		return nil, fail(ErrBadSize, fmt.Sprintf("no record can be %d bytes at offset %d", loc.Size, loc.Offset))
	}
	from := int64(loc.Offset) - base
	to := from + int64(loc.Size)
	if from < 0 || to > int64(len(buf)) {
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return nil, fail(ErrUnreadable, readErr.Error())
		}
		if from < 0 {
			return nil, fmt.Errorf("codec: RecordIn: %v is not in the bytes read from %d", loc, base)
		}
		return nil, fail(changedError{ErrTruncated}, "the file ends before the record does")
	}
	b := buf[from:to]
	if size := int32(binary.BigEndian.Uint32(b)); size != loc.Size || b[4] != RecordTypeUser {
		return nil, fail(changedError{ErrBadSize}, fmt.Sprintf("the record there is now of type %d and %d bytes, not a user record of %d", b[4], size, loc.Size))
	}
	return b, nil
}

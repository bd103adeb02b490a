package codec

import (
	"encoding/binary"
	"fmt"
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

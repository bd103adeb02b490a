package codec

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the reader or decoder returns for bad input
// wraps exactly one of them inside a *CorruptionError.
var (
	// ErrChecksum: a batch's stored Adler-32 does not match its records.
	ErrChecksum = errors.New("batch checksum mismatch")
	// ErrTruncated: a record or batch extends past the end of the file.
	ErrTruncated = errors.New("record extends past end of file")
	// ErrTornTail: the last batch of a file is incomplete or fails its
	// checksum and nothing valid follows it: a write that did not finish.
	// The broker treats this as the end of the data.
	ErrTornTail = errors.New("torn batch at end of data")
	// ErrBadSize: a record header carries a size that cannot be right
	// (negative, smaller than a header, or a batch record not 28 bytes).
	ErrBadSize = errors.New("invalid record size")
	// ErrBadRecordType: a record header carries a type other than 1 or 2.
	ErrBadRecordType = errors.New("unknown record type")
	// ErrBadBatch: a batch control record whose magic or length is wrong.
	ErrBadBatch = errors.New("invalid batch control record")
	// ErrUnknownCommand: a user record whose KahaEntryType is not 0-16.
	ErrUnknownCommand = errors.New("unknown command type")
	// ErrDecode: a user record whose protobuf body does not parse.
	ErrDecode = errors.New("command does not decode")
	// ErrMissingFile: a file referenced or expected is not there.
	ErrMissingFile = errors.New("data file missing")
	// ErrUnreadable: a data file that cannot be opened or read (permissions,
	// not a regular file, I/O error). The rest of the store is still read.
	ErrUnreadable = errors.New("data file cannot be read")
	// ErrNotStore: a directory that holds no KahaDB store.
	ErrNotStore = errors.New("not a KahaDB store")
)

// CorruptionError locates damage in a data file. End is the first offset
// after the damaged range when it is known (0 when not).
type CorruptionError struct {
	File   string // path or name of the data file
	FileID int32
	Offset int64
	End    int64
	Err    error // wraps a sentinel
	Detail string
}

func (e *CorruptionError) Error() string {
	s := fmt.Sprintf("%s: offset %d", e.File, e.Offset)
	if e.End > e.Offset {
		s += fmt.Sprintf("..%d", e.End)
	}
	s += ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// IsTail reports whether err is only a torn end of data, which a broker
// writing at the moment of reading (or one that crashed mid-write) leaves
// behind and which loses no committed record.
func IsTail(err error) bool { return errors.Is(err, ErrTornTail) }

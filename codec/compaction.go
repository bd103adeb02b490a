package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// An ack-compaction file (5.14+) starts with a KAHA_REWRITTEN_DATA_FILE_COMMAND
// naming its source file, followed by copies of every remove (ack) and
// commit record of that source, in the source's order (KAHADB-FORMAT.md
// §6.6). A broker that restarts later may append ordinary records after
// them when the compaction file is the newest one.

// CompactionHead is what the first record of an ack-compaction file says.
type CompactionHead struct {
	File               int32 // the compaction file
	Source             int32 // the file whose acks it carries
	SkipIfSourceExists bool
}

// headBytes is enough for the batch control record and a
// KAHA_REWRITTEN_DATA_FILE_COMMAND record (about 11 bytes).
const headBytes = BatchHeaderSize + RecordHeaderSize + 32

// ReadCompactionHead reads the first record of fi. ok is false when the
// file is not an ack-compaction file (or has no first record); an error
// means the file could not be read.
func ReadCompactionHead(fi FileInfo) (h CompactionHead, ok bool, err error) {
	f, _, err := openDataFD(fi) // never blocks on a FIFO
	if err != nil {
		return h, false, &CorruptionError{File: fi.Path, FileID: fi.ID, Err: ErrUnreadable, Detail: err.Error()}
	}
	defer f.Close()
	b := make([]byte, headBytes)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return h, false, &CorruptionError{File: fi.Path, FileID: fi.ID, Err: ErrUnreadable, Detail: err.Error()}
	}
	b = b[:n]
	if len(b) < BatchHeaderSize+RecordHeaderSize+1 || string(b[:batchMagicLen]) != string(BatchMagic) {
		return h, false, nil
	}
	rec := b[BatchHeaderSize:]
	size := int(binary.BigEndian.Uint32(rec))
	if rec[4] != RecordTypeUser || size < RecordHeaderSize+1 || size > len(rec) {
		return h, false, nil
	}
	payload := rec[RecordHeaderSize:size]
	if EntryType(payload[0]) != RewrittenDataFileCommand {
		return h, false, nil
	}
	var c Command
	if err := DecodeCommand(payload, &c); err != nil {
		return h, false, nil
	}
	// the first batch must be whole (a torn last batch is no data) and,
	// when checksummed, intact
	blen := int64(binary.BigEndian.Uint32(b[16:20]))
	sum := binary.BigEndian.Uint64(b[20:28])
	if blen < int64(size) || blen > 64<<20 {
		return h, false, nil
	}
	batch := make([]byte, blen)
	if _, err := f.ReadAt(batch, BatchHeaderSize); err != nil {
		return h, false, nil
	}
	if sum != 0 && uint64(adler32Sum(batch)) != sum {
		return h, false, nil
	}
	return CompactionHead{File: fi.ID, Source: c.SourceDataFileID, SkipIfSourceExists: c.SkipIfSourceExists}, true, nil
}

// CompactionHeads lists the ack-compaction files among files, in id order.
// A file that cannot be read is left out (reading it later reports why).
func CompactionHeads(files []FileInfo) []CompactionHead {
	var out []CompactionHead
	for _, fi := range files {
		if h, ok, err := ReadCompactionHead(fi); err == nil && ok {
			out = append(out, h)
		}
	}
	return out
}

// errForwardedDone stops ReadForwarded's reading after the forwarded part.
var errForwardedDone = errors.New("codec: end of the forwarded records")

// ReadForwarded hands fn the records an ack-compaction file forwarded from
// its source: the remove and commit records that follow its
// KAHA_REWRITTEN_DATA_FILE_COMMAND, up to the first record of another type
// (what a restarted broker appended later). Damage is skipped as
// everywhere (ReadOptions.Lenient); reading the file in full reports it.
func ReadForwarded(fi FileInfo, fn func(rec Record, c *Command) error) error {
	v := &forwardedVisitor{fn: fn}
	err := ReadFiles([]FileInfo{fi}, ReadOptions{}, 1, v)
	switch {
	case errors.Is(err, errForwardedDone):
		return nil
	}
	return err
}

type forwardedVisitor struct {
	fn func(Record, *Command) error
	n  int
}

func (v *forwardedVisitor) Command(rec Record, c *Command) error {
	v.n++
	if v.n == 1 {
		if c.Type != RewrittenDataFileCommand {
			return fmt.Errorf("%s: first record is %s, not %s", rec.Loc, c.Type, RewrittenDataFileCommand)
		}
		return nil
	}
	if c.Type != RemoveMessageCommand && c.Type != CommitCommand {
		return errForwardedDone
	}
	return v.fn(rec, c)
}

func (v *forwardedVisitor) FileDone(*FileSummary) error { return nil }

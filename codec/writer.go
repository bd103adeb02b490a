package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Writer defaults, as the broker's (KahaDB 5.17).
const (
	DefaultMaxFileLength = 32 * 1024 * 1024
	DefaultMaxBatchSize  = 4 * 1024 * 1024
)

// AppendUserRecord appends a user record [size][1][payload] to dst.
func AppendUserRecord(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)+RecordHeaderSize))
	dst = append(dst, RecordTypeUser)
	return append(dst, payload...)
}

// AppendBatch appends a batch control record followed by records (a run of
// complete user records). With checksum the control record carries the
// Adler-32 of records, else 0, as the broker writes with
// checksumJournalFiles off.
func AppendBatch(dst, records []byte, checksum bool) []byte {
	dst = append(dst, BatchMagic...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(records)))
	var sum uint64
	if checksum {
		sum = uint64(adler32Sum(records))
	}
	dst = binary.BigEndian.AppendUint64(dst, sum)
	return append(dst, records...)
}

// WriterOptions configure a JournalWriter.
type WriterOptions struct {
	FirstID       int32 // id of the first file (default 1)
	MaxFileLength int   // journalMaxFileLength (default 32 MiB)
	MaxBatchSize  int   // journalMaxWriteBatchSize (default 4 MiB)
	NoChecksum    bool  // write 0 instead of Adler-32
	NoSync        bool  // skip fsync (tests)
	// Discard lays the files out exactly as it would write them (ids,
	// batches, rotations, Bytes) but creates and writes nothing: what a
	// dry run reports is then what a real run writes.
	Discard bool
	// Written, when set, is told the bytes of batches written so far (all
	// files) after each batch.
	Written func(bytes int64)
	// Preallocate creates each file as the broker does by default
	// (preallocationScope entire_journal, preallocationStrategy
	// sparse_file): an EOF record at offset 0 and at MaxFileLength-5,
	// a hole between, so that its apparent size is MaxFileLength and
	// the length can be read off the store exactly. Data then overwrites
	// it from offset 0 (a file holding a record larger than the maximum
	// grows past it).
	Preallocate bool
}

// JournalWriter writes db-N.log files into a directory the way the broker's
// appender lays them out: records grouped in checksummed batches, a file
// rotated before a record that would reach the maximum length, the EOF
// record after the last batch, preallocated as the broker's default
// preallocation does with WriterOptions.Preallocate. It never overwrites
// an existing file.
//
// The open batch is built in place in one reused buffer: its control
// record's room first, then its user records, each encoded straight into
// the buffer; the control record is filled in when the batch is written.
type JournalWriter struct {
	dir   string
	opts  WriterOptions
	id    int32
	open  bool     // a file is started (f is it, unless Discard)
	f     *os.File // the current file
	off   int      // logical length of the current file
	buf   []byte   // the open batch: BatchHeaderSize bytes of room, then its user records
	bOff  int      // offset of the open batch
	files []int32
	bytes int64 // sizes of the files ended so far, EOF records included
	total int64 // bytes of the batches written, all files
}

// NewJournalWriter writes into dir, which must exist.
func NewJournalWriter(dir string, opts WriterOptions) *JournalWriter {
	if opts.FirstID <= 0 {
		opts.FirstID = 1
	}
	if opts.MaxFileLength <= 0 {
		opts.MaxFileLength = DefaultMaxFileLength
	}
	if opts.MaxBatchSize <= 0 {
		opts.MaxBatchSize = DefaultMaxBatchSize
	}
	return &JournalWriter{dir: dir, opts: opts, id: opts.FirstID - 1}
}

// Files lists the ids written so far.
func (w *JournalWriter) Files() []int32 { return w.files }

// Bytes is the size of the files ended so far (all of them after Close),
// as a stat of them shows it: their batches and the EOF record after the
// last one.
func (w *JournalWriter) Bytes() int64 { return w.bytes }

// room makes room for a record at the end of the open batch (starting one,
// with the room of its control record, when there is none) and returns
// where the record starts in buf.
func (w *JournalWriter) room() int {
	if len(w.buf) < BatchHeaderSize {
		w.buf = append(w.buf[:0], make([]byte, BatchHeaderSize)...)
	}
	return len(w.buf)
}

// Append writes one command payload (see AppendCommand) as a user record
// and returns its location.
func (w *JournalWriter) Append(payload []byte) (Location, error) {
	start := w.room()
	w.buf = AppendUserRecord(w.buf, payload)
	return w.place(start)
}

// AppendCommand encodes c and appends it.
func (w *JournalWriter) AppendCommand(c *Command) (Location, error) {
	start := w.room()
	w.buf = append(w.buf, 0, 0, 0, 0, RecordTypeUser)
	w.buf = AppendCommand(w.buf, c)
	binary.BigEndian.PutUint32(w.buf[start:], uint32(len(w.buf)-start))
	return w.place(start)
}

// place settles the user record just appended at buf[start:]: the batch
// before it is written first when the record would make it reach the
// maximum batch size or carry it past the maximum file length, and the
// file is rotated before a batch that would start with it when the
// record would reach the maximum file length.
func (w *JournalWriter) place(start int) (Location, error) {
	s := len(w.buf) - start
	if w.open && start > BatchHeaderSize {
		n := start + s // the batch with the record, control record included
		if n >= w.opts.MaxBatchSize || w.bOff+n > w.opts.MaxFileLength {
			if err := w.writeBatch(start); err != nil {
				w.buf = w.buf[:BatchHeaderSize]
				return Location{}, err
			}
			w.buf = w.buf[:BatchHeaderSize+copy(w.buf[BatchHeaderSize:], w.buf[start:])]
			start = BatchHeaderSize
		}
	}
	if start == BatchHeaderSize {
		if !w.open || (w.off > 0 && w.off+s >= w.opts.MaxFileLength) {
			if err := w.rotate(); err != nil {
				w.buf = w.buf[:BatchHeaderSize]
				return Location{}, err
			}
		}
		w.bOff = w.off
	}
	return Location{File: w.id, Offset: int32(w.bOff + start), Size: int32(s)}, nil
}

// writeBatch writes buf[:end] (control record room and user records) as a
// batch to the current file.
func (w *JournalWriter) writeBatch(end int) error {
	if w.opts.Written != nil {
		defer func() { w.opts.Written(w.total) }()
	}
	if w.opts.Discard {
		w.off += end
		w.total += int64(end)
		return nil
	}
	b := w.buf[:end]
	copy(b, BatchMagic)
	binary.BigEndian.PutUint32(b[batchMagicLen:], uint32(end-BatchHeaderSize))
	var sum uint64
	if !w.opts.NoChecksum {
		sum = uint64(adler32Sum(b[BatchHeaderSize:]))
	}
	binary.BigEndian.PutUint64(b[batchMagicLen+4:], sum)
	if _, err := w.f.Write(b); err != nil {
		return fileErr("write", w.f.Name(), err)
	}
	w.off += end
	w.total += int64(end)
	return nil
}

func (w *JournalWriter) flush() error {
	if len(w.buf) <= BatchHeaderSize {
		return nil
	}
	err := w.writeBatch(len(w.buf))
	w.buf = w.buf[:BatchHeaderSize]
	return err
}

// closeFile ends the current file, whose batches have all been written.
func (w *JournalWriter) closeFile() error {
	if !w.open {
		return nil
	}
	w.open = false
	size := int64(w.off + len(EOFRecord))
	if w.opts.Preallocate {
		size = max(size, int64(w.opts.MaxFileLength))
	}
	w.bytes += size
	if w.opts.Discard {
		return nil
	}
	if _, err := w.f.Write(EOFRecord); err != nil {
		return fileErr("write", w.f.Name(), err)
	}
	if !w.opts.NoSync {
		if err := w.f.Sync(); err != nil {
			return fileErr("fsync", w.f.Name(), err)
		}
	}
	name := w.f.Name()
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fileErr("close", name, err)
	}
	return nil
}

// fileErr is "OP NAME: CAUSE", the file named once (an *os.PathError
// names it already).
func fileErr(op, name string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}

// preallocate lays a new file out as the broker's sparse_file strategy
// does: an EOF record at 0 and at MaxFileLength-5.
func (w *JournalWriter) preallocate() error {
	if _, err := w.f.WriteAt(EOFRecord, 0); err != nil {
		return fileErr("preallocate", w.f.Name(), err)
	}
	if n := int64(w.opts.MaxFileLength) - int64(len(EOFRecord)); n > 0 {
		if _, err := w.f.WriteAt(EOFRecord, n); err != nil {
			return fileErr("preallocate", w.f.Name(), err)
		}
	}
	return nil
}

// rotate ends the current file and starts the next one. The open batch
// holds at most the record that starts the new file.
func (w *JournalWriter) rotate() error {
	if err := w.closeFile(); err != nil {
		return err
	}
	w.id++
	if !w.opts.Discard {
		p := filepath.Join(w.dir, DataFileName(w.id))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fileErr("create data file", p, err)
		}
		w.f = f
		if w.opts.Preallocate {
			if err := w.preallocate(); err != nil {
				return err
			}
		}
	}
	w.open, w.off = true, 0
	w.files = append(w.files, w.id)
	return nil
}

// Close writes the open batch and the EOF record, fsyncs the last file and
// the directory.
func (w *JournalWriter) Close() error {
	if w.open {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if err := w.closeFile(); err != nil {
		return err
	}
	if w.opts.NoSync || w.opts.Discard {
		return nil
	}
	return SyncDir(w.dir)
}

// Abort closes the open file, written or not, after an error: the writer
// is not used again.
func (w *JournalWriter) Abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	w.open = false
}

// SyncDir fsyncs a directory so that created or renamed entries persist.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

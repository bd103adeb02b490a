package codec

import (
	"encoding/binary"
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
}

// JournalWriter writes db-N.log files into a directory the way the broker's
// appender lays them out: records grouped in checksummed batches, a file
// rotated before a record that would reach the maximum length, the EOF
// record after the last batch, no preallocation. It never overwrites an
// existing file.
type JournalWriter struct {
	dir   string
	opts  WriterOptions
	id    int32
	f     *os.File
	off   int    // logical length of the current file
	batch []byte // user records of the open batch
	bOff  int    // offset of the open batch
	files []int32
	buf   []byte // batch being written
	cbuf  []byte // command being encoded
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

// Append writes one command payload (see AppendCommand) as a user record
// and returns its location.
func (w *JournalWriter) Append(payload []byte) (Location, error) {
	s := len(payload) + RecordHeaderSize
	if w.f != nil && len(w.batch) > 0 {
		n := BatchHeaderSize + len(w.batch) + s
		if n >= w.opts.MaxBatchSize || w.bOff+n > w.opts.MaxFileLength {
			if err := w.flush(); err != nil {
				return Location{}, err
			}
		}
	}
	if len(w.batch) == 0 {
		if w.f == nil || (w.off > 0 && w.off+s >= w.opts.MaxFileLength) {
			if err := w.rotate(); err != nil {
				return Location{}, err
			}
		}
		w.bOff = w.off
	}
	loc := Location{File: w.id, Offset: int32(w.bOff + BatchHeaderSize + len(w.batch)), Size: int32(s)}
	w.batch = AppendUserRecord(w.batch, payload)
	return loc, nil
}

// AppendCommand encodes c and appends it.
func (w *JournalWriter) AppendCommand(c *Command) (Location, error) {
	w.cbuf = AppendCommand(w.cbuf[:0], c)
	return w.Append(w.cbuf)
}

func (w *JournalWriter) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	w.buf = AppendBatch(w.buf[:0], w.batch, !w.opts.NoChecksum)
	if _, err := w.f.Write(w.buf); err != nil {
		return fmt.Errorf("write %s: %w", w.f.Name(), err)
	}
	w.off += len(w.buf)
	w.batch = w.batch[:0]
	return nil
}

func (w *JournalWriter) closeFile() error {
	if w.f == nil {
		return nil
	}
	if err := w.flush(); err != nil {
		return err
	}
	if _, err := w.f.Write(EOFRecord); err != nil {
		return fmt.Errorf("write %s: %w", w.f.Name(), err)
	}
	if !w.opts.NoSync {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", w.f.Name(), err)
		}
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

func (w *JournalWriter) rotate() error {
	if err := w.closeFile(); err != nil {
		return err
	}
	w.id++
	p := filepath.Join(w.dir, DataFileName(w.id))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create data file: %w", err)
	}
	w.f, w.off = f, 0
	w.files = append(w.files, w.id)
	return nil
}

// Close writes the open batch and the EOF record, fsyncs the last file and
// the directory.
func (w *JournalWriter) Close() error {
	if err := w.closeFile(); err != nil {
		return err
	}
	if w.opts.NoSync {
		return nil
	}
	return SyncDir(w.dir)
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

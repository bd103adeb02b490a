package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// The framer reads a data file with pread into reusable buffers instead of
// mapping it: on a warm page cache, faulting a mapping in page by page
// costs about five times more than copying the same bytes with read(2)
// (2 GiB: 1.2 s against 0.25 s on the reference machine), and a mapping
// is faulted in again every time it is walked.
//
// It handles the common case itself: a file that is a sequence of clean
// batches (magic, length inside the file, checksum right, user records
// that exactly tile the batch), ending at the end of the file, at an EOF
// record or at zeros with no batch after them. At the first thing that is
// not that (damage, records outside batches, a batch too large for a
// buffer), it hands the rest of the file to the Reader over a mapping of
// the file, starting at the same batch boundary: the Reader then frames and
// classifies exactly as it would have from offset 0, so what the framer
// returns is by construction what the Reader returns (tested, and fuzzed,
// against it).

const (
	// chunkBytes is the size of the buffers the framer reads into.
	chunkBytes = 1 << 20
	// keepChunkBytes: a buffer grown for a large batch is kept up to this
	// size (the broker's batches reach 4 MiB), larger ones are dropped.
	keepChunkBytes = 4<<20 + 64<<10
	// maxChunkBytes: a batch larger than a buffer gets a buffer of its own
	// up to this size; a larger one is read through a mapping.
	maxChunkBytes = 64 << 20
)

// chunk is a buffer of file bytes and the records framed in it. Records
// point into buf, or into df when the Reader produced them.
type chunk struct {
	buf     []byte
	records []Record
	df      *DataFile
	owner   chan *chunk // where recycle returns it (nil: chunkPool)

	// Decoded ahead by the worker (ReadFilesFrom): cmds[i] is records[i]
	// decoded, for the first len(cmds) records; bad lists the records
	// among them that did not decode, in order.
	cmds []Command
	bad  []badRecord
}

// badRecord is a record of a chunk that did not decode.
type badRecord struct {
	i   int
	err *CorruptionError
}

// predecodeMax bounds the commands a chunk decodes ahead (a Command is a
// few hundred bytes; a chunk of small records holds tens of thousands).
const predecodeMax = 2048

// predecode decodes up to predecodeMax records of the chunk into cmds.
func (c *chunk) predecode(path string) {
	n := min(len(c.records), predecodeMax)
	if cap(c.cmds) < n {
		// room for the most at once: growing by the counts met would
		// make (and fault in) a new array at every larger count
		c.cmds = make([]Command, n, predecodeMax)
	}
	c.cmds = c.cmds[:n]
	for i := range n {
		if err := DecodeRecord(path, c.records[i], &c.cmds[i]); err != nil {
			c.bad = append(c.bad, badRecord{i, err.(*CorruptionError)})
		}
	}
}

// reset makes the chunk reusable: unmaps the Reader's mapping and forgets
// the records.
func (c *chunk) reset() {
	if c.df != nil {
		c.df.Close()
		c.df = nil
	}
	// records and cmds point into buf (or the mapping just closed): they
	// are overwritten before they are read again, so they are not zeroed
	// (that would cost the visitor's goroutine a megabyte per chunk).
	c.records = c.records[:0]
	c.cmds = c.cmds[:0]
	clear(c.bad)
	c.bad = c.bad[:0]
	if len(c.buf) > keepChunkBytes {
		c.buf = make([]byte, chunkBytes) // do not keep an outsized buffer
	}
}

// recycle resets the chunk and returns it to its owner.
func (c *chunk) recycle() {
	c.reset()
	if c.owner != nil {
		c.owner <- c
		return
	}
	chunkPool.Put(c)
}

// chunkPool serves ScanFile, which frames one file at a time.
var chunkPool = sync.Pool{New: func() any { return &chunk{buf: make([]byte, chunkBytes)} }}

// errStopped is returned by frameFile when get or put asked it to stop.
var errStopped = errors.New("codec: reading stopped")

// openDataFD opens a data file for reading: a regular file, opened without
// blocking (a FIFO in its place must not hang the reader), of a size a
// journal file can have.
func openDataFD(fi FileInfo) (*os.File, os.FileInfo, error) {
	fd, err := os.OpenFile(fi.Path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open data file: %w", err)
	}
	st, err := fd.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("stat data file: %w", err)
	case !st.Mode().IsRegular():
		err = fmt.Errorf("%s: not a regular file", fi.Path)
	case st.Size() > 1<<31-1:
		err = fmt.Errorf("%s: %d bytes is larger than a journal file can be", fi.Path, st.Size())
	}
	if err != nil {
		fd.Close()
		return nil, nil, err
	}
	return fd, st, nil
}

// frameFile reads the data file fi from offset from (0, or a batch
// boundary such as the End of an earlier read of it) in lenient mode. It
// fills chunks obtained from get and hands each to put, in offset order;
// put owns the chunk from then on. get or put returning false stops the
// read with errStopped. The summary covers [from, End).
func frameFile(fi FileInfo, from int64, opts ReadOptions, get func() (*chunk, bool), put func(*chunk) bool) (FileSummary, error) {
	sum := FileSummary{Info: fi}
	fd, st, err := openDataFD(fi)
	if err != nil {
		ce := dataFileError(fi, err)
		if errors.Is(ce, ErrUnreadable) {
			sum.Damage = []*CorruptionError{ce}
			return sum, nil
		}
		return sum, ce // missing: the store changed under the reader
	}
	defer fd.Close()
	size := st.Size()
	sum.Size, sum.Allocated = size, allocated(st)
	fr := framer{fi: fi, fd: fd, size: size, opts: opts, get: get, put: put, sum: &sum}
	if err := fr.run(min(max(from, 0), size)); err != nil {
		return sum, err
	}
	return sum, nil
}

type framer struct {
	fi   FileInfo
	fd   *os.File
	size int64
	opts ReadOptions
	get  func() (*chunk, bool)
	put  func(*chunk) bool
	sum  *FileSummary
	c    *chunk // being filled
}

// emit hands the current chunk to put if it holds records.
func (fr *framer) emit() error {
	c := fr.c
	if c == nil || len(c.records) == 0 {
		return nil
	}
	fr.c = nil
	if !fr.put(c) {
		return errStopped
	}
	return nil
}

// fresh makes sure there is a chunk to fill with no records in it.
func (fr *framer) fresh() error {
	if err := fr.emit(); err != nil {
		return err
	}
	if fr.c == nil {
		c, ok := fr.get()
		if !ok {
			return errStopped
		}
		fr.c = c
	}
	return nil
}

// release returns an unused chunk through put's owner (an empty chunk is
// handed over too, so that the caller gets its buffer back).
func (fr *framer) release() bool {
	if fr.c == nil {
		return true
	}
	c := fr.c
	fr.c = nil
	return fr.put(c)
}

func (fr *framer) run(pos int64) error {
	defer fr.release()
	for {
		next, done, err := fr.fill(pos)
		if err != nil || done {
			return err
		}
		pos = next
	}
}

// fill reads the file from pos into a fresh chunk and frames the clean
// batches in it. It returns where the next chunk starts, or done.
func (fr *framer) fill(pos int64) (int64, bool, error) {
	if err := fr.fresh(); err != nil {
		return 0, true, err
	}
	c := fr.c
	n := min(int64(len(c.buf)), fr.size-pos)
	buf := c.buf[:n]
	if err := fr.readAt(buf, pos); err != nil {
		return 0, true, fr.ioDamage(pos, err)
	}
	off := 0
	for {
		at := pos + int64(off)
		rest := len(buf) - off
		if at == fr.size {
			fr.sum.End = at
			return 0, true, fr.emit()
		}
		if rest < BatchHeaderSize {
			if at+BatchHeaderSize <= fr.size {
				return at, false, nil // continue in the next chunk
			}
			if rest >= eofSize && bytes.Equal(buf[off:off+eofSize], EOFRecord) {
				fr.sum.End = at
				return 0, true, fr.emit()
			}
			return 0, true, fr.fallback(at)
		}
		b := buf[off:]
		if bytes.Equal(b[:eofSize], EOFRecord) {
			fr.sum.End = at
			return 0, true, fr.emit()
		}
		if binary.BigEndian.Uint32(b) == 0 && b[4] == 0 {
			return 0, true, fr.zeros(at)
		}
		length32, stored, ok := BatchHeader(b)
		if !ok {
			return 0, true, fr.fallback(at)
		}
		length := int64(length32)
		total := BatchHeaderSize + length
		if length <= 0 || at+total > fr.size {
			return 0, true, fr.fallback(at)
		}
		if total > int64(rest) {
			switch {
			case off > 0:
				return at, false, nil // the batch starts the next chunk
			case total <= maxChunkBytes:
				c.buf = make([]byte, (total+chunkBytes-1)/chunkBytes*chunkBytes) // a large batch
				return at, false, nil
			default:
				return 0, true, fr.fallback(at)
			}
		}
		if !fr.batch(b[:total], at, stored) {
			return 0, true, fr.fallback(at)
		}
		off += int(total)
	}
}

// batch frames the records of the clean batch b at file offset at into the
// current chunk. It reports false, adding nothing, when the batch is not
// clean: then the Reader takes over from its start.
func (fr *framer) batch(b []byte, at int64, stored uint64) bool {
	c := fr.c
	first := len(c.records)
	for p := BatchHeaderSize; p < len(b); {
		if len(b)-p < RecordHeaderSize {
			c.records = c.records[:first]
			return false
		}
		size := int32(binary.BigEndian.Uint32(b[p:]))
		if b[p+4] != RecordTypeUser || size < RecordHeaderSize+2 || int64(size) > int64(len(b)-p) {
			c.records = c.records[:first]
			return false
		}
		c.records = append(c.records, Record{
			Loc:   Location{File: fr.fi.ID, Offset: int32(at) + int32(p), Size: size},
			Batch: int32(at),
			Data:  b[p : p+int(size)],
		})
		p += int(size)
	}
	if stored != 0 && !fr.opts.SkipChecksums && uint64(adler32Sum(b[BatchHeaderSize:])) != stored {
		c.records = c.records[:first]
		return false
	}
	fr.sum.Batches++
	if stored != 0 {
		fr.sum.Checksummed++
	}
	fr.sum.Records += len(c.records) - first
	return true
}

// zeros handles a zero record header outside a batch at pos: the end of
// the data (preallocated space), unless a batch magic follows somewhere
// after it, which the Reader reports as a zeroed range.
func (fr *framer) zeros(pos int64) error {
	if err := fr.fresh(); err != nil {
		return err
	}
	found, err := fr.magicAfter(pos + 1)
	if err != nil || found {
		return fr.fallback(pos)
	}
	fr.sum.End = pos
	return nil
}

// magicAfter reports whether BatchMagic occurs at or after from. Holes of
// a sparse file are skipped (they are zeros and cannot hold the magic's
// 0x1C byte).
func (fr *framer) magicAfter(from int64) (bool, error) {
	buf := fr.c.buf
	for from < fr.size {
		data, err := unix.Seek(int(fr.fd.Fd()), from, unix.SEEK_DATA)
		switch {
		case errors.Is(err, unix.ENXIO):
			return false, nil // only a hole is left
		case err == nil && data > from:
			from = max(from, data-batchMagicLen)
		}
		n := min(int64(len(buf)), fr.size-from)
		if err := fr.readAt(buf[:n], from); err != nil {
			return false, err
		}
		if bytes.Contains(buf[:n], BatchMagic) {
			return true, nil
		}
		if from+n >= fr.size {
			return false, nil
		}
		from += n - (batchMagicLen - 1) // a magic may straddle the reads
	}
	return false, nil
}

// fallback hands the rest of the file from pos (outside any batch) to a
// Reader over a mapping of the file, and puts its records in one chunk.
func (fr *framer) fallback(pos int64) error {
	if err := fr.fresh(); err != nil {
		return err
	}
	df, err := mapDataFile(fr.fd, fr.fi, fr.size)
	if err != nil {
		return fr.ioDamage(pos, err)
	}
	c := fr.c
	c.df = df
	r := &Reader{f: df, data: df.data, opts: fr.opts, batch: -1, pos: int(pos)}
	r.opts.Lenient = true
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		c.records = append(c.records, rec)
	}
	fr.sum.End = r.End()
	fr.sum.Records += r.records
	fr.sum.Batches += r.batches
	fr.sum.Checksummed += r.summed
	fr.sum.Damage = append(fr.sum.Damage, r.damage...)
	if len(c.records) == 0 {
		c.reset()
		return nil
	}
	return fr.emit()
}

// ioDamage records a failing read at pos as the end of the file's data.
func (fr *framer) ioDamage(pos int64, err error) error {
	fr.sum.End = pos
	fr.sum.Damage = append(fr.sum.Damage, &CorruptionError{File: fr.fi.Path, FileID: fr.fi.ID,
		Offset: pos, End: fr.size, Err: ErrUnreadable, Detail: err.Error()})
	return fr.emit()
}

func (fr *framer) readAt(b []byte, off int64) error {
	n, err := fr.fd.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = fmt.Errorf("read %d of %d bytes at offset %d: file shrank", n, len(b), off)
	}
	return err
}

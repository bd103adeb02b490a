package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// Record framing constants. Part of the wire format.
const (
	RecordHeaderSize = 5           // int32 size + byte type
	BatchHeaderSize  = 28          // batch control record
	RecordTypeUser   = 1           // user record
	RecordTypeBatch  = 2           // batch control record
	eofSize          = 5           // "-qMa4"
	batchMagicLen    = 16          // size + type + "WRITE BATCH"
	chunkSize        = 1024 * 1024 // chunked_zeros preallocation unit
)

// BatchMagic starts every batch control record; the broker resynchronises on
// it after damage.
var BatchMagic = []byte{0, 0, 0, 0x1C, 2, 'W', 'R', 'I', 'T', 'E', ' ', 'B', 'A', 'T', 'C', 'H'}

// EOFRecord ends the data of a file ("-qMa4").
var EOFRecord = []byte{0x2D, 0x71, 0x4D, 0x61, 0x34}

// Record is one user record of a data file.
type Record struct {
	Loc   Location
	Batch int32  // offset of the batch control record holding it, -1 if none
	Data  []byte // the whole record, header included (Loc.Size bytes)
}

// BatchHeader reads the batch control record b starts with: ok when b
// holds one (BatchHeaderSize bytes that start with BatchMagic), with the
// length of the batch's records after it and its stored checksum (0:
// none).
func BatchHeader(b []byte) (length int32, sum uint64, ok bool) {
	if len(b) < BatchHeaderSize || !bytes.Equal(b[:batchMagicLen], BatchMagic) {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(b[batchMagicLen:])), binary.BigEndian.Uint64(b[batchMagicLen+4:]), true
}

// Payload is the record body: KahaEntryType byte, varint length, protobuf.
func (r Record) Payload() []byte { return r.Data[RecordHeaderSize:] }

// ReadOptions select how strict the reader is.
type ReadOptions struct {
	// Lenient: report damage through Damage() and resynchronise on the next
	// batch magic instead of returning an error.
	Lenient bool
	// SkipChecksums: do not verify batch Adler-32 sums.
	SkipChecksums bool
}

// Reader walks the user records of one data file in order.
type Reader struct {
	f        *DataFile
	data     []byte
	opts     ReadOptions
	pos      int
	batch    int // offset of the current batch, -1 outside batches
	batchEnd int
	end      int // logical end of the data, known once Next returned io.EOF
	done     bool
	err      error

	damage  []*CorruptionError
	batches int
	summed  int // batches with a non-zero checksum
	records int
}

// NewReader reads f from offset 0.
func NewReader(f *DataFile, opts ReadOptions) *Reader {
	return &Reader{f: f, data: f.data, opts: opts, batch: -1}
}

// Damage lists the damage found so far (lenient mode).
func (r *Reader) Damage() []*CorruptionError { return r.damage }

// End is the logical end of the data (valid after Next returned io.EOF).
func (r *Reader) End() int64 { return int64(r.end) }

// Batches returns how many batches were read and how many carried a checksum.
func (r *Reader) Batches() (total, checksummed int) { return r.batches, r.summed }

// Records is the number of user records returned so far.
func (r *Reader) Records() int { return r.records }

func (r *Reader) corrupt(off, end int, err error, detail string) *CorruptionError {
	return &CorruptionError{File: r.f.Path, FileID: r.f.ID, Offset: int64(off), End: int64(end), Err: err, Detail: detail}
}

// Next returns the next user record. It returns io.EOF at the end of the
// data. In strict mode damage is returned as a *CorruptionError, after which
// Next keeps returning it; in lenient mode damage is recorded and skipped.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	for !r.done {
		rec, ok, cerr := r.step()
		if cerr != nil {
			if !r.opts.Lenient {
				r.err = cerr
				return Record{}, cerr
			}
			r.damage = append(r.damage, cerr)
			continue
		}
		if ok {
			r.records++
			return rec, nil
		}
	}
	return Record{}, io.EOF
}

// step advances by one header. It returns a record, or nothing (batch header
// consumed, end reached), or damage (after which pos has been resynchronised).
func (r *Reader) step() (Record, bool, *CorruptionError) {
	d, pos := r.data, r.pos
	if r.batch >= 0 && pos >= r.batchEnd {
		r.batch = -1
	}
	rest := len(d) - pos
	if rest < RecordHeaderSize {
		if rest == 0 || allZero(d[pos:]) {
			return r.finish(pos)
		}
		return r.damaged(pos, ErrTruncated, "partial record header")
	}
	size := int32(binary.BigEndian.Uint32(d[pos:]))
	typ := d[pos+4]
	if bytes.Equal(d[pos:pos+eofSize], EOFRecord) {
		if r.batch >= 0 {
			return r.damaged(pos, ErrTruncated, "batch ends early")
		}
		return r.finish(pos)
	}
	if size == 0 && typ == 0 {
		if r.batch >= 0 {
			return r.damaged(pos, ErrTruncated, "batch ends early")
		}
		// Zeros end the data (preallocated space), unless valid batches
		// follow: then a range was zeroed, and the broker's recovery skips
		// it the same way.
		if next := r.findMagic(pos + 1); next >= 0 {
			r.pos = next
			return Record{}, false, r.corrupt(pos, next, ErrBadBatch, "zeroed range before more batches")
		}
		return r.finish(pos)
	}
	switch typ {
	case RecordTypeBatch:
		if r.batch >= 0 {
			return r.damaged(pos, ErrBadBatch, "batch control record inside a batch")
		}
		if rest < BatchHeaderSize {
			return r.damaged(pos, ErrTruncated, "partial batch control record")
		}
		length, sum, ok := BatchHeader(d[pos:])
		if !ok {
			return r.damaged(pos, ErrBadBatch, "bad batch magic")
		}
		if length < 0 {
			return r.damaged(pos, ErrBadBatch, fmt.Sprintf("negative batch length %d", length))
		}
		end := pos + BatchHeaderSize + int(length)
		if end > len(d) {
			return r.damaged(pos, ErrTruncated, fmt.Sprintf("batch of %d bytes ends past end of file", length))
		}
		if length == 0 { // the broker treats an empty batch as the end
			return r.finish(pos)
		}
		if sum != 0 {
			r.summed++
			if !r.opts.SkipChecksums {
				if got := adler32Sum(d[pos+BatchHeaderSize : end]); uint64(got) != sum {
					return r.damaged(pos, ErrChecksum, fmt.Sprintf("stored %#x, computed %#x", sum, got))
				}
			}
		}
		r.batches++
		r.batch, r.batchEnd = pos, end
		r.pos = pos + BatchHeaderSize
		return Record{}, false, nil
	case RecordTypeUser:
		if size < RecordHeaderSize+2 {
			return r.damaged(pos, ErrBadSize, fmt.Sprintf("record size %d", size))
		}
		end := pos + int(size)
		if end > len(d) || end < pos {
			return r.damaged(pos, ErrTruncated, fmt.Sprintf("record of %d bytes", size))
		}
		if r.batch >= 0 && end > r.batchEnd {
			return r.damaged(pos, ErrBadSize, fmt.Sprintf("record of %d bytes overruns its batch", size))
		}
		r.pos = end
		return Record{Loc: Location{File: r.f.ID, Offset: int32(pos), Size: size}, Batch: int32(r.batch), Data: d[pos:end]}, true, nil
	default:
		if size < RecordHeaderSize {
			return r.damaged(pos, ErrBadSize, fmt.Sprintf("record size %d", size))
		}
		return r.damaged(pos, ErrBadRecordType, fmt.Sprintf("type %d", typ))
	}
}

func (r *Reader) finish(pos int) (Record, bool, *CorruptionError) {
	r.end, r.done = pos, true
	return Record{}, false, nil
}

// damaged classifies damage at pos: with a later batch magic it is mid-file
// corruption and reading resumes there; without one, the damage is the torn
// end of the data.
func (r *Reader) damaged(pos int, err error, detail string) (Record, bool, *CorruptionError) {
	start := pos
	r.batch = -1
	next := r.findMagic(pos + 1)
	if next < 0 {
		r.end, r.done = start, true
		return Record{}, false, r.corrupt(start, len(r.data), ErrTornTail, err.Error()+": "+detail)
	}
	r.pos = next
	return Record{}, false, r.corrupt(start, next, err, detail)
}

func (r *Reader) findMagic(from int) int {
	if from >= len(r.data) {
		return -1
	}
	i := bytes.Index(r.data[from:], BatchMagic)
	if i < 0 {
		return -1
	}
	return from + i
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

package compact

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/kahafs/kahafs/codec"
)

// recordSource reads single records of a store by location with pread,
// keeping a few data files open. The records were verified (checksums,
// framing) when the store was analysed; reading one again checks that its
// header still says what the analysis saw.
type recordSource struct {
	st    *codec.Store
	open  map[int32]*os.File
	order []int32 // open files, oldest first
	buf   []byte
}

// openFiles bounds the descriptors a recordSource keeps.
const openFiles = 16

func newRecordSource(st *codec.Store) *recordSource {
	return &recordSource{st: st, open: map[int32]*os.File{}}
}

// payload returns the body of the record at loc (entry type, length,
// protobuf). It is valid until the next call.
func (r *recordSource) payload(loc codec.Location) ([]byte, error) {
	fi, ok := r.st.File(loc.File)
	if !ok {
		return nil, fmt.Errorf("record %v: %w", loc, codec.ErrMissingFile)
	}
	fd := r.open[loc.File]
	if fd == nil {
		var err error
		if fd, err = os.Open(fi.Path); err != nil {
			return nil, &codec.CorruptionError{File: fi.Path, FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrUnreadable, Detail: err.Error()}
		}
		if len(r.order) >= openFiles {
			old := r.order[0]
			r.order = r.order[1:]
			r.open[old].Close()
			delete(r.open, old)
		}
		r.open[loc.File] = fd
		r.order = append(r.order, loc.File)
	}
	bad := func(err error, detail string) error {
		return &codec.CorruptionError{File: fi.Path, FileID: loc.File, Offset: int64(loc.Offset),
			End: int64(loc.Offset) + int64(loc.Size), Err: err, Detail: detail}
	}
	if loc.Offset < 0 || loc.Size < codec.RecordHeaderSize+1 {
		return nil, bad(codec.ErrBadSize, "record location outside the file")
	}
	if cap(r.buf) < int(loc.Size) {
		r.buf = make([]byte, loc.Size)
	}
	b := r.buf[:loc.Size]
	if n, err := fd.ReadAt(b, int64(loc.Offset)); n < len(b) {
		if err == nil || err == io.EOF {
			return nil, bad(codec.ErrTruncated, "record location outside the file")
		}
		return nil, bad(codec.ErrUnreadable, err.Error())
	}
	if size := int32(binary.BigEndian.Uint32(b)); size != loc.Size || b[4] != codec.RecordTypeUser {
		return nil, bad(codec.ErrBadSize, fmt.Sprintf("the record there is now of type %d and %d bytes, not %d: the file changed since it was read", b[4], size, loc.Size))
	}
	return b[codec.RecordHeaderSize:], nil
}

func (r *recordSource) close() {
	for _, fd := range r.open {
		fd.Close()
	}
	r.open = nil
}

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
}

// openFiles bounds the descriptors a recordSource keeps.
const openFiles = 16

func newRecordSource(st *codec.Store) *recordSource {
	return &recordSource{st: st, open: map[int32]*os.File{}}
}

// payloadInto returns the body of the record at loc (entry type, length,
// protobuf), read into buf (grown when too small, and returned).
func (r *recordSource) payloadInto(loc codec.Location, buf []byte) ([]byte, []byte, error) {
	fi, ok := r.st.File(loc.File)
	if !ok {
		return nil, buf, fmt.Errorf("record %v: %w", loc, codec.ErrMissingFile)
	}
	fd := r.open[loc.File]
	if fd == nil {
		var err error
		if fd, err = os.Open(fi.Path); err != nil {
			return nil, buf, &codec.CorruptionError{File: fi.Path, FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrUnreadable, Detail: err.Error()}
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
		return nil, buf, bad(codec.ErrBadSize, "record location outside the file")
	}
	if cap(buf) < int(loc.Size) {
		buf = make([]byte, loc.Size)
	}
	b := buf[:loc.Size]
	if n, err := fd.ReadAt(b, int64(loc.Offset)); n < len(b) {
		if err == nil || err == io.EOF {
			return nil, buf, bad(codec.ErrTruncated, "record location outside the file")
		}
		return nil, buf, bad(codec.ErrUnreadable, err.Error())
	}
	if size := int32(binary.BigEndian.Uint32(b)); size != loc.Size || b[4] != codec.RecordTypeUser {
		return nil, buf, bad(codec.ErrBadSize, fmt.Sprintf("the record there is now of type %d and %d bytes, not %d: the file changed since it was read", b[4], size, loc.Size))
	}
	return b[codec.RecordHeaderSize:], buf, nil
}

// prefetcher reads the payloads of a list of locations, in order, on its
// own goroutine ahead of the writer, so that reading the original store
// and writing the new one overlap. It owns the recordSource meanwhile.
type prefetcher struct {
	out  chan fetched
	free chan []byte
	stop chan struct{}
	done chan struct{}
	held []byte // the buffer of the payload next returned last
}

type fetched struct {
	pl, buf []byte
	err     error
}

// prefetchDepth is how many payloads may wait for the writer.
const prefetchDepth = 64

func prefetch(src *recordSource, locs []codec.Location) *prefetcher {
	pf := &prefetcher{out: make(chan fetched, prefetchDepth), free: make(chan []byte, prefetchDepth+2),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range prefetchDepth + 2 { // in out, being read, being written
		pf.free <- nil
	}
	go func() {
		defer close(pf.done)
		defer close(pf.out)
		for _, loc := range locs {
			var buf []byte
			select {
			case buf = <-pf.free:
			case <-pf.stop:
				return
			}
			var f fetched
			f.pl, f.buf, f.err = src.payloadInto(loc, buf)
			select {
			case pf.out <- f:
			case <-pf.stop:
				return
			}
			if f.err != nil {
				return
			}
		}
	}()
	return pf
}

// next returns the next payload, valid until the following call.
func (pf *prefetcher) next() ([]byte, error) {
	if pf.held != nil {
		pf.free <- pf.held // never blocks: free has room for every buffer
		pf.held = nil
	}
	f, ok := <-pf.out
	if !ok {
		return nil, fmt.Errorf("compact: more records asked for than planned")
	}
	pf.held = f.buf
	return f.pl, f.err
}

// close stops the reading goroutine and waits for it.
func (pf *prefetcher) close() {
	close(pf.stop)
	<-pf.done
}

func (r *recordSource) close() {
	for _, fd := range r.open {
		fd.Close()
	}
	r.open = nil
}

package compact

import (
	"fmt"
	"os"
	"syscall"

	"github.com/kahafs/kahafs/codec"
)

// recordSource reads records of a store by location with pread, keeping a
// few data files open. The records were verified (checksums, framing) when
// the store was analysed; reading one again checks that its header still
// says what the analysis saw.
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

// file returns the data file of loc, open.
func (r *recordSource) file(loc codec.Location) (codec.FileInfo, *os.File, error) {
	fi, ok := r.st.File(loc.File)
	if !ok {
		return fi, nil, fmt.Errorf("record %v: %w", loc, codec.ErrMissingFile)
	}
	if fd := r.open[loc.File]; fd != nil {
		return fi, fd, nil
	}
	fd, err := os.OpenFile(fi.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not hang the read
	if err == nil {
		var st os.FileInfo
		if st, err = fd.Stat(); err == nil && !st.Mode().IsRegular() {
			err = fmt.Errorf("%s: not a regular file", fi.Path)
		}
		if err != nil {
			fd.Close()
		}
	}
	if err != nil {
		return fi, nil, &codec.CorruptionError{File: fi.Path, FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrUnreadable, Detail: err.Error()}
	}
	if len(r.order) >= openFiles {
		old := r.order[0]
		r.order = r.order[1:]
		r.open[old].Close()
		delete(r.open, old)
	}
	r.open[loc.File] = fd
	r.order = append(r.order, loc.File)
	return fi, fd, nil
}

// validLoc reports whether loc can be a user record at all.
func validLoc(loc codec.Location) bool {
	return loc.Offset >= 0 && loc.Size >= codec.RecordHeaderSize+1 && loc.Size <= 1<<30
}

// readRun reads the records at run (one file, increasing offsets, none
// overlapping the next) with one pread into dst, which holds exactly the
// span from the first record's start to the last one's end, and appends
// their payloads (entry type, length, protobuf) to pls. It stops at the
// first record it cannot return, with an error naming it (codec.RecordIn:
// codec.ErrChanged when the file no longer holds it).
func (r *recordSource) readRun(run []codec.Location, dst []byte, pls [][]byte) ([][]byte, error) {
	fi, fd, err := r.file(run[0])
	if err != nil {
		return pls, err
	}
	base := int64(run[0].Offset)
	n, rerr := fd.ReadAt(dst, base)
	for _, loc := range run {
		b, err := codec.RecordIn(fi, loc, dst[:n], base, rerr)
		if err != nil {
			return pls, err
		}
		pls = append(pls, b[codec.RecordHeaderSize:])
	}
	return pls, nil
}

// prefetcher reads the payloads of a list of locations, in order, on its
// own goroutine ahead of the writer, so that reading the original store
// and writing the new one overlap. It owns the recordSource.
//
// It fills a few reused buffers with the records of the list in turn;
// records that follow each other in the list and lie close together in
// the same file are read with one pread. It also decodes each record, so
// that the writer's goroutine only encodes and writes.
type prefetcher struct {
	src  *recordSource
	out  chan *fetchBatch
	free chan *fetchBatch
	stop chan struct{}
	done chan struct{}
	cur  *fetchBatch // batch being handed out
	pos  int         // its next payload
}

// fetchBatch is a buffer of records read ahead, in list order.
type fetchBatch struct {
	buf  []byte
	pls  [][]byte  // payloads, pointing into buf
	recs []fetched // pls[i] decoded (fill it with decode)
	err  error     // in place of the record after pls
}

// fetched is one record read ahead.
type fetched struct {
	loc  codec.Location
	pl   []byte        // the payload (entry type, length, protobuf)
	c    codec.Command // pl decoded (pointing into it), unless derr
	derr error
	// message: c is an ADD or UPDATE
	message bool
}

const (
	// prefetchBufs buffers of prefetchBufBytes each circulate between the
	// reading goroutine and the writer.
	prefetchBufs     = 4
	prefetchBufBytes = 256 << 10
	// readGap: neighbouring records at most this far apart are read in
	// one pread, the bytes between them read and skipped: a pread costs
	// far more than copying a few kilobytes more from the page cache
	// (2.5 GB big-pending store, 4 KiB gaps and 64 KiB buffers: 300 k
	// preads, 2.4 s of CPU over the write and the verification; 64 KiB
	// gaps and 256 KiB buffers: 1.3 s).
	readGap = 64 << 10
)

func prefetch(src *recordSource, locs *chunked[codec.Location]) *prefetcher {
	pf := &prefetcher{src: src, out: make(chan *fetchBatch, prefetchBufs), free: make(chan *fetchBatch, prefetchBufs),
		stop: make(chan struct{}), done: make(chan struct{})}
	slab := make([]byte, prefetchBufs*prefetchBufBytes)
	for i := range prefetchBufs {
		pf.free <- &fetchBatch{buf: slab[i*prefetchBufBytes : (i+1)*prefetchBufBytes : (i+1)*prefetchBufBytes]}
	}
	go func() {
		defer close(pf.done)
		defer close(pf.out)
		// the list's chunks are freed as they are read
		locs.each(func(locs []codec.Location) bool {
			for i := 0; i < len(locs); {
				var fb *fetchBatch
				select {
				case fb = <-pf.free:
				case <-pf.stop:
					return false
				}
				first := i
				i = fb.fill(src, locs, i)
				fb.decode(locs[first:])
				select {
				case pf.out <- fb:
				case <-pf.stop:
					return false
				}
				if fb.err != nil {
					return false
				}
			}
			return true
		})
	}()
	return pf
}

// fill reads records from locs[i] on into the batch, as many as fit (at
// least one: a record larger than the buffer gets a buffer of its own),
// and returns the index of the first record not read.
func (fb *fetchBatch) fill(src *recordSource, locs []codec.Location, i int) int {
	fb.pls, fb.err = fb.pls[:0], nil
	if cap(fb.buf) > prefetchBufBytes {
		fb.buf = make([]byte, prefetchBufBytes) // do not keep an outsized buffer
	}
	used := 0
	for i < len(locs) {
		first := locs[i]
		if !validLoc(first) {
			fi, _ := src.st.File(first.File)
			_, fb.err = codec.RecordIn(fi, first, nil, 0, nil)
			return i
		}
		if int(first.Size) > cap(fb.buf)-used {
			if used > 0 {
				return i
			}
			fb.buf = make([]byte, first.Size)
		}
		// Extend the run while the next record is close after this one.
		j, end := i+1, int64(first.Offset)+int64(first.Size)
		for j < len(locs) {
			n := locs[j]
			if n.File != first.File || !validLoc(n) || int64(n.Offset) < end || int64(n.Offset)-end > readGap ||
				int64(n.Offset)+int64(n.Size)-int64(first.Offset) > int64(cap(fb.buf)-used) {
				break
			}
			end = int64(n.Offset) + int64(n.Size)
			j++
		}
		span := int(end - int64(first.Offset))
		dst := fb.buf[used : used+span : used+span]
		var err error
		k := len(fb.pls)
		fb.pls, err = src.readRun(locs[i:j], dst, fb.pls)
		if err != nil {
			fb.err = err
			return i + len(fb.pls) - k
		}
		used += span
		i = j
	}
	return i
}

// decode decodes the records read (at locs) into recs.
func (fb *fetchBatch) decode(locs []codec.Location) {
	if cap(fb.recs) < len(fb.pls) {
		fb.recs = make([]fetched, len(fb.pls), max(len(fb.pls), 2*cap(fb.recs)))
	}
	fb.recs = fb.recs[:len(fb.pls)]
	for i, pl := range fb.pls {
		f := &fb.recs[i]
		f.pl, f.loc = pl, locs[i]
		f.derr = codec.DecodeCommand(pl, &f.c)
		f.message = f.derr == nil && (f.c.Type == codec.AddMessageCommand || f.c.Type == codec.UpdateMessageCommand)
	}
}

// next returns the next record, valid until the following call.
func (pf *prefetcher) next() (*fetched, error) {
	for pf.cur == nil || pf.pos == len(pf.cur.pls) {
		if pf.cur != nil {
			if pf.cur.err != nil {
				return nil, pf.cur.err
			}
			pf.free <- pf.cur // never blocks: free has room for every buffer
			pf.cur = nil
		}
		fb, ok := <-pf.out
		if !ok {
			return nil, fmt.Errorf("compact: more records asked for than planned")
		}
		pf.cur, pf.pos = fb, 0
	}
	f := &pf.cur.recs[pf.pos]
	pf.pos++
	return f, nil
}

// close stops the reading goroutine, waits for it and closes the source.
// Closing again does nothing.
func (pf *prefetcher) close() {
	if pf.src == nil {
		return
	}
	close(pf.stop)
	<-pf.done
	pf.src.close()
	pf.src = nil
}

func (r *recordSource) close() {
	for _, fd := range r.open {
		fd.Close()
	}
	r.open = nil
}

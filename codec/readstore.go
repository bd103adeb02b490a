package codec

import (
	"bytes"
	"sync"
)

// Visitor receives a store's commands in journal (replay) order.
type Visitor interface {
	// Command is called for every record that decodes, in journal order.
	// rec and c are only valid during the call: copy what must be kept.
	Command(rec Record, c *Command) error
	// FileDone is called after the last command of each data file, with
	// what reading it found (damage included).
	FileDone(sum *FileSummary) error
}

// ReadStore reads every data file of s and hands the decoded commands to v
// in journal order. Reading, checksum verification and framing run on up
// to workers files in parallel; decoding and the visitor run sequentially.
// Each worker fills at most readAhead buffers of chunkBytes that the
// visitor has not consumed yet, so memory does not grow with the store.
func ReadStore(s *Store, opts ReadOptions, workers int, v Visitor) error {
	return ReadFilesFrom(s.Files, 0, opts, workers, v)
}

// ReadFiles is ReadStore over a chosen list of files (in replay order).
func ReadFiles(files []FileInfo, opts ReadOptions, workers int, v Visitor) error {
	return ReadFilesFrom(files, 0, opts, workers, v)
}

// readAhead is how many filled chunks each worker may have waiting for the
// visitor. Two keep the visitor fed; every more chunk is a MiB of buffer
// and predecoded commands to fault in, which costs more than it saves
// where first touches of memory are dear (holders on the 2 GiB bench
// store: 9.3k page faults and 42 MiB peak RSS with 4, 6.1k and 29 MiB
// with 2, and less CPU).
const readAhead = 2

// fileJob is one data file going through the pipeline.
type fileJob struct {
	fi     FileInfo
	from   int64
	chunks chan *chunk // filled chunks in offset order, closed when done
	sum    FileSummary // set before chunks is closed
	err    error
}

// ReadFilesFrom is ReadFiles starting files[0] at byte offset from: a batch
// boundary, such as the End of an earlier summary of that file (a journal
// only grows at its end). The summary of files[0] then covers [from, End).
func ReadFilesFrom(files []FileInfo, from int64, opts ReadOptions, workers int, v Visitor) error {
	if len(files) == 0 {
		return nil
	}
	if workers <= 0 {
		workers = Workers()
	}
	workers = min(workers, len(files))
	opts.Lenient = true

	jobs := make([]*fileJob, len(files))
	for i, fi := range files {
		jobs[i] = &fileJob{fi: fi, chunks: make(chan *chunk, readAhead)}
	}
	jobs[0].from = from
	stop := make(chan struct{})
	next := make(chan *fileJob)
	go func() {
		defer close(next)
		for _, j := range jobs {
			select {
			case next <- j:
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			free := make(chan *chunk, readAhead)
			for range readAhead {
				free <- &chunk{owner: free}
			}
			get := func() (*chunk, bool) {
				select {
				case c := <-free:
					if c.buf == nil {
						c.buf = make([]byte, chunkBytes)
					}
					return c, true
				case <-stop:
					return nil, false
				}
			}
			for j := range next {
				j.sum, j.err = frameFile(j.fi, j.from, opts, get, func(c *chunk) bool {
					c.predecode(j.fi.Path)
					select {
					case j.chunks <- c:
						return true
					case <-stop:
						c.recycle()
						return false
					}
				})
				close(j.chunks)
			}
		}()
	}

	err := consume(jobs, v)
	close(stop)
	wg.Wait()
	for _, j := range jobs { // chunks left behind by an early stop
	drain:
		for {
			select {
			case c, ok := <-j.chunks:
				if !ok {
					break drain
				}
				c.recycle()
			default:
				break drain
			}
		}
	}
	return err
}

// consume decodes the chunks of every job in order and feeds v.
func consume(jobs []*fileJob, v Visitor) error {
	var c Command
	last := jobs[len(jobs)-1].fi.ID
	for _, j := range jobs {
		var decodeDamage []*CorruptionError
		for ch := range j.chunks {
			bad := ch.bad
			for i, rec := range ch.records {
				cmd := &c
				if i < len(ch.cmds) {
					if len(bad) > 0 && bad[0].i == i {
						decodeDamage = append(decodeDamage, bad[0].err)
						bad = bad[1:]
						continue
					}
					cmd = &ch.cmds[i]
				} else if err := DecodeRecord(j.fi.Path, rec, &c); err != nil {
					decodeDamage = append(decodeDamage, err.(*CorruptionError))
					continue
				}
				if err := v.Command(rec, cmd); err != nil {
					ch.recycle()
					return err
				}
			}
			ch.recycle()
		}
		if j.err != nil {
			return j.err
		}
		j.sum.Damage = mergeDamage(j.sum.Damage, decodeDamage)
		if j.fi.ID != last {
			j.sum.NotLast()
		}
		if err := v.FileDone(&j.sum); err != nil {
			return err
		}
	}
	return nil
}

// ResumableAt reports whether reading a data file again from sum.End (a
// reading of it that found sum, the file then size bytes long) gives what
// reading it whole would from there on: the reader was outside a batch at
// End. cur are the file's bytes at End now (possibly fewer than 16), and
// curSize its size now; unchanged says whether the file is the one read
// (same identity, trusted). ReadFilesFrom can start there.
func ResumableAt(sum *FileSummary, size int64, cur []byte, curSize int64, unchanged bool) bool {
	end := sum.End
	torn := false
	for _, d := range sum.Damage {
		if d.Offset >= end {
			torn = true
		}
	}
	// fewer than a record header of zeros left before the old end of
	// the file: the reader may have stopped inside a batch
	if !unchanged && end < size && end > size-RecordHeaderSize {
		return false
	}
	switch {
	case len(cur) >= len(BatchMagic) && bytes.Equal(cur[:len(BatchMagic)], BatchMagic):
		return true // a batch starts at End: the reader was at a batch boundary
	case torn:
		return false // the data ended in a damaged batch that may have begun before End
	case unchanged:
		return true
	case end == curSize:
		return true
	case len(cur) >= len(EOFRecord) && bytes.Equal(cur[:len(EOFRecord)], EOFRecord):
		return true
	case len(cur) >= RecordHeaderSize && bytes.Equal(cur[:RecordHeaderSize], make([]byte, RecordHeaderSize)):
		return true
	}
	return false
}

package treegrep

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/fsnode"
)

// Options tune Grep.
type Options struct {
	// Matcher is the pattern (Compile).
	Matcher *Matcher
	// Count counts every matching line of a file (grep -c); else a
	// file's count stops at its first match (grep -l).
	Count bool
	// Workers is how many goroutines render and match (0: twice
	// GOMAXPROCS). More than the cores: the reads (and the chunks
	// queued, two a worker) then run further ahead of the renders, which
	// wait for them less. kahafs grep over the bench store's 180,000
	// files of REPORTS/pending/ on two cores, 8 alternated runs: 2
	// workers 1.34-1.48 s, 4 1.26-1.35 s, 8 1.29 s.
	Workers int
	// ChunkSize is the most a read of the journal takes at once, unless a
	// record is bigger (0: 1 MiB).
	ChunkSize int
	// MaxGap: records further apart than this are read in separate reads
	// (0: 16 KiB; negative: every record on its own). A queue's messages
	// are spread over the journal between other queues': reading every
	// gap too cost more system time than a read per record, and reading
	// those up to 16 KiB less than reading only those up to 4 KiB (a
	// queue of 108 k messages on the big-pending store: CPU of the
	// search, medians of 8 runs, 1.42 s against 1.65 s; 32 KiB 1.63 s).
	MaxGap int
}

// Result is a file searched.
type Result struct {
	// Count is how many lines of the file match (0 or 1 unless
	// Options.Count).
	Count int
	// Err: the file (or the directory at Path) could not be read.
	Err error
	f   fsnode.TreeFile
}

// Path is the file's path in the tree (as ls, cat and find name it),
// made when asked for.
func (r Result) Path() string { return r.f.Path() }

// Stats say what a Grep read.
type Stats struct {
	Files    int   // files searched
	Records  int   // journal records read for command files
	Bytes    int64 // bytes read from the journal
	Fallback int   // command files rendered one at a time (ReadFile's way)
}

// errChanged: the second walk of the tree met other files than the first.
var errChanged = errors.New("the tree listed other files on its second walk")

// Grep searches the files below p in the tree of s (fsnode.WalkFiles) and
// calls fn with each, in tree order, matching or not (fn chooses what it
// prints). It reads the tree in three steps:
//
//  1. a walk of the tree below p (listing a by-file/db-N.log/ directory
//     scans its data file, as ls does): each file gets its position; a
//     small file (README, summary.json, holders, info.json, stats.json, …)
//     is rendered and matched then, a command's file (a message's JSON or
//     body, under pending/, by-file/, by-transaction/, …) is noted by its
//     record;
//  2. the records, each once however many paths show it, sorted in
//     journal order, are read in order (a read per record unless they are
//     within Options.MaxGap, up to Options.ChunkSize a read) and handed to
//     Options.Workers goroutines that render the files the tree shows for
//     them (fsnode.RecordRenderer: compressed bodies inflated, as the
//     mount serves them) and count their matching lines; a few chunks at
//     most are in memory at once, and about 40 bytes a file searched;
//  3. a second walk names the files in tree order with their counts.
//
// An error reading a file (as cat would report it) is passed to fn with
// the file; an error from fn stops Grep and is returned.
func Grep(s *fsnode.Snapshot, p string, opts Options, fn func(Result) error) (Stats, error) {
	if opts.Matcher == nil {
		return Stats{}, errors.New("treegrep: no pattern")
	}
	g := &grep{opts: opts, errs: map[int32]error{}, prepared: map[fileKey]bool{}}
	if g.opts.Workers <= 0 {
		g.opts.Workers = 2 * runtime.GOMAXPROCS(0)
	}
	if g.opts.ChunkSize <= 0 {
		g.opts.ChunkSize = 1 << 20
	}
	if g.opts.MaxGap == 0 {
		g.opts.MaxGap = 16 << 10
	}
	// the data files' batch lists are made on another core while the
	// walk notes the records (0.18 s of CPU for 61 files)
	g.prepare = make(chan fileKey, 4096)
	prepDone := make(chan struct{})
	go func() {
		defer close(prepDone)
		for k := range g.prepare {
			k.src.PrepareRecords(k.id)
		}
	}()
	err := s.WalkFiles(p, g.note)
	close(g.prepare)
	if err != nil {
		<-prepDone
		return g.stats, err
	}
	g.sortRecords()
	g.read()
	<-prepDone
	g.stats.Files = len(g.files)
	seq := 0
	err = s.WalkFiles(p, func(f fsnode.TreeFile) error {
		if seq >= len(g.files) {
			return fmt.Errorf("%s: %w", f.Path(), errChanged)
		}
		slot := g.files[seq]
		seq++
		r := Result{Count: int(g.counts[slot]), Err: g.errs[slot], f: f}
		return fn(r)
	})
	if err == nil && seq != len(g.files) {
		err = errChanged
	}
	return g.stats, err
}

// grep is one Grep's state.
type grep struct {
	opts Options
	// files: the slot of each file, in walk order.
	files []int32
	// counts: the matching lines of each slot (a distinct content: a
	// small file, or one file of a record); errs: the slots that could
	// not be read (guarded by errMu while reading).
	counts []int32
	errMu  sync.Mutex
	errs   map[int32]error
	// notes: the command files of the walk (until sortRecords).
	notes []note
	srcs  []*fsnode.Snapshot
	// records: the records to read, in journal order per source.
	records []record
	stats   Stats
	// prepare: the data files whose records the walk met, for
	// PrepareRecords (each once: prepared)
	prepare  chan fileKey
	prepared map[fileKey]bool
}

type fileKey struct {
	src *fsnode.Snapshot
	id  int32
}

type note struct {
	src  int32 // in grep.srcs
	loc  codec.Location
	body bool
	file int32 // position in grep.files
}

// record is a record to read and the slots of its files (-1: not shown).
type record struct {
	src                int32
	loc                codec.Location
	jsonSlot, bodySlot int32
}

func (g *grep) newSlot() int32 {
	g.counts = append(g.counts, 0)
	return int32(len(g.counts) - 1)
}

// note takes a file of the first walk.
func (g *grep) note(f fsnode.TreeFile) error {
	src, loc, body, ok := f.Record()
	if !ok {
		slot := g.newSlot()
		g.files = append(g.files, slot)
		b, err := f.Content()
		if err != nil {
			g.errs[slot] = err
			return nil
		}
		g.counts[slot] = int32(g.opts.Matcher.Count(b, g.opts.Count))
		return nil
	}
	n := -1
	for i := len(g.srcs) - 1; i >= 0; i-- {
		if g.srcs[i] == src {
			n = i
			break
		}
	}
	if n < 0 {
		g.srcs = append(g.srcs, src)
		n = len(g.srcs) - 1
	}
	if k := (fileKey{src, loc.File}); !g.prepared[k] {
		g.prepared[k] = true
		select {
		case g.prepare <- k:
		default: // Render makes it then
		}
	}
	g.notes = append(g.notes, note{src: int32(n), loc: loc, body: body, file: int32(len(g.files))})
	g.files = append(g.files, -1)
	return nil
}

// sortRecords makes the records of the noted command files, in journal
// order, one slot per distinct file.
func (g *grep) sortRecords() {
	ns := g.notes
	sort.Slice(ns, func(i, j int) bool {
		a, b := ns[i], ns[j]
		if a.src != b.src {
			return a.src < b.src
		}
		if a.loc.File != b.loc.File {
			return a.loc.File < b.loc.File
		}
		if a.loc.Offset != b.loc.Offset {
			return a.loc.Offset < b.loc.Offset
		}
		return !a.body && b.body
	})
	for _, n := range ns {
		var r *record
		if k := len(g.records) - 1; k >= 0 && g.records[k].src == n.src && g.records[k].loc.File == n.loc.File && g.records[k].loc.Offset == n.loc.Offset {
			r = &g.records[k]
		} else {
			g.records = append(g.records, record{src: n.src, loc: n.loc, jsonSlot: -1, bodySlot: -1})
			r = &g.records[len(g.records)-1]
		}
		slot := &r.jsonSlot
		if n.body {
			slot = &r.bodySlot
		}
		if *slot < 0 {
			*slot = g.newSlot()
		}
		g.files[n.file] = *slot
	}
	g.notes = nil
}

// chunk is a read of the journal and the records in it.
type chunk struct {
	src  int32
	buf  []byte // nil: the records are rendered one at a time
	base int64  // the offset buf starts at
	recs []record
}

// read reads the records in journal order and matches their files on
// the workers.
func (g *grep) read() {
	if len(g.records) == 0 {
		return
	}
	work := make(chan chunk, g.opts.Workers)
	// free bounds the chunk buffers in memory: the one read, those
	// queued, one a worker.
	free := make(chan []byte, 2*g.opts.Workers+1)
	for range cap(free) {
		free <- nil
	}
	var fallback atomic.Int64
	var wg sync.WaitGroup
	for range g.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := make([]*fsnode.RecordRenderer, len(g.srcs))
			for c := range work {
				if rs[c.src] == nil {
					rs[c.src] = g.srcs[c.src].NewRecordRenderer()
				}
				fallback.Add(int64(g.match(rs[c.src], c)))
				if cap(c.buf) > g.opts.ChunkSize {
					c.buf = nil // a huge record's: not kept
				}
				free <- c.buf
			}
		}()
	}
	for start := 0; start < len(g.records); {
		end := start + 1
		for end < len(g.records) && g.records[end].src == g.records[start].src && g.records[end].loc.File == g.records[start].loc.File {
			end++
		}
		g.readFile(g.records[start:end], work, free)
		start = end
	}
	close(work)
	wg.Wait()
	g.stats.Records = len(g.records)
	g.stats.Fallback = int(fallback.Load())
}

// readFile reads the records of one data file (in offset order) in
// chunks and queues them.
func (g *grep) readFile(recs []record, work chan<- chunk, free chan []byte) {
	src := recs[0].src
	path, ok := g.srcs[src].DataFilePath(recs[0].loc.File)
	var fd *os.File
	if ok {
		fd, _ = os.Open(path) // on failure the files are rendered one at a time, with the error
	}
	if fd == nil {
		buf := <-free
		work <- chunk{src: src, buf: buf[:0], recs: recs}
		return
	}
	defer fd.Close()
	for i := 0; i < len(recs); {
		base := int64(recs[i].loc.Offset)
		end := base + int64(recs[i].loc.Size)
		j := i + 1
		for j < len(recs) {
			o := int64(recs[j].loc.Offset)
			e := o + int64(recs[j].loc.Size)
			if o > end+int64(g.opts.MaxGap) || e-base > int64(g.opts.ChunkSize) || o < base {
				break
			}
			end = max(end, e)
			j++
		}
		buf := <-free
		need := int(end - base)
		if cap(buf) < need {
			buf = make([]byte, max(need, g.opts.ChunkSize))
		}
		n, _ := fd.ReadAt(buf[:need], base) // a short read: those records are rendered one at a time
		g.stats.Bytes += int64(n)
		work <- chunk{src: src, buf: buf[:n], base: base, recs: recs[i:j]}
		i = j
	}
}

// match renders and matches the files of c's records; it returns how
// many it rendered one at a time.
func (g *grep) match(r *fsnode.RecordRenderer, c chunk) int {
	fallback := 0
	m, all := g.opts.Matcher, g.opts.Count
	for _, rec := range c.recs {
		var b []byte
		if from := int64(rec.loc.Offset) - c.base; c.buf != nil && from >= 0 && from+int64(rec.loc.Size) <= int64(len(c.buf)) {
			b = c.buf[from : from+int64(rec.loc.Size)]
		}
		if b != nil && r.Render(rec.loc, b, rec.jsonSlot >= 0, rec.bodySlot >= 0) {
			if rec.jsonSlot >= 0 {
				g.counts[rec.jsonSlot] = int32(m.Count(r.JSON, all))
			}
			if rec.bodySlot >= 0 {
				g.counts[rec.bodySlot] = int32(m.Count(r.Body, all))
			}
			continue
		}
		for _, f := range [2]struct {
			slot int32
			body bool
		}{{rec.jsonSlot, false}, {rec.bodySlot, true}} {
			if f.slot < 0 {
				continue
			}
			fallback++
			content, err := r.Content(rec.loc, f.body)
			if err != nil {
				g.errMu.Lock()
				g.errs[f.slot] = err
				g.errMu.Unlock()
				continue
			}
			g.counts[f.slot] = int32(m.Count(content, all))
		}
	}
	return fallback
}

package fsnode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/deliver"
	"github.com/kahafs/kahafs/openwire"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/kahafs/kahafs/store"
)

// A Snapshot is everything the tree shows about a store, read once and
// never changed: the data files with what reading them found, and the
// replay graph. A refresh builds a new Snapshot; nodes keep the one they
// were made from, so a walk that started before a refresh stays
// consistent.
//
// What is lazy, and guarded how:
//   - a data file's record index (dataFile.index, sync.Once), built the
//     first time its directory is listed or one of its commands is looked
//     up, by scanning that file again up to the end the snapshot saw;
//   - a data file's descriptor for reading commands (dataFile.open,
//     sync.Once), kept for the life of the Snapshot so that a file the
//     broker deletes later can still be read;
//   - a data file's read-ahead bytes for rendering its commands
//     (dataFile.readRecord, behind its mutex);
//   - rendered content until it is read or pushed: commands in recent,
//     small files (README, summary.json, ...) in their nodes.
//
// Everything else is written by build before the Snapshot is published
// and only read afterwards.
type Snapshot struct {
	Gen   uint64 // generation: 1 for the first snapshot, +1 per refresh
	Store *codec.Store
	Read  time.Time // when reading started

	files    []*dataFile // replay (id) order
	commands int64       // decoded commands, all files
	bytes    int64       // apparent size, all files
	alloc    int64       // bytes on disk, all files
	opts     codec.ReadOptions
	m        *mountState
	graph    *refgraph.Graph
	analysis *store.Analysis     // what the graph came from (metrics.go)
	cache    replaycache.Outcome // how the analysis used the cache
	mfl      replaycache.MaxFileLength
	// wireVersion is the OpenWire version of the store's messages
	// (kahaindex.Head.MessageOpenWireVersion).
	wireVersion int

	dt     destTypes     // by-destination groups, lazy
	tn     txNames       // by-transaction names, lazy
	sel    selected      // selector subscriptions' deliveries, lazy
	recent recentRenders // commands rendered by lookups, for the reads that follow
	ids    messageIDs    // held messages by id, lazy
	pl     planState     // the unpin plan's resolver, lazy (plan.go)
	met    renderedOnce  // the metrics file (metrics.go)

	// storeNo is, for a store of a layout of several, its number (1, 2,
	// …) in the layout, which its inode numbers carry (ino); 0 otherwise.
	storeNo uint64
	// layout is set on the snapshot of a layout of several stores: the
	// snapshots of its stores (layout.go). Such a snapshot has no files
	// and no graph of its own.
	layout *layoutView
}

// messageIDs is the index by-message-id/ and FindMessage look messages up
// in, made at the first lookup or, on a mount, ahead of it (indexAhead).
type messageIDs struct {
	once sync.Once
	x    *refgraph.IDIndex
	made atomic.Bool // x is made (for tests: the index made ahead)
}

// selected keeps, per durable subscription with a selector, what the
// broker delivers to it (package deliver): worked out when first asked for,
// since it reads every candidate message.
type selected struct {
	mu sync.Mutex // guards m
	m  map[*refgraph.Subscription]*selection
}

type selection struct {
	once      sync.Once
	delivered []*refgraph.Message
	skipped   []deliver.Skipped
}

// delivered returns what the broker hands sub (package deliver): its
// candidates, less those its selector does not match and those its store
// cursor's count does not reach.
func (s *Snapshot) delivered(sub *refgraph.Subscription) *selection {
	if !sub.HasSelector && deliver.Reaches(sub) {
		return &selection{delivered: sub.Pending()}
	}
	s.sel.mu.Lock()
	if s.sel.m == nil {
		s.sel.m = map[*refgraph.Subscription]*selection{}
	}
	x := s.sel.m[sub]
	if x == nil {
		x = &selection{}
		s.sel.m[sub] = x
	}
	s.sel.mu.Unlock()
	x.once.Do(func() {
		var err error
		x.delivered, x.skipped, err = deliver.Subscription(sub, deliver.StoreReader(s.Store), s.wireVersion)
		if err != nil && s.m != nil {
			s.m.logf("%v", err)
		}
	})
	return x
}

// recentRenders keeps the last commands and message bodies rendered by a
// lookup so that the read that usually follows takes the content instead
// of rendering it a second time (a body of megabytes is read in many
// calls); the read that reaches the end drops it. At most recentSize
// entries and, beyond the last one put, recentBytes of content; a miss
// only costs a render.
type recentRenders struct {
	mu    sync.Mutex // guards the fields below
	data  map[renderKey]recentRender
	ring  [recentSize]renderKey // the key put n-th is at ring[n%recentSize]
	n     int
	bytes int // of the content in data
}

// recentRender is content kept in recentRenders, with the number of its
// put (its ring slot: a key dropped and put again has a newer slot, and
// its older one, when reused, must not remove it).
type recentRender struct {
	b  []byte
	at int
}

// renderKey names a rendered file: a command's JSON or a message's body.
type renderKey struct {
	loc  codec.Location
	body bool
}

// recentSize holds what a walk's lookups render ahead (lookAhead) and
// more.
const recentSize = 1024

// recentBytes bounds the content kept, large bodies being what it is
// kept for.
const recentBytes = 64 << 20

func (r *recentRenders) put(k renderKey, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.data == nil {
		r.data = make(map[renderKey]recentRender, recentSize)
	}
	if old, ok := r.data[k]; ok {
		r.bytes += len(b) - len(old.b)
		r.data[k] = recentRender{b, old.at} // already in the ring
		return
	}
	if r.n >= recentSize {
		r.evict(r.n - recentSize)
	}
	r.ring[r.n%recentSize] = k
	r.data[k] = recentRender{b, r.n}
	r.bytes += len(b)
	r.n++
	// Over the byte bound: drop the oldest, never the one just put.
	for j := max(r.n-recentSize, 0); r.bytes > recentBytes && j < r.n-1; j++ {
		r.evict(j)
	}
}

// evict removes the content put at the at-th put, if its key has not
// been put again since.
func (r *recentRenders) evict(at int) {
	k := r.ring[at%recentSize]
	if e, ok := r.data[k]; ok && e.at == at {
		r.remove(k)
	}
}

func (r *recentRenders) remove(k renderKey) {
	if e, ok := r.data[k]; ok {
		r.bytes -= len(e.b)
		delete(r.data, k)
	}
}

// get returns the content rendered for k, if still there.
func (r *recentRenders) get(k renderKey) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.data[k]
	return e.b, ok
}

// drop forgets the content rendered for k (it has been read).
func (r *recentRenders) drop(k renderKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.remove(k)
}

// dataFile is one db-N.log as the snapshot saw it.
type dataFile struct {
	snap   *Snapshot
	info   codec.FileInfo
	sum    codec.FileSummary // End, Records, Batches, Damage, ...
	byType [codec.NumEntryTypes]int64
	count  int64 // decoded commands (sum of byType)

	indexOnce sync.Once
	idx       []recEntry // decoded commands in offset order (INVARIANT: len == count unless the file changed)
	msgs      []int32    // positions in idx of the message commands (ADD, UPDATE): they have a .body
	idxErr    error

	// batches: the file's batches, known from their control records
	// alone (see located); nil when the file is not read so
	batchOnce sync.Once
	batches   []batchSpan

	openOnce sync.Once
	fd       *os.File
	openErr  error

	// ahead holds the bytes of the file from aheadOff on: a listing
	// renders its commands in journal order, one read for many.
	aheadMu  sync.Mutex // guards ahead and aheadOff
	ahead    []byte
	aheadOff int64
}

// readAhead is how much of a data file one read for a render takes.
const readAhead = 64 << 10

// readRecord reads the record at e into dst (len(dst) == e.size), from the
// read-ahead bytes when they hold it. It returns how many bytes of dst it
// filled, and the read's error when that is fewer.
func (f *dataFile) readRecord(fd *os.File, dst []byte, e recEntry) (int, error) {
	off := int64(e.off)
	if len(dst) > readAhead/2 {
		return fd.ReadAt(dst, off)
	}
	f.aheadMu.Lock()
	defer f.aheadMu.Unlock()
	if off < f.aheadOff || off+int64(len(dst)) > f.aheadOff+int64(len(f.ahead)) {
		if cap(f.ahead) < readAhead {
			f.ahead = make([]byte, readAhead)
		}
		n, err := fd.ReadAt(f.ahead[:readAhead], off)
		f.ahead, f.aheadOff = f.ahead[:n], off
		if n < len(dst) {
			return copy(dst, f.ahead), err
		}
	}
	return copy(dst, f.ahead[off-f.aheadOff:]), nil
}

// recEntry locates one decoded command of a file.
type recEntry struct {
	off, size, batch int32
	typ              codec.EntryType
}

func (e recEntry) loc(file int32) codec.Location {
	return codec.Location{File: file, Offset: e.off, Size: e.size}
}

// open returns the descriptor commands are read through.
func (f *dataFile) open() (*os.File, error) {
	f.openOnce.Do(func() {
		fd, err := os.Open(f.info.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				err = &codec.CorruptionError{File: f.info.Path, FileID: f.info.ID, Err: codec.ErrMissingFile, Detail: "deleted since the store was read"}
			}
			f.openErr = err
			return
		}
		f.fd = fd
	})
	return f.fd, f.openErr
}

// index returns the file's decoded commands in offset order, scanning the
// file the first time. Records past the end the snapshot saw (written by a
// running broker since) are left out, so the listing agrees with the rest
// of the snapshot.
func (f *dataFile) index() ([]recEntry, error) {
	f.indexOnce.Do(func() {
		idx := make([]recEntry, 0, f.count)
		end := f.sum.End
		_, err := codec.ScanFile(f.info, f.snap.opts, func(rec codec.Record, c *codec.Command) error {
			if int64(rec.Loc.Offset) >= end {
				return nil
			}
			if hasBody(c.Type) {
				f.msgs = append(f.msgs, int32(len(idx)))
			}
			idx = append(idx, recEntry{off: rec.Loc.Offset, size: rec.Loc.Size, batch: rec.Batch, typ: c.Type})
			return nil
		})
		if err != nil {
			f.idxErr = err
			return
		}
		if int64(len(idx)) != f.count && f.snap.m != nil {
			f.snap.m.logf("%s: %d commands now, %d when the store was read: %v", f.info.Name, len(idx), f.count, errChanged)
		}
		f.idx = idx
	})
	return f.idx, f.idxErr
}

// batchSpan is a batch of a data file: its control record at off, its
// records up to end.
type batchSpan struct{ off, end int32 }

// located returns the index entry of the command at loc from the record
// itself, without the file's index: its size from loc, its type from its
// header, its batch from the batches' control records (batchIndex). A
// pending message is rendered so: the index of every record of a 32 MiB
// file (a scan of it, and 40 k entries kept) for one message in it made a
// grep of a pending/ whose messages are in every file scan the whole
// journal and keep an entry per record. ok is false where this cannot
// tell (no size, a file read with damage, a record outside the batches
// or not the record loc says): index() then does.
func (f *dataFile) located(loc codec.Location) (recEntry, bool) {
	if loc.Size <= codec.RecordHeaderSize {
		return recEntry{}, false
	}
	spans := f.batchIndex()
	i := sort.Search(len(spans), func(i int) bool { return spans[i].end > loc.Offset })
	if i == len(spans) || loc.Offset < spans[i].off+codec.BatchHeaderSize || loc.Offset+loc.Size > spans[i].end {
		return recEntry{}, false
	}
	fd, err := f.open()
	if err != nil {
		return recEntry{}, false
	}
	var h [codec.RecordHeaderSize + 1]byte
	if n, _ := f.readRecord(fd, h[:], recEntry{off: loc.Offset}); n < len(h) {
		return recEntry{}, false
	}
	if int32(binary.BigEndian.Uint32(h[:])) != loc.Size || h[4] != codec.RecordTypeUser {
		return recEntry{}, false
	}
	typ := codec.EntryType(h[codec.RecordHeaderSize])
	if !typ.Valid() {
		return recEntry{}, false
	}
	return recEntry{off: loc.Offset, size: loc.Size, batch: spans[i].off, typ: typ}, true
}

// batchIndex lists the batches of a file read clean, from their control
// records, up to where the store was read (where index() reads and
// decodes the whole file). The headers are read batchChunk bytes at a
// time, not one read each: a broker writes batches a few KiB long when its
// producers are slow (about 9,600 in a 32 MiB file), and a read a header
// cost 1.5 s of CPU for the 3 GB journal of the bench's broker store
// (kahafs grep of a queue in every file), 256 KiB reads 0.6 s, mapping the
// file 0.85 s (a TLB miss a page).
func (f *dataFile) batchIndex() []batchSpan {
	f.batchOnce.Do(func() {
		if !f.sum.Clean() {
			return
		}
		fd, err := f.open()
		if err != nil {
			return
		}
		buf := batchBufs.Get().(*[]byte)
		defer batchBufs.Put(buf)
		f.batches = readBatches(fd, f.sum.End, f.sum.Batches, *buf)
	})
	return f.batches
}

// batchChunk is the most batchIndex reads at once: larger reads cost more
// (4 MiB: 0.3 s more for the bench's 3 GB, the buffer out of the caches).
const batchChunk = 256 << 10

var batchBufs = sync.Pool{New: func() any { b := make([]byte, batchChunk); return &b }}

// readBatches lists the batches of fd up to end, reading into buf, the
// list made for batches (the count the scan saw). It stops at the first
// header that is not one, or whose batch passes end, and where the file
// cannot be read (the batches before are kept).
func readBatches(fd *os.File, end int64, batches int, buf []byte) []batchSpan {
	spans := make([]batchSpan, 0, batches)
	var from int64 // the file's offset of have[0]
	var have []byte
	for pos := int64(0); pos+codec.BatchHeaderSize <= end; {
		if pos+codec.BatchHeaderSize > from+int64(len(have)) {
			from = pos
			n, _ := fd.ReadAt(buf[:min(int64(len(buf)), end-from)], from)
			if n < codec.BatchHeaderSize {
				break
			}
			have = buf[:n]
		}
		h := have[pos-from : pos-from+codec.BatchHeaderSize]
		length, _, ok := codec.BatchHeader(h)
		next := pos + codec.BatchHeaderSize + int64(length)
		if !ok || length <= 0 || next > end {
			break
		}
		spans = append(spans, batchSpan{int32(pos), int32(next)})
		pos = next
	}
	return spans
}

// find returns the index entry of the command at offset off.
func (f *dataFile) find(off int32) (recEntry, bool, error) {
	idx, err := f.index()
	if err != nil {
		return recEntry{}, false, err
	}
	i := sort.Search(len(idx), func(i int) bool { return idx[i].off >= off })
	if i < len(idx) && idx[i].off == off {
		return idx[i], true, nil
	}
	return recEntry{}, false, nil
}

// hasBody: commands of this type hold a message, whose body the tree
// shows in a .body file next to the command's .json.
func hasBody(t codec.EntryType) bool {
	return t == codec.AddMessageCommand || t == codec.UpdateMessageCommand
}

// render returns the command at e as one line of JSON, the same line
// `kahafs dump --json` prints for it, in a slice of its own and of its
// exact length. The record (which holds the whole message body, up to
// megabytes) and the line are built in pooled buffers: a walk renders
// every command, and the garbage would otherwise cost more than the
// rendering.
func (f *dataFile) render(e recEntry) ([]byte, error) {
	return f.renderAs(e, false)
}

// renderBody returns the body of the message of the command at e (a .body
// file: see openwire.Message.AppendRawBody).
func (f *dataFile) renderBody(e recEntry) ([]byte, error) {
	return f.renderAs(e, true)
}

func (f *dataFile) renderAs(e recEntry, body bool) ([]byte, error) {
	bufs := renderBufs.Get().(*renderBuf)
	defer renderBufs.Put(bufs)
	j, b, err := f.renderTo(bufs, e, !body, body)
	if err != nil {
		return nil, err
	}
	if body {
		return bytes.Clone(b), nil
	}
	return bytes.Clone(j), nil
}

// renderTo renders the command at e into bufs: with json its JSON line
// (what render returns), with body its message's body (what renderBody
// returns), decoding the record once for both. The slices are bufs's,
// valid until its next use.
func (f *dataFile) renderTo(bufs *renderBuf, e recEntry, json, body bool) (jsonOut, bodyOut []byte, err error) {
	fd, err := f.open()
	if err != nil {
		return nil, nil, err
	}
	if cap(bufs.rec) < int(e.size) {
		bufs.rec = make([]byte, e.size)
	}
	n, rerr := f.readRecord(fd, bufs.rec[:e.size], e)
	loc := e.loc(f.info.ID)
	data, err := codec.RecordIn(f.info, loc, bufs.rec[:n], int64(e.off), rerr)
	if err != nil {
		return nil, nil, err
	}
	rec := codec.Record{Loc: loc, Batch: e.batch, Data: data}
	c := &bufs.cmd
	*c = codec.Command{}
	defer func() {
		*c = codec.Command{} // no references into data beyond this call
		// Buffers grown past maxPooledRecord (a huge message) are not
		// kept; what this call returns stays valid.
		if cap(bufs.rec) > maxPooledRecord {
			bufs.rec = nil
		}
		if cap(bufs.out) > maxPooledRecord {
			bufs.out = nil
		}
		if cap(bufs.body) > maxPooledRecord {
			bufs.body = nil
		}
	}()
	if err := codec.DecodeRecord(f.info.Path, rec, c); err != nil {
		return nil, nil, err
	}
	if c.Type != e.typ {
		return nil, nil, &codec.CorruptionError{File: f.info.Path, FileID: f.info.ID, Offset: int64(e.off), End: int64(e.off) + int64(e.size),
			Err: errChanged, Detail: fmt.Sprintf("the command there is now a %s, not a %s", c.Type, e.typ)}
	}
	bufs.bodyDone = false
	if json {
		// The message is done with before bufs.rec is used again.
		opts := codec.JSONOptions{OpenWire: true, OpenWireVersion: f.snap.wireVersion, ShareText: true}
		if body {
			// The body from the message the JSON decodes (as
			// appendBody renders it from its own decoding).
			opts.Message = bufs.takeBody
		}
		bufs.out = codec.AppendCommandJSON(bufs.out[:0], rec, c, opts)
		bufs.out = append(bufs.out, '\n')
		jsonOut = bufs.out
	}
	if body {
		if !bufs.bodyDone {
			bufs.body = f.snap.appendBody(bufs.body[:0], c)
		}
		bodyOut = bufs.body
	}
	return jsonOut, bodyOut, nil
}

// appendBody appends the body of the message c holds; a blob that is not
// a message has none.
func (s *Snapshot) appendBody(dst []byte, c *codec.Command) []byte {
	if !hasBody(c.Type) {
		return dst
	}
	// Nothing of m is kept: its text may share c.Message's bytes.
	m, _ := openwire.Decoder{Version: s.wireVersion, ShareText: true}.Decode(c.Message)
	if m == nil {
		return dst
	}
	return m.AppendRawBody(dst)
}

// renderBuf is the scratch space of one render.
type renderBuf struct {
	rec  []byte // the record read from the data file
	cmd  codec.Command
	out  []byte // the JSON line
	body []byte // the message's body
	// takeBody renders body from the message the JSON decodes;
	// bodyDone: it did.
	takeBody func(*openwire.Message)
	bodyDone bool
}

func newRenderBuf() *renderBuf {
	r := new(renderBuf)
	r.takeBody = func(m *openwire.Message) {
		r.body, r.bodyDone = r.body[:0], true
		if m != nil {
			r.body = m.AppendRawBody(r.body)
		}
	}
	return r
}

var renderBufs = sync.Pool{New: func() any { return newRenderBuf() }}

// maxPooledRecord: a buffer grown past this (a huge message) is not
// kept in the pool.
const maxPooledRecord = 1 << 20

// file returns the data file with the given id.
func (s *Snapshot) file(id int32) *dataFile {
	i := sort.Search(len(s.files), func(i int) bool { return s.files[i].info.ID >= id })
	if i < len(s.files) && s.files[i].info.ID == id {
		return s.files[i]
	}
	return nil
}

// Files is the number of data files.
func (s *Snapshot) Files() int {
	if s.layout != nil {
		n := 0
		for _, ls := range s.layout.stores {
			if ls.snap != nil {
				n += len(ls.snap.files)
			}
		}
		return n
	}
	return len(s.files)
}

// Commands is the number of decoded commands in all data files.
func (s *Snapshot) Commands() int64 { return s.commands }

// Graph is the replay graph of the snapshot.
func (s *Snapshot) Graph() *refgraph.Graph { return s.graph }

// Cache says how reading the store used the analysis cache (Options.Cache):
// replaycache.Hit when no journal byte was read.
func (s *Snapshot) Cache() replaycache.Outcome { return s.cache }

// MaxFileLength is the journalMaxFileLength pinned, free and the holders
// files assume, and where it came from (Options.MaxFileLength, or the
// store).
func (s *Snapshot) MaxFileLength() replaycache.MaxFileLength { return s.mfl }

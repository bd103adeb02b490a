package refgraph

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/binenc"
)

// A Builder's replay state can be saved between two Visitor calls and a
// Builder resumed from it: fed the records that follow, the resumed
// Builder builds exactly the Graph the uninterrupted one would have. This
// is what lets a persisted analysis cache (package replaycache) skip the
// journal it has already replayed.
//
// The state is the live replay state only — destinations with their
// pending entries, subscriptions, open transactions, the kept finished
// transactions, ack-map references, per-file aggregates, warnings — so
// its size follows the live messages, not the journal. Message bodies are
// never part of it.
//
// The state is the Builder's model (model.go), and nothing else.
// Encoding (internal/binenc varints), version stateVersion:
//
//	version | replay key | the fields of the model, in the order of
//	model.fields (the order of its fields): files | current file |
//	position (the scalars: restart phase, counters, audit / ack-map /
//	last-update locations, compaction skipping; position.fields) |
//	destinations | destination events | message-id table | transactions
//	| finished transactions | ack maps | index keys and differences |
//	compaction files met early | warnings
//
// Decoding checks every reference it restores, so a state that decodes
// cannot make the Builder fail or loop later; allocations are bounded by
// the state's size. Completed transactions, which a mount keeps without
// bound (KeepCompleted < 0), are only checked when resumed and made when
// the Graph's transactions are first asked for (lazyTxs).
//
// Every field of Builder that Command, FileDone or Build reads is in its
// model, except what derives from Options (recovery position, keep) or
// from the files (present, maxID, fileIx): TestStateCoversBuilder fails
// when a field is added to Builder without being handled here, and
// TestModelFieldsListed when one is added to the model without its line
// in model.fields.

// stateVersion is the version of the state encoding. Bump it whenever the
// encoding or the meaning of a saved field changes: a state of another
// version is refused (ErrStateMismatch), and its cache is rebuilt.
const stateVersion = 18 // 18: a free list (db.free) that hands out a page the index uses is damage (kahaindex freeListClash); 17: a prepared transaction kept apart from an in-flight one with its id (preparedKey, seed 496); 16: the sum of each location index's keys checked, the files they name kept (model.keyFiles); 15: the put files and unknown trees' files dropped (an unknown tree keeps nothing itself: the index is damaged); 14: the index's damage kept (model.indexDamage, KindIndexDamaged); 13: a location index kahafs could not read is unknown, the files its destination's locations were put in kept (putFiles); 12: the ack-positions list's nodes and tail, the subscription cache (acklist.go, seed 290); 11: the location index's shape (loctree.go, seed 340); 10: transactions met before an index's recovery position past the last record dropped (seed 180); 9: the index's ack map loaded also where the replay skips its record; 8: a subscription's first adding command, the entries' flagTx, spannedTx (rebuild.go)

// ErrStateMismatch: a saved state does not fit the Options it is resumed
// with (another index position, journalMaxFileLength, mode, ...) or was
// written by another version of the encoding.
var ErrStateMismatch = errors.New("refgraph: saved replay state does not match the options")

// ErrForwardedBehind: a saved state does not fit the store because an
// ack-compaction file whose source is gone lies behind the saved replay
// position (its forwarded records belong there); it wraps
// ErrStateMismatch.
var ErrForwardedBehind = fmt.Errorf("%w: an ack-compaction file whose source is gone appeared behind the saved replay", ErrStateMismatch)

// errIndexAhead: the adopted index holds messages whose records the
// journal read so far does not (see Builder.indexAhead).
var errIndexAhead = errors.New("refgraph: the index refers to records that could not be read: state not saved")

// ErrStateCorrupt: a saved state does not decode.
var ErrStateCorrupt = errors.New("refgraph: saved replay state is corrupt")

// StateKey is what ResumeBuilderBytes checks a saved state against
// besides its content: the state encoding's version and replayKey. A
// result derived from a state (replaycache's side files) is valid where
// this key and the files are the same.
func (o Options) StateKey() []byte {
	var w binenc.Writer
	w.Uvarint(stateVersion)
	w.Bytes(o.replayKey())
	return w.B
}

// replayKey encodes the options a replay depends on besides the files:
// the index positions the Builder uses, journalMaxFileLength, the mode,
// the restart trace size and the bound on finished transactions.
func (o Options) replayKey() []byte {
	o = o.WithDefaults()
	var w binenc.Writer
	w.Bool(o.Index != nil)
	if m := o.Index; m != nil {
		for _, l := range []*codec.Location{m.LastUpdate, m.FirstInProgressTx, m.ProducerAudit, m.AckMap} {
			w.Bool(l != nil)
			if l != nil {
				w.Location(*l)
			}
		}
	}
	w.Bool(o.LoadIndex != nil)
	w.String(o.IndexStamp)
	w.Varint(o.MaxFileLength)
	w.Bool(o.Running)
	w.Varint(int64(o.RestartTraceSize))
	w.Int(o.KeepCompleted)
	return w.B
}

// filePaths maps file ids to the paths of Options.Files: damage that names
// a file by its path is stored without it and resumed with the path of
// the new reading (the same store may be named by another path).
func (o Options) filePaths() map[int32]string {
	m := make(map[int32]string, len(o.Files))
	for _, fi := range o.Files {
		m[fi.ID] = fi.Path
	}
	return m
}

// SaveState writes the Builder's complete replay state to w. It may be
// called between any two Visitor calls, and the Builder can go on being
// fed afterwards. A spent Builder (after Build) has no state to save.
func (b *Builder) SaveState(w io.Writer) error {
	buf, err := b.AppendState(nil)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// AppendState is SaveState appending to dst.
func (b *Builder) AppendState(dst []byte) ([]byte, error) {
	if b.built {
		return dst, errBuilt
	}
	b.finishAdoption()
	if b.indexAhead {
		return dst, errIndexAhead
	}
	w := &binenc.Writer{B: dst}
	w.Uvarint(stateVersion)
	w.Bytes(b.opts.replayKey())
	if err := b.model.save(w, b.opts.filePaths()); err != nil {
		return dst, err
	}
	return w.B, nil
}

// stateWriter writes the fields of a model (model.fields).
type stateWriter struct {
	w     *binenc.Writer
	paths map[int32]string // Options.filePaths
	err   error            // the first error
}

// files, in the order they were added
func (s *stateWriter) files(files *[]*File) {
	w := s.w
	w.Uvarint(uint64(len(*files)))
	for _, f := range *files {
		w.Varint(int64(f.ID))
		w.String(f.Name)
		w.Varint(f.Size)
		w.Varint(f.End)
		w.Int(f.Commands)
		w.Int(f.Skipped)
		w.Bool(f.Compaction)
		w.Varint(int64(f.Source))
		if err := w.DamageList(f.Damage, s.paths[f.ID]); err != nil && s.err == nil {
			s.err = err
		}
	}
}

// curFile: by id
func (s *stateWriter) curFile(f **File) {
	s.w.Bool(*f != nil)
	if *f != nil {
		s.w.Varint(int64((*f).ID))
	}
}

func (s *stateWriter) position(p *position) { savePosition(s.w, p) }

// dests: per type, by name
func (s *stateWriter) dests(dests *[4]map[string]*dest) {
	for _, m := range dests {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		s.w.Uvarint(uint64(len(names)))
		for _, n := range names {
			saveDest(s.w, m[n])
		}
	}
}

func (s *stateWriter) events(events *[]destEvent) {
	w := s.w
	w.Uvarint(uint64(len(*events)))
	for _, e := range *events {
		w.String(e.key)
		w.Bool(e.create)
		w.Location(e.loc)
	}
}

// ids: message-id prefixes: slots (freed ones empty), references, free
// list, and the live name -> slot map
func (s *stateWriter) ids(t **idTable) {
	w, ids := s.w, *t
	w.Uvarint(uint64(len(ids.names)))
	for i, n := range ids.names {
		w.String(n)
		w.Varint(int64(ids.refs[i]))
	}
	w.Uvarint(uint64(len(ids.free)))
	for _, x := range ids.free {
		w.Uvarint(uint64(x))
	}
	byName := make([]string, 0, len(ids.byName))
	for n := range ids.byName {
		byName = append(byName, n)
	}
	sort.Strings(byName)
	w.Uvarint(uint64(len(byName)))
	for _, n := range byName {
		w.String(n)
		w.Uvarint(uint64(ids.byName[n]))
	}
}

// txs: open transactions, in the order they were met
func (s *stateWriter) txs(m *map[string]*txState) {
	w, txs := s.w, *m
	keys := make([]string, 0, len(txs))
	for k := range txs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ti, tj := txs[keys[i]], txs[keys[j]]
		if ti.order != tj.order {
			return ti.order < tj.order
		}
		return keys[i] < keys[j]
	})
	w.Uvarint(uint64(len(keys)))
	for _, k := range keys {
		t := txs[k]
		w.String(k)
		w.String(t.id)
		w.Bool(t.xa)
		w.Varint(int64(t.rbSize))
		w.Bool(t.prepared)
		w.Varint(t.order)
		w.Uvarint(uint64(len(t.ops)))
		for _, op := range t.ops {
			saveTxOp(w, op)
		}
		saveLocs(w, t.cmds)
	}
}

// finished transactions (the ring, as it is)
func (s *stateWriter) finished(f *finished) { saveDone(s.w, f.lazy, f.done) }

func (s *stateWriter) ackMap(m *map[int32][]int32) { saveAckMap(s.w, *m) }

func (s *stateWriter) optAckMap(m *map[int32][]int32) {
	s.w.Bool(*m != nil)
	if *m != nil {
		saveAckMap(s.w, *m)
	}
}

func (s *stateWriter) strings(l *[]string) {
	s.w.Uvarint(uint64(len(*l)))
	for _, x := range *l {
		s.w.String(x)
	}
}

func (s *stateWriter) diffs(l *[]IndexDiff) {
	w := s.w
	w.Uvarint(uint64(len(*l)))
	for _, d := range *l {
		w.String(d.Kind)
		w.String(d.Destination)
		w.String(d.Subscription)
		w.Int(d.Count)
		w.Uvarint(uint64(len(d.MessageIDs)))
		for _, id := range d.MessageIDs {
			w.String(id)
		}
	}
}

func (s *stateWriter) int32s(l *[]int32) {
	s.w.Uvarint(uint64(len(*l)))
	for _, x := range *l {
		s.w.Varint(int64(x))
	}
}

func saveDest(w *binenc.Writer, d *dest) {
	w.String(d.name)
	w.Varint(d.nextSeq)
	w.Varint(d.count)
	w.Varint(d.bytes)
	w.Varint(d.statDelta)
	seqs := d.entries.seqs()
	slices.Sort(seqs)
	w.Uvarint(uint64(len(seqs)))
	prev := int64(0)
	for _, s := range seqs {
		e, _ := d.entries.get(s)
		w.Varint(s - prev) // ascending: small deltas
		prev = s
		w.Uvarint(uint64(e.id.prefix))
		w.Varint(e.id.seq)
		w.Location(e.loc)
		w.Varint(int64(e.prio))
		w.Varint(int64(e.size))
		w.Byte(byte(e.class))
		w.Byte(e.flags)
		// the id map normally points back at the entry
		if s2, ok := d.ids.get(e.id); ok && s2 == s {
			w.Bool(true)
		} else {
			w.Bool(false)
		}
	}
	// id map entries that do not point back at their entry
	var extra []msgKey
	d.ids.each(func(k msgKey, s int64) {
		if e, ok := d.entries.get(s); !ok || e.id != k {
			extra = append(extra, k)
		}
	})
	sort.Slice(extra, func(i, j int) bool {
		if extra[i].prefix != extra[j].prefix {
			return extra[i].prefix < extra[j].prefix
		}
		return extra[i].seq < extra[j].seq
	})
	w.Uvarint(uint64(len(extra)))
	for _, k := range extra {
		w.Uvarint(uint64(k.prefix))
		w.Varint(k.seq)
		s, _ := d.ids.get(k)
		w.Varint(s)
	}
	w.Uvarint(uint64(len(d.subs)))
	for _, s := range d.subs {
		w.String(s.key)
		w.Bytes(s.info)
		w.Bool(s.retro)
		w.Location(s.loc)
		w.Varint(s.lastAck)
		w.Bool(s.hasFirst)
		w.Location(s.first)
		w.Bool(s.hasPos)
		w.Uvarint(uint64(len(s.pos.r)))
		for _, r := range s.pos.r {
			w.Varint(r.first)
			w.Varint(r.last)
		}
	}
	saveLocTree(w, d.locs)
	saveAckList(w, d)
}

// saveDone writes finished transactions: those kept encoded (l, may be
// nil), then done. A mount keeps them all (hundreds of thousands): the
// ids come first as one string, and the totals of their bytes and
// locations before them, so that the decoder allocates them at once (or,
// for a lazy list, only checks them).
func saveDone(w *binenc.Writer, l *lazyTxs, done []*Transaction) {
	if l == nil {
		l = &lazyTxs{}
	}
	more := &lazyTxs{}
	for _, t := range done {
		more.add(t.ID, t.Kind, t.State, t.Commands, t.Ops)
	}
	w.Uvarint(uint64(l.n + more.n))
	w.Uvarint(uint64(l.idLen + more.idLen))
	w.Uvarint(uint64(l.idBytes + more.idBytes))
	for _, blk := range append(l.ids[:len(l.ids):len(l.ids)], more.ids...) {
		w.B = append(w.B, blk...)
	}
	w.Uvarint(uint64(l.total + more.total))
	for _, blk := range append(l.recs[:len(l.recs):len(l.recs)], more.recs...) {
		w.B = append(w.B, blk...)
	}
}

func saveTxOp(w *binenc.Writer, op txOp) {
	w.Bool(op.add)
	w.Varint(int64(op.typ))
	w.String(op.name)
	w.Uvarint(uint64(op.id.prefix))
	w.Varint(op.id.seq)
	w.Location(op.loc)
	w.Varint(int64(op.prio))
	w.Bool(op.supported)
	w.Varint(int64(op.size))
	w.String(op.subKey)
	w.Bool(op.hasSub)
	w.Bool(op.ackEmpty)
}

// saveLocs writes a list of locations (nil kept apart from empty), each
// as a delta from the one before: most are in the same file, a little
// further.
func saveLocs(w *binenc.Writer, locs []codec.Location) {
	w.Bool(locs != nil)
	w.Uvarint(uint64(len(locs)))
	var prev codec.Location
	for _, l := range locs {
		w.Varint(int64(l.File) - int64(prev.File))
		if l.File == prev.File {
			w.Varint(int64(l.Offset) - int64(prev.Offset))
		} else {
			w.Varint(int64(l.Offset))
		}
		w.Varint(int64(l.Size))
		prev = l
	}
}

// saveCode writes s as 0 or 1 when it is a or b, else as 2 and s.
func saveCode(w *binenc.Writer, s, a, b string) {
	switch s {
	case a:
		w.Byte(0)
	case b:
		w.Byte(1)
	default:
		w.Byte(2)
		w.String(s)
	}
}

func saveAckMap(w *binenc.Writer, m map[int32][]int32) {
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortInt32(keys)
	w.Uvarint(uint64(len(keys)))
	for _, k := range keys {
		w.Varint(int64(k))
		v := m[k]
		w.Bool(v != nil)
		w.Uvarint(uint64(len(v)))
		for _, x := range v {
			w.Varint(int64(x))
		}
	}
}

// ResumeBuilder makes a Builder from a state SaveState wrote, to be fed
// the records that follow the point where it was saved. opts must be the
// options the state was saved with, except Files, which may list data
// files added since (they are added to the state's files); a state saved
// with other options is refused with ErrStateMismatch, one that does not
// decode with ErrStateCorrupt. r is read to its end.
func ResumeBuilder(opts Options, r io.Reader) (*Builder, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return resumeBuilder(opts, data)
}

// ResumeBuilderBytes is ResumeBuilder over a state in memory. The Builder
// (and the Graph it builds) may refer to state: it must not be modified
// afterwards. With KeepCompleted < 0 the finished transactions stay in
// their saved form until Graph.Transactions is first called.
func ResumeBuilderBytes(opts Options, state []byte) (*Builder, error) {
	return resumeBuilder(opts, state)
}

func resumeBuilder(opts Options, data []byte) (*Builder, error) {
	rd := binenc.NewReader(data)
	if v := rd.Uvarint(); rd.Err() == nil && v != stateVersion {
		return nil, fmt.Errorf("%w: state version %d, want %d", ErrStateMismatch, v, stateVersion)
	}
	key := rd.Bytes()
	if rd.Err() != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateCorrupt, rd.Err())
	}
	if !bytes.Equal(key, opts.replayKey()) {
		return nil, fmt.Errorf("%w: saved with other index positions, journalMaxFileLength, mode or transaction bound", ErrStateMismatch)
	}
	// NewBuilder without the files: they come from the state, then the
	// ones opts adds.
	files := opts.Files
	opts.Files = nil
	b := NewBuilder(opts)
	b.opts.Files = files
	d := &stateDecoder{r: rd, data: data, b: b, paths: b.opts.filePaths(), names: strTable{}}
	if err := d.decode(); err != nil {
		b.haltFeed()
		return nil, fmt.Errorf("%w: %v", ErrStateCorrupt, err)
	}
	b.names = d.names
	for _, fi := range files {
		b.addFile(fi)
	}
	if err := b.resumeEarly(); err != nil {
		b.haltFeed()
		return nil, err
	}
	return b, nil
}

// resumeEarly works out which compaction files with a gone source a
// resumed Builder still has to meet. One that is not among those the
// saved replay met but belongs behind its position (a compaction file
// written, or a source deleted, since) would have had to be applied in
// the past: the state does not fit the store any more.
func (b *Builder) resumeEarly() error {
	done := map[int32]bool{}
	for _, id := range b.earlyDone {
		done[id] = true
	}
	var left []codec.CompactionHead
	for _, h := range goneSources(b.opts.Compactions, b.present) {
		if done[h.File] {
			continue
		}
		// behind the saved position, where the replay was already in its
		// second phase, the broker replays the copies where they are: nothing
		// was missed
		replayed := !b.hasRecovery || (b.seenPhaseB && b.phaseBStart.File <= h.Source)
		if h.Source < b.reached && !replayed {
			return fmt.Errorf("%w: %s (source %s)", ErrForwardedBehind, codec.DataFileName(h.File), codec.DataFileName(h.Source))
		}
		left = append(left, h)
	}
	b.early = left
	return nil
}

// stateDecoder reads a state into a fresh Builder, checking every
// reference it restores (slots of the id table, the ring of finished
// transactions, sequence ranges) so that a state that decodes can never
// make the Builder fail later.
type stateDecoder struct {
	r     *binenc.Reader
	data  []byte // what r reads
	b     *Builder
	paths map[int32]string
	names strTable // shares the strings that repeat (names, keys)
	// slotsUsed: one more than the highest id-table slot a message key
	// of the destinations uses (0: none), checked by ids (a list of the
	// keys, grown by append, cost 0.3 s of a 0.8 s load with 812 k
	// messages)
	slotsUsed uint64
}

func (d *stateDecoder) str() string {
	bs := d.r.Bytes()
	if d.r.Err() != nil {
		return ""
	}
	return d.names.get(bs)
}

func (d *stateDecoder) decode() error {
	r := d.r
	d.b.model.fields(d)
	if r.Err() == nil && r.Len() != 0 {
		r.Fail("%d bytes after the state", r.Len())
	}
	if r.Err() == nil {
		d.checkCounts()
	}
	return r.Err()
}

// The fields of the model (model.fields), read in this order into a
// fresh Builder.

func (d *stateDecoder) files(files *[]*File) {
	r, b := d.r, d.b
	n := r.Count(8)
	for i := 0; i < n && r.Err() == nil; i++ {
		f := &File{ID: r.Int32(), Name: r.String(), Size: r.Varint(), End: r.Varint(),
			Commands: r.Int(), Skipped: r.Int(), Compaction: r.Bool(), Source: r.Int32()}
		f.Damage = r.DamageList(d.paths[f.ID])
		if r.Err() != nil {
			break
		}
		if _, dup := b.fileIx[f.ID]; dup {
			r.Fail("file %d twice", f.ID)
			break
		}
		*files = append(*files, f)
		b.fileIx[f.ID] = f
		b.present[f.ID] = true
		if f.ID > b.maxID {
			b.maxID = f.ID
		}
	}
}

// curFile: one of the files read before
func (d *stateDecoder) curFile(f **File) {
	r := d.r
	if r.Bool() {
		id := r.Int32()
		cur, ok := d.b.fileIx[id]
		if !ok && r.Err() == nil {
			r.Fail("current file %d unknown", id)
		}
		*f = cur
	}
}

func (d *stateDecoder) position(p *position) {
	loadPosition(d.r, p)
	if d.r.Err() == nil && !d.b.built {
		// the index is read (both passes at once) while the rest of the
		// state is decoded, when the resumed replay is to adopt it: on a
		// cache hit the adoption then takes it as it does at the end of
		// a replay (feed.go), not read at that moment on this goroutine
		d.b.startFeed()
		if f := d.b.feed; f != nil {
			f.startCheck()
		}
	}
}

// dests: the id table comes after the destinations in the encoding, but
// the destinations refer to its slots: ids checks d.slotsUsed once it is read
func (d *stateDecoder) dests(dests *[4]map[string]*dest) {
	r := d.r
	for t := range dests {
		n := r.Count(4)
		for i := 0; i < n && r.Err() == nil; i++ {
			dd := d.dest(codec.DestType(t))
			if r.Err() != nil {
				break
			}
			if _, dup := dests[t][dd.name]; dup {
				r.Fail("destination %s twice", dd.key)
				break
			}
			dests[t][dd.name] = dd
		}
	}
}

func (d *stateDecoder) events(events *[]destEvent) {
	r := d.r
	n := r.Count(3)
	if n > 0 {
		*events = make([]destEvent, 0, n)
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		*events = append(*events, destEvent{key: d.str(), create: r.Bool(), loc: r.Location()})
	}
}

func (d *stateDecoder) ids(t **idTable) {
	r, ids := d.r, *t
	n := r.Count(2)
	ids.names = make([]string, 0, n)
	ids.refs = make([]int32, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		ids.names = append(ids.names, r.String())
		ids.refs = append(ids.refs, r.Int32())
	}
	slots := uint64(len(ids.names))
	slot := func() uint32 {
		v := r.Uvarint()
		if v >= slots && r.Err() == nil {
			r.Fail("id slot %d out of range", v)
			return 0
		}
		return uint32(v)
	}
	n = r.Count(1)
	for i := 0; i < n && r.Err() == nil; i++ {
		ids.free = append(ids.free, slot())
	}
	n = r.Count(2)
	for i := 0; i < n && r.Err() == nil; i++ {
		name := r.String()
		ids.byName[name] = slot()
	}
	if d.slotsUsed > slots {
		r.Fail("message id slot %d out of range", d.slotsUsed-1)
	}
}

// txs: their operations refer to the slots of the id table, read before
func (d *stateDecoder) txs(txs *map[string]*txState) {
	r := d.r
	slots := uint64(len(d.b.ids.names))
	n := r.Count(8)
	for i := 0; i < n && r.Err() == nil; i++ {
		k := r.String()
		t := &txState{id: r.String(), xa: r.Bool(), rbSize: r.Int32(), prepared: r.Bool(), order: r.Varint()}
		m := r.Count(10)
		if m > 0 {
			t.ops = make([]txOp, 0, m)
		}
		for j := 0; j < m && r.Err() == nil; j++ {
			op := d.txOp()
			if uint64(op.id.prefix) >= slots && r.Err() == nil {
				r.Fail("message id slot %d out of range", op.id.prefix)
			}
			t.ops = append(t.ops, op)
		}
		t.cmds = d.locs()
		if r.Err() != nil {
			break
		}
		if _, dup := (*txs)[k]; dup {
			r.Fail("transaction %q twice", k)
			break
		}
		(*txs)[k] = t
	}
}

// finished: checked against the ring's position (read before) and the
// bound
func (d *stateDecoder) finished(f *finished) {
	r, p, keep := d.r, &d.b.position, d.b.keep
	if l := d.doneTxs(); keep < 0 {
		// every finished transaction is kept (a mount): checked now,
		// made when the graph's transactions are first asked for
		if l.n > 0 && r.Err() == nil {
			f.lazy = l
		}
	} else if r.Err() == nil {
		f.done = l.decode()
	}
	if r.Err() == nil {
		ok := p.doneNext >= 0 && p.doneNext <= len(f.done) && (keep < 0 || len(f.done) <= keep)
		if keep > 0 && len(f.done) == keep && p.doneNext >= len(f.done) {
			ok = false
		}
		if keep == 0 && len(f.done) > 0 {
			ok = false
		}
		if !ok {
			r.Fail("ring of finished transactions (%d kept, next %d, bound %d)", len(f.done), p.doneNext, keep)
		}
	}
}

func (d *stateDecoder) ackMap(m *map[int32][]int32) { *m = d.readAckMap() }

func (d *stateDecoder) optAckMap(m *map[int32][]int32) {
	if d.r.Bool() {
		*m = d.readAckMap()
	}
}

func (d *stateDecoder) strings(l *[]string) {
	r := d.r
	n := r.Count(1)
	for i := 0; i < n && r.Err() == nil; i++ {
		*l = append(*l, r.String())
	}
}

func (d *stateDecoder) diffs(l *[]IndexDiff) {
	r := d.r
	n := r.Count(4)
	for i := 0; i < n && r.Err() == nil; i++ {
		x := IndexDiff{Kind: r.String(), Destination: r.String(), Subscription: r.String(), Count: r.Int()}
		m := r.Count(1)
		for j := 0; j < m && r.Err() == nil; j++ {
			x.MessageIDs = append(x.MessageIDs, r.String())
		}
		*l = append(*l, x)
	}
}

func (d *stateDecoder) int32s(l *[]int32) {
	r := d.r
	n := r.Count(1)
	for i := 0; i < n && r.Err() == nil; i++ {
		*l = append(*l, r.Int32())
	}
}

// checkCounts checks that the counters agree: the builder's commands are
// the sum of its files', and no destination handed out more sequence
// numbers than there were commands. The sequence ranges of the
// subscriptions are bounded by those numbers, so the work a resumed
// Builder does on them is bounded by the journal the state claims to have
// replayed.
func (d *stateDecoder) checkCounts() {
	b := d.b
	var commands, skipped int64
	for _, f := range b.files {
		if f.Commands < 0 || f.Skipped < 0 || f.Skipped > f.Commands {
			d.r.Fail("file %d: bad command counts", f.ID)
			return
		}
		commands += int64(f.Commands)
		skipped += int64(f.Skipped)
	}
	if commands != b.commands || skipped != b.skipped {
		d.r.Fail("command counts disagree (%d/%d, files %d/%d)", b.commands, b.skipped, commands, skipped)
		return
	}
	for _, m := range b.dests {
		for _, dd := range m {
			// (an adopted index brings its own sequences)
			if dd.nextSeq < 0 || (dd.nextSeq > b.commands && !b.adoptedIndex) {
				d.r.Fail("%s: sequence %d beyond the %d commands replayed", dd.key, dd.nextSeq, b.commands)
				return
			}
		}
	}
}

// dest reads one destination of type t; the highest slot of the message
// keys it uses is noted in d.slotsUsed for checking against the id table.
func (d *stateDecoder) dest(t codec.DestType) *dest {
	r := d.r
	name := d.str()
	dd := &dest{typ: t, name: name, key: strconv.Itoa(int(t)) + ":" + name, topic: t.IsTopic()}
	dd.nextSeq = r.Varint()
	dd.count = r.Varint()
	dd.bytes = r.Varint()
	dd.statDelta = r.Varint()
	n := r.Count(9)
	dd.entries = newOrderIndex(n)
	dd.ids = newIDIndex(n)
	seq := int64(0)
	for i := 0; i < n && r.Err() == nil; i++ {
		delta := r.Varint()
		if (i > 0 && delta <= 0) || delta < 0 {
			r.Fail("entries of %s out of order", dd.key)
			break
		}
		seq += delta
		e := entry{id: msgKey{prefix: uint32(min(r.Uvarint(), 1<<32-1)), seq: r.Varint()}, loc: r.Location(),
			prio: r.Int32(), size: r.Int32(), class: int8(r.Byte()), flags: r.Byte()}
		if r.Bool() {
			dd.ids.set(e.id, seq)
		}
		dd.entries.set(seq, e)
		d.slotsUsed = max(d.slotsUsed, uint64(e.id.prefix)+1)
	}
	n = r.Count(3)
	for i := 0; i < n && r.Err() == nil; i++ {
		k := msgKey{prefix: uint32(min(r.Uvarint(), 1<<32-1)), seq: r.Varint()}
		dd.ids.set(k, r.Varint())
		d.slotsUsed = max(d.slotsUsed, uint64(k.prefix)+1)
	}
	n = r.Count(8)
	for i := 0; i < n && r.Err() == nil; i++ {
		s := &sub{key: d.str()}
		if info := r.Bytes(); len(info) > 0 {
			s.info = append([]byte(nil), info...)
		}
		s.retro = r.Bool()
		s.loc = r.Location()
		s.lastAck = r.Varint()
		s.hasFirst = r.Bool()
		s.first = r.Location()
		s.hasPos = r.Bool()
		m := r.Count(2)
		if m > 0 {
			s.pos.r = make([]seqRange, 0, m)
		}
		for j := 0; j < m && r.Err() == nil; j++ {
			x := seqRange{first: r.Varint(), last: r.Varint()}
			// ascending, disjoint, non-adjacent (seqSet's order). Not
			// bounded by the destination's next sequence: an adopted
			// index's may be past it (a real broker's, kept seed 148: 64
			// and 86 with the next sequence 64)
			if x.first < 0 || x.last < x.first ||
				(j > 0 && s.pos.r[j-1].last+1 >= x.first) {
				r.Fail("subscription %s of %s: bad sequence range", s.key, dd.key)
				break
			}
			s.pos.r = append(s.pos.r, x)
		}
		dd.subs = append(dd.subs, s)
	}
	dd.locs = d.locTree(dd.key)
	d.ackList(dd)
	return dd
}

func (d *stateDecoder) txOp() txOp {
	r := d.r
	return txOp{add: r.Bool(), typ: codec.DestType(r.Int32()), name: d.str(),
		id: msgKey{prefix: uint32(min(r.Uvarint(), 1<<32-1)), seq: r.Varint()}, loc: r.Location(),
		prio: r.Int32(), supported: r.Bool(), size: r.Int32(), subKey: d.str(), hasSub: r.Bool(), ackEmpty: r.Bool()}
}

func (d *stateDecoder) locs() []codec.Location {
	notNil, n := d.r.Bool(), d.r.Count(3)
	if !notNil {
		if n != 0 {
			d.r.Fail("nil list with elements")
		}
		return nil
	}
	return d.locsInto(make([]codec.Location, 0, n), n)
}

// locsInto appends n locations written by saveLocs to dst (only checks
// them when dst is nil).
func (d *stateDecoder) locsInto(dst []codec.Location, n int) []codec.Location {
	keep := dst != nil
	r := d.r
	var prev codec.Location
	for i := 0; i < n && r.Err() == nil; i++ {
		var l codec.Location
		file := int64(prev.File) + r.Varint()
		l.File = int32(file)
		off := r.Varint()
		if l.File == prev.File {
			off += int64(prev.Offset)
		}
		l.Offset = int32(off)
		l.Size = r.Int32()
		if int64(l.File) != file || int64(l.Offset) != off {
			r.Fail("location out of range")
		}
		if keep {
			dst = append(dst, l)
		}
		prev = l
	}
	return dst
}

// code reads what saveCode wrote.
func (d *stateDecoder) code(a, b string) string {
	switch c := d.r.Byte(); c {
	case 0:
		return a
	case 1:
		return b
	case 2:
		return d.str()
	default:
		d.r.Fail("bad code %d", c)
		return ""
	}
}

// doneTxs reads the finished transactions saveDone wrote and checks
// them; they stay in their saved form (aliasing the state's bytes).
func (d *stateDecoder) doneTxs() *lazyTxs {
	r := d.r
	n := r.Count(5)
	idLen := r.Uvarint()
	ids := r.Bytes() // every id, one after the other, as idsCoder writes them
	total := r.Count(3)
	if idLen > maxIDExpansion*uint64(len(ids)) {
		r.Fail("transaction ids of %d bytes in %d", idLen, len(ids))
	} else if got, err := expandIDs(ids, nil); err != nil || uint64(got) != idLen {
		r.Fail("transaction ids of %d bytes announced, %d found (%v)", idLen, got, err)
	}
	if n == 0 || r.Err() != nil {
		return &lazyTxs{}
	}
	from := len(d.data) - r.Len()
	l := &lazyTxs{n: n, total: total, idLen: int(idLen), idBytes: len(ids), ids: [][]byte{ids}}
	m := l.maker(false)
	for i := 0; i < n && r.Err() == nil; i++ {
		m.record(d)
	}
	m.end(d)
	to := len(d.data) - r.Len()
	l.recs = [][]byte{d.data[from:to:to]}
	return l
}

// lazyTxs are finished transactions kept encoded, in saveDone's form,
// until the graph's transactions are first asked for: a mount keeps every
// one (hundreds of thousands in a busy store) but needs them only when its
// by-transaction directory is used. A replay appends the ones it finishes
// (add) into blocks that are never copied to grow; a resumed state's were
// checked when it was read, so making them cannot fail.
type lazyTxs struct {
	n       int
	total   int      // locations of all
	idLen   int      // bytes of all ids
	idBytes int      // bytes of ids as kept (each as its difference from the one before)
	ids     [][]byte // every id, one after the other (see addID); whole in one block
	last    string   // the id added last ("" after a resumed state)
	recs    [][]byte // per transaction: id length, kind, state, locations, operations; whole in one block
	w       binenc.Writer
}

// Transaction ids repeat their connection's id ("TX:ID:host-port-start-1:1012:100"
// and ":101" after it), so each is kept as the length it shares with the
// id before it, the length of the rest and the rest: about 5 bytes for a
// 44-byte local transaction id. maxIDExpansion bounds what a saved state's
// ids may expand to (a real store's: 6–10 times).
const maxIDExpansion = 64

// addID appends id to l.ids; a block starts with a whole id.
func (l *lazyTxs) addID(id string) {
	shared := 0
	for shared < len(id) && shared < len(l.last) && id[shared] == l.last[shared] {
		shared++
	}
	blocks := len(l.ids)
	l.ids = room(l.ids, 2*binary.MaxVarintLen64+len(id))
	if len(l.ids) != blocks {
		shared = 0 // a block starts with a whole id: each can be read alone
	}
	rest := id[shared:]
	k := len(l.ids) - 1
	before := len(l.ids[k])
	l.ids[k] = binary.AppendUvarint(l.ids[k], uint64(shared))
	l.ids[k] = binary.AppendUvarint(l.ids[k], uint64(len(rest)))
	l.ids[k] = append(l.ids[k], rest...)
	l.idBytes += len(l.ids[k]) - before
	l.idLen += len(id)
	l.last = id
}

// expandIDs reads ids as addID writes them, appending each to dst when
// dst is not nil, and returns the bytes of all ids. It fails on an id that
// shares more than the one before it has, or on a cut entry.
func expandIDs(b []byte, dst *strings.Builder) (int, error) {
	total, prev, prevLen := 0, 0, 0 // prev: where the id before starts in dst
	for len(b) > 0 {
		shared, n1 := binary.Uvarint(b)
		if n1 <= 0 {
			return total, errors.New("cut transaction id")
		}
		rest, n2 := binary.Uvarint(b[n1:])
		if n2 <= 0 || rest > uint64(len(b)-n1-n2) {
			return total, errors.New("cut transaction id")
		}
		if shared > uint64(prevLen) {
			return total, errors.New("transaction id shares more than the id before it has")
		}
		b = b[n1+n2:]
		if dst != nil {
			at := dst.Len()
			dst.WriteString(dst.String()[prev : prev+int(shared)])
			dst.Write(b[:rest])
			prev = at
		}
		prevLen = int(shared) + int(rest)
		total += prevLen
		b = b[rest:]
	}
	return total, nil
}

// lazyBlock is the size of the blocks add appends to.
const lazyBlock = 64 << 10

// room returns blocks with room for n more bytes in the last one.
func room(blocks [][]byte, n int) [][]byte {
	if k := len(blocks); k == 0 || cap(blocks[k-1])-len(blocks[k-1]) < n {
		blocks = append(blocks, make([]byte, 0, max(lazyBlock, n)))
	}
	return blocks
}

// add appends a finished transaction.
func (l *lazyTxs) add(id string, kind TxKind, st TxState, cmds []codec.Location, ops []TxOp) {
	l.n++
	l.total += len(cmds)
	l.addID(id)
	w := &l.w
	w.B = w.B[:0]
	w.Uvarint(uint64(len(id)))
	saveCode(w, string(kind), string(LocalTx), string(XATx))
	saveCode(w, string(st), string(Committed), string(RolledBack))
	saveLocs(w, cmds)
	w.Uvarint(uint64(len(ops)))
	for _, op := range ops {
		w.Bool(op.Add)
		w.String(op.Destination)
		w.String(op.MessageID)
		w.String(op.Subscription)
		w.Location(op.Loc)
	}
	l.recs = room(l.recs, len(w.B))
	k := len(l.recs) - 1
	l.recs[k] = append(l.recs[k], w.B...)
}

// decode makes the transactions. Their ids are substrings of one string
// and their locations slices of one array, so that a mount's hundreds of
// thousands of them cost a few allocations.
func (l *lazyTxs) decode() []*Transaction {
	if l == nil || l.n == 0 {
		return nil
	}
	m := l.maker(true)
	names := strTable{}
	for _, blk := range l.recs {
		d := &stateDecoder{r: binenc.NewReader(blk), data: blk, names: names}
		for d.r.Len() > 0 && d.r.Err() == nil && len(m.out) < l.n {
			m.record(d)
		}
	}
	return m.out
}

// txMaker reads saved finished transactions one by one, making them
// (build) or only checking them.
type txMaker struct {
	l         *lazyTxs
	build     bool
	out       []*Transaction
	txs       []Transaction
	locs      []codec.Location
	ids       string
	at, nlocs int
}

func (l *lazyTxs) maker(build bool) *txMaker {
	m := &txMaker{l: l, build: build}
	if build {
		m.out = make([]*Transaction, 0, l.n)
		m.txs = make([]Transaction, l.n)
		m.locs = make([]codec.Location, 0, l.total)
		var b strings.Builder
		b.Grow(l.idLen)
		for _, blk := range l.ids {
			expandIDs(blk, &b) // checked when added or resumed
		}
		m.ids = b.String()
	}
	return m
}

// record reads one transaction from d.
func (m *txMaker) record(d *stateDecoder) {
	t, ok := m.read(d, m.build)
	if m.build && ok {
		i := len(m.out)
		m.txs[i] = t
		m.out = append(m.out, &m.txs[i])
	}
}

// read reads one transaction from d, and makes it when build: its
// locations in m.locs when the maker builds (all), in an array of their
// own otherwise (one found by find), its id from m.ids when the maker
// has them.
func (m *txMaker) read(d *stateDecoder, build bool) (t Transaction, ok bool) {
	r := d.r
	n := r.Uvarint()
	if n > uint64(m.l.idLen-m.at) {
		r.Fail("transaction ids longer than announced")
		return t, false
	}
	if m.build {
		t.ID = m.ids[m.at : m.at+int(n)]
	}
	m.at += int(n)
	t.Kind = TxKind(d.code(string(LocalTx), string(XATx)))
	t.State = TxState(d.code(string(Committed), string(RolledBack)))
	notNil, k := r.Bool(), r.Count(3)
	if k > m.l.total-m.nlocs {
		r.Fail("more transaction commands than announced")
		return t, false
	}
	m.nlocs += k
	switch {
	case !notNil && k != 0:
		r.Fail("nil list with elements")
	case build && notNil && m.build:
		from := len(m.locs)
		m.locs = d.locsInto(m.locs, k)
		t.Commands = m.locs[from:len(m.locs):len(m.locs)]
	case build && notNil:
		t.Commands = d.locsInto(make([]codec.Location, 0, k), k)
	case notNil:
		d.locsInto(nil, k)
	}
	k = r.Count(5)
	for j := 0; j < k && r.Err() == nil; j++ {
		op := TxOp{Add: r.Bool(), Destination: d.str(), MessageID: r.String(),
			Subscription: d.str(), Loc: r.Location()}
		if build {
			t.Ops = append(t.Ops, op)
		}
	}
	return t, r.Err() == nil
}

// find makes the transactions of ids and recs (l's, or what they were
// before the graph made them all) whose id is id, in order, reading the
// others' ids and skipping their records: a lookup by id (the
// transaction of a message) without making hundreds of thousands.
func (l *lazyTxs) find(ids, recs [][]byte, id string) []*Transaction {
	var at []int // positions of the transactions called id
	i := 0
	var cur []byte
	for _, blk := range ids {
		cur = cur[:0] // a block starts with a whole id
		for b := blk; len(b) > 0; i++ {
			var ok bool
			if b, cur, ok = nextID(b, cur); !ok {
				return nil // checked when added or resumed
			}
			if string(cur) == id {
				at = append(at, i)
			}
		}
	}
	if len(at) == 0 {
		return nil
	}
	var out []*Transaction
	m := l.maker(false)
	names := strTable{}
	i = 0
	for _, blk := range recs {
		d := &stateDecoder{r: binenc.NewReader(blk), data: blk, names: names}
		for ; d.r.Len() > 0 && d.r.Err() == nil && len(at) > 0; i++ {
			t, ok := m.read(d, i == at[0])
			if i == at[0] {
				at = at[1:]
				if ok {
					t.ID = id
					out = append(out, &t)
				}
			}
		}
	}
	return out
}

// end checks that the ids announced were all used.
func (m *txMaker) end(d *stateDecoder) {
	if d.r.Err() == nil && m.at != m.l.idLen {
		d.r.Fail("transaction ids shorter than announced")
	}
}

func (d *stateDecoder) readAckMap() map[int32][]int32 {
	r := d.r
	n := r.Count(3)
	m := make(map[int32][]int32, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		k := r.Int32()
		notNil := r.Bool()
		c := r.Count(1)
		var v []int32
		if notNil {
			v = make([]int32, 0, c)
		} else if c != 0 {
			r.Fail("nil list with elements")
		}
		for j := 0; j < c && r.Err() == nil; j++ {
			v = append(v, r.Int32())
		}
		m[k] = v
	}
	return m
}

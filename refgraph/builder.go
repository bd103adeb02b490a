package refgraph

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/javaser"
	"github.com/kahafs/kahafs/kahaindex"
)

// Options are the inputs of a replay besides the journal's records.
type Options struct {
	// Files lists every data file of the store (the broker's journal file
	// map), in id order. The compaction-file rule (§5.2) and the cleanup
	// candidates depend on it. When empty, the files announced through
	// FileDone are used.
	Files []codec.FileInfo
	// Index is the head of db.data (kahaindex.ReadHead), nil when
	// the store has no index: then the broker replays the whole journal.
	// With an index the broker keeps the state of the records before its
	// recovery position, reloads the ack map from the record the index
	// names, and replays only from there (§5.3, §9.3).
	Index *kahaindex.Head
	// MaxFileLength is the broker's journalMaxFileLength (default 32 MiB).
	// The defaults of the options are applied by WithDefaults, and only
	// there.
	MaxFileLength int64
	// Running predicts the next periodic cleanup of a broker that is
	// running on the store right now, instead of the first cleanup of a
	// broker (re)started on the store as it is.
	Running bool
	// RestartTraceSize is the record size of the "LOADED <date>" trace a
	// starting broker appends (default 44: a 3-letter time zone). With
	// the rollback records of in-flight local transactions it decides
	// whether the restart rotates to a new data file.
	RestartTraceSize int32
	// KeepCompleted bounds the committed and rolled-back transactions the
	// graph lists (the most recent ones): 0 means 1000, < 0 all.
	KeepCompleted int
	// Compactions are the store's ack-compaction files
	// (codec.CompactionHeads of Files) and ReadForwarded reads the records
	// one of them forwarded (codec.ReadForwarded); StoreOptions sets both.
	// A compaction file whose source is gone carries the only trace of
	// acks and commits the broker applied when they were first written:
	// before the index's recovery position they are applied where the
	// source was (see the package doc).
	Compactions   []codec.CompactionHead
	ReadForwarded func(file int32, fn func(codec.Record, *codec.Command) error) error
	// LoadIndex streams db.data into sink (kahaindex.StreamFast) when the
	// replay reaches the index's recovery position, and ReadRecord reads
	// the command at a location (the details of a message the index
	// holds that the replay did not keep); ReadRecords, when set, reads
	// many (locs in journal order; fn is called for each, c valid during
	// the call) as ReadRecord would one by one. IndexStamp identifies the
	// index files (for the analysis cache). StoreOptions sets them. See
	// adopt.go.
	LoadIndex   func(sink kahaindex.Sink) (*kahaindex.Index, error)
	ReadRecord  func(loc codec.Location, c *codec.Command) (codec.Location, error)
	ReadRecords func(locs []codec.Location, fn func(i int, c *codec.Command, err error))
	IndexStamp  string
	// readAtPosition (tests): LoadIndex is called when the adoption
	// starts, without reading ahead (feed.go)
	readAtPosition bool
	// takes (tests): nil, or counts what the adoption did with the
	// replay's indexes (curDest.matching); noTake (tests): every adopted
	// destination gets indexes of its own
	takes  *takeCounts
	noTake bool
}

// takeCounts counts the adopted destinations that took the replay's
// indexes, and those that matched some messages first and then did not.
type takeCounts struct{ took, unmatched int }

// priority classes of the broker's order index.
const (
	classLO  = 0
	classDEF = 1
	classHI  = 2
)

func class(prio int32, supported bool) int8 {
	if !supported {
		return classDEF
	}
	switch {
	case prio > 4:
		return classHI
	case prio < 4:
		return classLO
	}
	return classDEF
}

// entry flags
const (
	flagPrioSupported = 1 << iota
	flagUpdated
	flagUnreadable // an adopted index's message whose record could not be read
	flagTx         // added in a transaction: stored at its commit (rebuild.go)
	// flagDetails: an adopted index's message whose priority, size and
	// kind are still to be read from its record; its size holds its
	// place in the adoption meanwhile (adoption.message)
	flagDetails
)

// entry is one message of a destination's order index.
type entry struct {
	id    msgKey
	loc   codec.Location
	prio  int32
	size  int32
	class int8
	flags uint8
}

// sub is a durable subscription's state (subscriptions, subLocations,
// subscriptionAcks and ackPositions of the broker's StoredDestination).
type sub struct {
	key     string
	info    []byte
	retro   bool
	loc     codec.Location
	lastAck int64
	pos     seqSet
	hasPos  bool    // it has an entry in ackPositions (node != nil)
	node    *alNode // the node of the ack list holding its entry (acklist.go)
	// first: the first command that adds it since it was last deleted,
	// as a journal-only rebuild meets it (rebuild.go)
	first    codec.Location
	hasFirst bool
}

// dest is a StoredDestination.
type dest struct {
	typ     codec.DestType
	name    string
	key     string
	topic   bool
	nextSeq int64
	entries orderIndex
	ids     idIndex
	subs    []*sub   // subLocations list order
	locs    *locTree // the location index's shape (loctree.go); nil: empty
	acks    *ackList // ackPositions (acklist.go); nil: an empty list
	// cache: subscriptionCache, the order a message add meets the
	// subscriptions in (subscribe order in one process, key order after a
	// load)
	cache []*sub
	count int64
	bytes int64
	// statDelta: the index's stored message count less the messages it
	// holds (adopt.go): a broker reports, and its store cursor delivers,
	// by the stored count
	statDelta int64
}

func (d *dest) sub(key []byte) *sub {
	for _, s := range d.subs {
		if s.key == string(key) {
			return s
		}
	}
	return nil
}

func (d *dest) subByName(key string) *sub {
	for _, s := range d.subs {
		if s.key == key {
			return s
		}
	}
	return nil
}

// destEvent records a change of the broker's storedDestinations map.
type destEvent struct {
	key    string
	create bool
	loc    codec.Location
}

// txOp is a pending operation of a transaction.
type txOp struct {
	add       bool
	typ       codec.DestType
	name      string
	id        msgKey
	loc       codec.Location
	prio      int32
	supported bool
	size      int32
	subKey    string // durable ack
	hasSub    bool
	ackEmpty  bool
}

type txState struct {
	id       string
	xa       bool
	rbSize   int32 // size of the rollback record a restart writes (local)
	prepared bool
	ops      []txOp
	cmds     []codec.Location
	order    int64
}

// Builder replays commands into a Graph. It implements codec.Visitor:
// hand it to codec.ReadStore, then call Build. A Builder is not safe for
// concurrent use and is spent by Build.
//
// What the replay builds is its model (the broker's index state, the only
// thing a saved state holds: model.go); the rest of a Builder derives from
// its Options and files, or is scratch.
type Builder struct {
	opts    Options
	present map[int32]bool
	maxID   int32
	fileIx  map[int32]*File

	// recovery position of a restarted broker over its index
	recovery    codec.Location
	hasRecovery bool
	afterLast   bool // recovery = first record after Index.LastUpdate

	model

	// destCache: destinations getDest found, by destSlot, checked
	// against the name (cheaper than hashing every name into the map)
	destCache [64]*dest
	names     strTable
	keep      int

	// indexAhead: the adopted index holds messages whose records could not
	// be read; such a state is not saved (AppendState)
	indexAhead bool
	// adopting: an adopted index whose messages' details are still
	// taken from the records the replay meets (adopt.go)
	adopting *adoption
	// feed: the index read ahead of the adoption (feed.go)
	feed *indexFeed

	// ack-compaction files whose source is gone, by source id, still to
	// be met (model.earlyDone: the ones met so far)
	early []codec.CompactionHead

	buf      []byte
	rbBuf    []byte // scratch: a rollback command, for its size
	rbCmd    codec.Command
	spareOps [][]txOp // operation lists of finished transactions, for reuse
	spareTx  *txState // a finished transaction's state, for reuse
	built    bool
}

// Defaults of Options (see WithDefaults).
const (
	// defaultRestartTraceSize: the "LOADED <date>" trace with a 3-letter
	// time zone.
	defaultRestartTraceSize = 44
	// defaultKeepCompleted finished transactions are listed.
	defaultKeepCompleted = 1000
)

// WithDefaults returns o with its defaults applied: MaxFileLength the
// broker's default journalMaxFileLength, RestartTraceSize 44 and
// KeepCompleted 1000 when not set. A replay depends on o as WithDefaults
// returns it: two Options equal after it replay alike.
func (o Options) WithDefaults() Options {
	if o.MaxFileLength <= 0 {
		o.MaxFileLength = codec.DefaultMaxFileLength
	}
	if o.RestartTraceSize <= 0 {
		o.RestartTraceSize = defaultRestartTraceSize
	}
	if o.KeepCompleted == 0 {
		o.KeepCompleted = defaultKeepCompleted
	}
	return o
}

// NewBuilder starts a replay.
func NewBuilder(opts Options) *Builder {
	opts = opts.WithDefaults()
	b := &Builder{
		opts:    opts,
		present: map[int32]bool{},
		fileIx:  map[int32]*File{},
		names:   strTable{},
		model:   newModel(),
	}
	b.keep = opts.KeepCompleted
	for _, fi := range opts.Files {
		b.addFile(fi)
	}
	if m := opts.Index; m != nil {
		switch {
		case m.FirstInProgressTx != nil:
			b.recovery, b.hasRecovery = *m.FirstInProgressTx, true
		case m.LastUpdate != nil:
			b.recovery, b.hasRecovery, b.afterLast = *m.LastUpdate, true, true
		}
	}
	b.phaseB = !b.hasRecovery
	b.early = goneSources(opts.Compactions, b.present)
	return b
}

// goneSources lists the compaction files whose source is not in the
// store, by source (then file) id.
func goneSources(heads []codec.CompactionHead, present map[int32]bool) []codec.CompactionHead {
	var out []codec.CompactionHead
	for _, h := range heads {
		if !present[h.Source] && h.Source < h.File {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Source != out[j].Source {
			return out[i].Source < out[j].Source
		}
		return out[i].File < out[j].File
	})
	return out
}

// reach moves the replay up to file id: the forwarded records of every
// compaction file whose source (gone) lies below id are applied here,
// where the source's records were, when that is before the index's
// recovery position. The broker that wrote them applied the acks and
// commits when they were first written, in the source file; the copies
// are all that is left of them. From the recovery position on, the
// broker replays the copies where they are (Command), not here.
func (b *Builder) reach(id int32) error {
	if id <= b.reached {
		return nil
	}
	b.reached = id
	for len(b.early) > 0 && b.early[0].Source < id {
		h := b.early[0]
		b.early = b.early[1:]
		b.earlyDone = append(b.earlyDone, h.File)
		if b.phaseB {
			continue
		}
		if b.opts.ReadForwarded == nil {
			b.warnf("%s forwards the acks of %s, which is gone; they were not read, so messages they acknowledged may show as pending",
				codec.DataFileName(h.File), codec.DataFileName(h.Source))
			continue
		}
		err := b.opts.ReadForwarded(h.File, func(rec codec.Record, c *codec.Command) error {
			b.process(rec.Loc, c)
			return nil
		})
		if err != nil {
			return fmt.Errorf("refgraph: forwarded acks of %s: %w", codec.DataFileName(h.File), err)
		}
	}
	return nil
}

func (b *Builder) addFile(fi codec.FileInfo) *File {
	if f, ok := b.fileIx[fi.ID]; ok {
		return f
	}
	f := &File{ID: fi.ID, Name: fi.Name, Size: fi.Size}
	if f.Name == "" {
		f.Name = codec.DataFileName(fi.ID)
	}
	b.files = append(b.files, f)
	b.fileIx[fi.ID] = f
	b.present[fi.ID] = true
	if fi.ID > b.maxID {
		b.maxID = fi.ID
	}
	return f
}

// maxWarnings bounds the warnings a replay keeps.
const maxWarnings = 100

func (m *model) warnf(format string, args ...any) {
	if len(m.warnings) < maxWarnings {
		m.warnings = append(m.warnings, fmt.Sprintf(format, args...))
	}
}

// errBuilt is returned when a spent Builder is fed again.
var errBuilt = errors.New("refgraph: builder already built")

// Command implements codec.Visitor.
func (b *Builder) Command(rec codec.Record, c *codec.Command) error {
	if b.built {
		return errBuilt
	}
	loc := rec.Loc
	if b.curFile == nil || b.curFile.ID != loc.File {
		if err := b.reach(loc.File); err != nil {
			return err
		}
		b.startFile(loc.File)
	}
	f := b.curFile
	f.Commands++
	b.commands++
	b.lastRecord = loc

	if c.Type == codec.AckMessageFileMapCommand {
		// The broker loads the ack map its index names straight from its
		// record (recoverAckMessageFileMap), wherever the replay goes: also
		// when the record lies in what the replay skips (the rest of an
		// ack-compaction file whose source still exists, seed 62).
		b.loadIndexAckMap(loc, c)
	}
	if b.skipping {
		switch {
		case int64(loc.Offset) < b.skipTo:
			f.Skipped++
			b.skipped++
			return nil
		case int64(loc.Offset) == b.skipTo:
			b.skipping = false
		default:
			if !b.skipWarned {
				b.skipWarned = true
				b.warnf("%s: the broker resumes replay at offset %d after the compaction marker, which is inside a record; it would fail to read there", f.Name, b.skipTo)
			}
			f.Skipped++
			b.skipped++
			return nil
		}
	}

	if !b.phaseB {
		if (b.afterLast && b.recovery.Less(loc)) || (!b.afterLast && !loc.Less(b.recovery)) {
			if err := b.enterPhaseB(loc); err != nil {
				return err
			}
		}
	}
	if b.adopting != nil {
		b.adopting.meet(loc, c)
	}

	if c.Type == codec.RewrittenDataFileCommand {
		if f.Commands == 1 {
			f.Compaction, f.Source = true, c.SourceDataFileID
		}
		if b.phaseB {
			b.lastUpdate, b.hasLastUpdate = loc, true
			if b.present[c.SourceDataFileID] && c.SkipIfSourceExists {
				b.skipping = true
				b.skipTo = b.opts.MaxFileLength + int64(loc.Size)
			}
		} else {
			b.copyPhase = true
		}
		return nil
	}
	if !b.phaseB && f.Compaction {
		// The broker that wrote an ack-compaction file never processed
		// the forwarded acks and commits; records appended after them
		// (a restart's trace, new traffic) it did.
		if b.copyPhase && (c.Type == codec.RemoveMessageCommand || c.Type == codec.CommitCommand) {
			f.Skipped++
			b.skipped++
			return nil
		}
		b.copyPhase = false
	}
	if b.phaseB {
		// recovery sets lastUpdate to every record it processes
		b.lastUpdate, b.hasLastUpdate = loc, true
	}
	b.process(loc, c)
	return nil
}

func (b *Builder) startFile(id int32) {
	if b.feed == nil && !b.adopted {
		b.startFeed()
	}
	f, ok := b.fileIx[id]
	if !ok {
		f = b.addFile(codec.FileInfo{ID: id})
	}
	b.curFile = f
	b.skipping, b.skipWarned, b.copyPhase = false, false, false
}

// FileDone implements codec.Visitor.
func (b *Builder) FileDone(sum *codec.FileSummary) error {
	if b.built {
		return errBuilt
	}
	if err := b.reach(sum.Info.ID); err != nil {
		return err
	}
	f, ok := b.fileIx[sum.Info.ID]
	if !ok {
		f = b.addFile(sum.Info)
	}
	f.End = sum.End
	if sum.Size > 0 {
		f.Size = sum.Size
	}
	f.Damage = append(f.Damage, sum.Damage...)
	if b.curFile == f {
		b.curFile = nil
	}
	b.skipping = false
	return nil
}

// enterPhaseB: from here on the restarted broker processes records itself.
// Transactions are rebuilt from this point on (the index keeps none).
func (b *Builder) enterPhaseB(loc codec.Location) error {
	b.phaseB = true
	b.seenPhaseB = true
	b.phaseBStart = loc
	b.dropUnknownTxs(loc)
	err := b.adoptIndex()
	if !b.adoptedIndex && b.opts.LoadIndex != nil {
		b.unknownLocs()
	}
	return err
}

// dropUnknownTxs drops the transactions met before the index's recovery
// position (all of them, at the position; at is the first record past it,
// or the position itself): a broker restarted with the
// index replays the journal from there, so it does not know them (the
// index keeps none; one in progress at the index's last checkpoint would
// have put the position at its first operation). Called when the replay
// reaches the position, or at the end when no record lies past it (the
// broker then replays nothing: seed 180, a transaction prepared and rolled
// back whose rollback's file is gone, listed as prepared).
func (b *Builder) dropUnknownTxs(at codec.Location) {
	if len(b.txs) == 0 {
		return
	}
	// in the order the transactions were met, not the map's
	open := make([]*txState, 0, len(b.txs))
	for _, t := range b.txs {
		open = append(open, t)
	}
	sort.Slice(open, func(i, j int) bool { return open[i].order < open[j].order })
	for _, t := range open {
		b.warnf("transaction %s has operations before the index's recovery position %s: a restarted broker does not know it", t.id, at)
		b.dropTx(t)
	}
}

func (b *Builder) process(loc codec.Location, c *codec.Command) {
	switch c.Type {
	case codec.AddMessageCommand:
		b.addCmd(loc, c)
	case codec.UpdateMessageCommand:
		b.updateCmd(loc, c)
	case codec.RemoveMessageCommand:
		b.removeCmd(loc, c)
	case codec.SubscriptionCommand:
		b.subscriptionCmd(loc, c)
	case codec.RemoveDestinationCommand:
		d, ok := b.getDest(c.Dest, loc, true)
		if ok {
			b.removeDest(d)
		}
	case codec.PrepareCommand:
		b.prepareCmd(loc, c)
	case codec.CommitCommand:
		b.commitCmd(loc, c)
	case codec.RollbackCommand:
		b.rollbackCmd(loc, c)
	case codec.TraceCommand:
		b.setLastUpdate(loc)
	case codec.ProducerAuditCommand:
		b.setLastUpdate(loc)
		b.lastAudit, b.hasAudit, b.addAfterAudit = loc, true, false
		if m := b.opts.Index; m != nil && m.ProducerAudit != nil && sameLoc(*m.ProducerAudit, loc) {
			b.auditOK = true
		}
	case codec.AckMessageFileMapCommand:
		b.setLastUpdate(loc)
		b.lastAckMap, b.hasAckMap, b.ackAfterMap = loc, true, false
	}
}

// loadIndexAckMap loads the ack map of the record at loc if the index
// names it.
func (b *Builder) loadIndexAckMap(loc codec.Location, c *codec.Command) {
	m := b.opts.Index
	if m == nil || m.AckMap == nil || !sameLoc(*m.AckMap, loc) || b.ackLoadOK {
		return
	}
	am, err := javaser.ParseAckMap(c.Blob)
	if err != nil {
		b.warnf("ack map record at %s (named by the index) does not parse: %v", loc, err)
		return
	}
	b.ackLoaded, b.ackLoadOK = am, true
}

func sameLoc(a, b codec.Location) bool { return a.File == b.File && a.Offset == b.Offset }

func (b *Builder) setLastUpdate(loc codec.Location) { b.lastUpdate, b.hasLastUpdate = loc, true }

// getDest returns the stored destination of kd, creating it when create.
func (b *Builder) getDest(kd codec.Destination, loc codec.Location, create bool) (*dest, bool) {
	t := kd.Type
	if t < 0 || int(t) >= len(b.dests) {
		b.warnf("%s: unknown destination type %d: the broker cannot process this command", loc, t)
		return nil, false
	}
	slot := &b.destCache[destSlot(t, kd.Name)]
	if d := *slot; d != nil && d.typ == t && d.name == string(kd.Name) {
		return d, true
	}
	if d, ok := b.dests[t][string(kd.Name)]; ok {
		*slot = d
		return d, true
	}
	if !create {
		return nil, false
	}
	return b.newDest(t, b.names.get(kd.Name)), true
}

// destSlot picks a destCache slot from the type, length and last bytes of
// a name (names of related destinations mostly differ at the end).
func destSlot(t codec.DestType, name []byte) int {
	h := uint(t)*7 + uint(len(name))*3
	if n := len(name); n > 0 {
		h += uint(name[n-1])*5 + uint(name[n/2])
	}
	return int(h % 64)
}

// destByName is getDest for an interned name (transaction operations).
func (b *Builder) destByName(t codec.DestType, name string, loc codec.Location) (*dest, bool) {
	if t < 0 || int(t) >= len(b.dests) {
		b.warnf("%s: unknown destination type %d: the broker cannot process this command", loc, t)
		return nil, false
	}
	if d, ok := b.dests[t][name]; ok {
		return d, true
	}
	return b.newDest(t, name), true
}

func (b *Builder) newDest(t codec.DestType, name string) *dest {
	d := &dest{typ: t, name: name, key: strconv.Itoa(int(t)) + ":" + name, topic: t.IsTopic(),
		ids: newIDIndex(0)}
	b.dests[t][name] = d
	b.events = append(b.events, destEvent{key: d.key, create: true, loc: b.lastRecord})
	return d
}

func (b *Builder) removeDest(d *dest) {
	d.entries.each(func(_ int64, e entry) { b.ids.release(e.id) })
	delete(b.dests[d.typ], d.name)
	if slot := &b.destCache[destSlot(d.typ, []byte(d.name))]; *slot == d {
		*slot = nil
	}
	b.events = append(b.events, destEvent{key: d.key, loc: b.lastRecord})
}

// ackRef is recordAckMessageReferenceLocation: ack file -> message file.
// Only replayed commands count; the records before the recovery position
// are in the index's ack map.
func (b *Builder) ackRef(ackFile, msgFile int32) {
	b.ackAfterMap = true
	if !b.phaseB {
		return
	}
	refs := b.ackB[ackFile]
	for _, r := range refs {
		if r == msgFile {
			return
		}
	}
	b.ackB[ackFile] = append(refs, msgFile)
}

// ---- messages ----

func (b *Builder) addCmd(loc codec.Location, c *codec.Command) {
	if c.Tx.Kind != codec.NoTx {
		// recovery creates the destination of a transactional add
		b.getDest(c.Dest, loc, true)
		t := b.tx(c, loc, true)
		b.addOp(t, txOp{add: true, typ: c.Dest.Type, name: b.names.get(c.Dest.Name),
			id: b.ids.intern(c.MessageID), loc: loc, prio: c.Priority, supported: c.PrioritySupported,
			size: int32(len(c.Message))})
		return
	}
	d, ok := b.getDest(c.Dest, loc, true)
	if !ok {
		return
	}
	b.applyAdd(d, c.MessageID, msgKey{}, false, loc, c.Priority, c.PrioritySupported, int32(len(c.Message)))
}

// applyAdd is updateIndex(KahaAddMessageCommand). The id is given either
// as bytes or as an already interned key (transaction op).
func (b *Builder) applyAdd(d *dest, idb []byte, k msgKey, interned bool, loc codec.Location, prio int32, supported bool, size int32) {
	if d.topic && len(d.subs) == 0 {
		return // topic without subscriptions: not stored
	}
	seq := d.nextSeq
	d.nextSeq++
	if !interned {
		k = b.ids.intern(idb)
	} else {
		b.ids.ref(k)
	}
	if prev, dup := d.ids.add(k, seq); dup {
		defer b.ids.release(k)
		if e, ok := d.entries.find(prev); ok && sameLoc(e.loc, loc) {
			// replayed over an index that has it already (its location
			// is indexed): the broker keeps the id and gives the
			// sequence back
			if e.flags&flagDetails != 0 && e.loc == loc {
				b.meetDetails(d, prev, e, prio, supported, size, interned)
			}
			d.nextSeq--
			b.setLastUpdate(loc)
			return
		}
		b.warnf("%s: duplicate message add rejected: %s://%s %s", loc, d.typ.Scheme(), d.name, b.ids.String(k))
		// the broker put the location in its location index before it
		// met the id, and takes it out again
		b.locPut(d, loc)
		b.locRemove(d, loc)
		return
	}
	var fl uint8
	if supported {
		fl |= flagPrioSupported
	}
	if interned {
		fl |= flagTx // a transaction's add, applied at its commit
	}
	b.locPut(d, loc)
	d.entries.set(seq, entry{id: k, loc: loc, prio: prio, size: size, class: class(prio, supported), flags: fl})
	d.count++
	d.bytes += int64(loc.Size)
	b.addAfterAudit = true
	if d.topic {
		// addAckLocationForNewMessage
		l := d.ackList()
		for _, s := range d.cache {
			if s.node == nil {
				s.pos = seqSet{}
				s.pos.addRange(seq, seq+1)
				l.add(s)
			} else {
				s.pos.addRange(seq, seq+1)
				l.put(s)
			}
		}
	}
	b.setLastUpdate(loc)
}

func (b *Builder) updateCmd(loc codec.Location, c *codec.Command) {
	d, ok := b.getDest(c.Dest, loc, true)
	if !ok {
		return
	}
	if k, ok := b.ids.lookup(c.MessageID); ok {
		if seq, ok := d.ids.find(k); ok {
			e, _ := d.entries.find(seq)
			b.locPut(d, loc)
			if !sameLoc(e.loc, loc) {
				b.locRemove(d, e.loc)
			}
			d.bytes += int64(loc.Size) - int64(e.loc.Size)
			e.loc = loc
			e.prio = c.Priority
			e.size = int32(len(c.Message))
			e.flags = flagUpdated
			if c.PrioritySupported {
				e.flags |= flagPrioSupported
			}
			if nc := class(c.Priority, c.PrioritySupported); nc != e.class {
				b.warnf("%s: update moves %s to another priority class; the broker may keep the old entry too", loc, b.ids.String(k))
				e.class = nc
			}
			d.entries.set(seq, e)
			b.setLastUpdate(loc)
			return
		}
	}
	b.applyAdd(d, c.MessageID, msgKey{}, false, loc, c.Priority, c.PrioritySupported, int32(len(c.Message)))
}

func (b *Builder) removeCmd(loc codec.Location, c *codec.Command) {
	hasSub := c.HasSubscriptionKey()
	if c.Tx.Kind != codec.NoTx {
		t := b.tx(c, loc, true)
		op := txOp{typ: c.Dest.Type, name: b.names.get(c.Dest.Name), id: b.ids.intern(c.MessageID), loc: loc,
			hasSub: hasSub, ackEmpty: len(c.Ack) == 0}
		if hasSub {
			op.subKey = b.names.get(c.SubscriptionKey)
		}
		b.addOp(t, op)
		return
	}
	d, ok := b.getDest(c.Dest, loc, true)
	if !ok {
		return
	}
	k, ok := b.ids.lookup(c.MessageID)
	if !ok {
		return // no live message has this producer: not found
	}
	var s *sub
	if hasSub {
		s = d.sub(c.SubscriptionKey)
	}
	b.applyRemove(d, k, loc, s, hasSub, len(c.Ack) == 0)
}

// applyRemove is updateIndex(KahaRemoveMessageCommand).
// s is the subscription of a durable ack (nil when unknown).
func (b *Builder) applyRemove(d *dest, k msgKey, loc codec.Location, s *sub, hasSub, ackEmpty bool) {
	if !hasSub {
		seq, ok := d.ids.take(k)
		if !ok {
			return
		}
		e, ok := d.entries.find(seq)
		if !ok {
			return
		}
		b.locRemove(d, e.loc)
		d.entries.take(seq)
		b.entryDeleted(d, e)
		b.ackRef(loc.File, e.loc.File)
		b.setLastUpdate(loc)
		return
	}
	seq, ok := d.ids.find(k)
	if !ok {
		return
	}
	if !d.topic {
		b.warnf("%s: durable-subscription ack on %s://%s: the broker fails on this command", loc, d.typ.Scheme(), d.name)
		return
	}
	// At runtime an unmatched ack (empty ack bytes) does not move lastAck;
	// on replay every ack does (§5.2).
	if s != nil && (b.phaseB || !ackEmpty) {
		s.lastAck = seq
	}
	e, ok := d.entries.find(seq)
	if ok {
		b.ackRef(loc.File, e.loc.File)
	}
	b.removeAckLocation(d, s, seq)
	b.setLastUpdate(loc)
}

func (b *Builder) deleteEntry(d *dest, seq int64, e entry, dropID bool) {
	b.locRemove(d, e.loc)
	d.entries.del(seq)
	if dropID {
		d.ids.del(e.id)
	}
	b.entryDeleted(d, e)
}

// entryDeleted accounts for e, taken out of d's indexes.
func (b *Builder) entryDeleted(d *dest, e entry) {
	b.ids.release(e.id)
	d.count--
	d.bytes -= int64(e.loc.Size)
}

func (b *Builder) removeAckLocation(d *dest, s *sub, seq int64) {
	if s == nil || s.node == nil || s.pos.empty() {
		return
	}
	s.pos.remove(seq)
	l := d.ackList()
	if !s.pos.empty() {
		l.put(s)
	} else {
		if l.lonely(s) {
			b.warnf("%s: the ack of %s's last message empties its ack-positions node after a get: the broker's ListIndex.remove fails on it (NullPointerException)", b.lastRecord, s.key)
		}
		l.remove(s, b.lostPositions)
	}
	if referenced(d, seq) {
		return
	}
	if e, ok := d.entries.find(seq); ok {
		b.deleteEntry(d, seq, e, true)
	}
}

func referenced(d *dest, seq int64) bool {
	for _, s := range d.cache {
		if s.hasPos && s.pos.contains(seq) {
			return true
		}
	}
	return false
}

func (b *Builder) subscriptionCmd(loc codec.Location, c *codec.Command) {
	d, ok := b.getDest(c.Dest, loc, true)
	if !ok {
		return
	}
	if !d.topic {
		b.warnf("%s: subscription command for %s://%s, which is not a topic: the broker fails on it", loc, d.typ.Scheme(), d.name)
		return
	}
	s := d.sub(c.SubscriptionKey)
	if !c.IsSubscriptionDelete() {
		if s != nil && sameLoc(s.loc, loc) {
			s.noteAdd(loc)
			return
		}
		if s == nil {
			l := d.ackList()
			if g := l.find(string(c.SubscriptionKey)); g != nil {
				// a deleted subscription's entry the unsubscribe left:
				// the new one has it
				s = &sub{key: g.key, pos: g.pos, node: g.node, hasPos: true}
				for i, o := range s.node.subs {
					if o == g {
						s.node.subs[i] = s
					}
				}
			} else {
				s = &sub{key: b.names.get(c.SubscriptionKey)}
			}
			d.subs = append(d.subs, s)
			d.cache = append(d.cache, s)
		}
		s.noteAdd(loc)
		s.info = append(s.info[:0], c.SubscriptionInfo...)
		s.loc = loc
		s.retro = c.Retroactive
		if !c.Retroactive {
			s.lastAck = d.nextSeq - 1
		} else {
			// addAckLocationForRetroactiveSub: every entry's sequences
			s.lastAck = -1
			var all seqSet
			l := d.ackList()
			l.each(func(o *sub) {
				for _, r := range o.pos.r {
					all.addRange(r.first, r.last)
				}
			})
			s.pos = all
			l.put(s)
		}
		return
	}
	// delete
	if s != nil {
		for i, o := range d.subs {
			if o == s {
				d.subs = append(d.subs[:i], d.subs[i+1:]...)
				break
			}
		}
		for i, o := range d.cache {
			if o == s {
				d.cache = append(d.cache[:i], d.cache[i+1:]...)
				break
			}
		}
	}
	// removeAckLocationsForSub: only when the list's head node has entries
	// (else the entry stays, its sub a ghost); it may be a ghost's entry
	if l := d.acks; l != nil && !l.empty() {
		if s == nil || s.node == nil {
			s = l.find(string(c.SubscriptionKey))
		}
		if s != nil && s.node != nil {
			l.remove(s, b.lostPositions)
			if !s.pos.empty() {
				// the removed set's messages no one else needs go; walk
				// the stored messages, not the set's ranges (which may be
				// wide: a sequence counter reset, a damaged index)
				var unref []int64
				d.entries.each(func(seq int64, _ entry) {
					if s.pos.contains(seq) && !referenced(d, seq) {
						unref = append(unref, seq)
					}
				})
				for _, seq := range unref {
					if e, ok := d.entries.find(seq); ok {
						b.deleteEntry(d, seq, e, true)
					}
				}
			}
		}
	}
	if len(d.subs) == 0 {
		b.removeDest(d)
	}
}

// ---- transactions ----

// txKey builds the lookup key of c's transaction into b.buf: its id as
// the tree shows it (codec.TxID.String), which tells transactions apart as
// the broker does (a local one by connection and number, an XA one by
// format, global id and branch). The key of a new transaction is its id.
func (b *Builder) txKey(c *codec.Command) []byte {
	b.buf = c.Tx.AppendString(b.buf[:0])
	return b.buf
}

// preparedKey is the key in Builder.txs of the prepared transaction with
// the id k; an in-flight one's key is its id. The broker keeps the two
// kinds in maps of their own (MessageDatabase.inflightTransactions and
// preparedTransactions): an operation of a transaction that is prepared
// starts an in-flight one with the same id (getInflightTx), a commit or
// rollback ends the in-flight one if there is one, else the prepared one,
// and a prepare moves the in-flight one over the prepared one. The broker
// meets this when the ack compaction has forwarded a prepared XA
// transaction's ack (KahaRemoveMessageCommand) and its commit: a replay
// from the journal commits the forwarded ack alone and keeps the
// transaction prepared (seed 496).
func preparedKey(k []byte) string { return string(k) + "\x00prepared" }

// tx returns the in-flight transaction of c (creating one when create)
// and records loc as one of its commands (getInflightTx: a prepared
// transaction with the id is not it).
func (b *Builder) tx(c *codec.Command, loc codec.Location, create bool) *txState {
	k := b.txKey(c)
	t, ok := b.txs[string(k)]
	if !ok {
		if !create {
			return nil
		}
		b.txSeq++
		if t = b.spareTx; t != nil {
			b.spareTx = nil
			*t = txState{cmds: t.cmds[:0]}
		} else {
			t = &txState{}
		}
		t.id, t.xa, t.order = string(k), c.Tx.Kind != codec.LocalTx, b.txSeq
		if !t.xa {
			// in the Builder: a Command made here escapes to the heap
			// (90 MB made and collected for 190 k transactions)
			b.rbCmd = codec.Command{Type: codec.RollbackCommand, Tx: c.Tx}
			b.rbCmd.Set(codec.FieldTransaction)
			b.rbBuf = codec.AppendCommand(b.rbBuf[:0], &b.rbCmd)
			t.rbSize = int32(len(b.rbBuf) + codec.RecordHeaderSize)
		}
		b.txs[t.id] = t
	}
	t.cmds = append(t.cmds, loc)
	return t
}

func (b *Builder) prepareCmd(loc codec.Location, c *codec.Command) {
	k := b.txKey(c)
	t := b.txs[string(k)]
	if t == nil {
		return // the broker only prepares an in-flight transaction
	}
	delete(b.txs, string(k))
	pk := preparedKey(k)
	if old := b.txs[pk]; old != nil {
		// the broker's map forgets the one prepared before: it is
		// neither committed nor rolled back
		b.warnf("%s: transaction %s is prepared again while prepared: the broker forgets its earlier operations", loc, t.id)
		b.dropTx(old)
	}
	t.prepared = true
	b.txs[pk] = t
	t.cmds = append(t.cmds, loc)
	for _, op := range t.ops {
		b.ackRef(loc.File, op.loc.File)
	}
}

func (b *Builder) commitCmd(loc codec.Location, c *codec.Command) {
	t := b.endingTx(c)
	if t == nil {
		b.setLastUpdate(loc)
		return
	}
	t.cmds = append(t.cmds, loc)
	for i := range t.ops {
		op := &t.ops[i]
		if d, ok := b.destByName(op.typ, op.name, op.loc); ok {
			if op.add {
				b.noteCommitSpan(d, op.loc)
				b.applyAdd(d, nil, op.id, true, op.loc, op.prio, op.supported, op.size)
			} else {
				var s *sub
				if op.hasSub {
					s = d.subByName(op.subKey)
				}
				b.applyRemove(d, op.id, op.loc, s, op.hasSub, op.ackEmpty)
			}
		}
		b.ackRef(loc.File, op.loc.File)
	}
	b.setLastUpdate(loc)
	b.nCommit++
	b.finish(t, Committed)
}

func (b *Builder) rollbackCmd(loc codec.Location, c *codec.Command) {
	t := b.endingTx(c)
	if t == nil {
		return
	}
	t.cmds = append(t.cmds, loc)
	if t.xa {
		for _, op := range t.ops {
			b.ackRef(loc.File, op.loc.File)
		}
	}
	b.nRollbk++
	b.finish(t, RolledBack)
}

// endingTx takes the transaction a commit or rollback of c ends out of
// the open ones: the in-flight one with its id, else the prepared one
// (nil: neither).
func (b *Builder) endingTx(c *codec.Command) *txState {
	k := b.txKey(c)
	if t := b.txs[string(k)]; t != nil {
		delete(b.txs, string(k))
		return t
	}
	pk := preparedKey(k)
	if t := b.txs[pk]; t != nil {
		delete(b.txs, pk)
		return t
	}
	return nil
}

// finish releases a finished transaction's operations and keeps a summary
// of it in the ring of completed transactions.
func (b *Builder) finish(t *txState, st TxState) {
	b.releaseOps(t)
	kind := LocalTx
	if t.xa {
		kind = XATx
	}
	switch {
	case b.keep == 0:
	case b.keep < 0:
		// all kept (a mount): encoded, made when first asked for
		if b.lazy == nil {
			b.lazy = &lazyTxs{}
		}
		b.lazy.add(t.id, kind, st, t.cmds, nil)
	case len(b.done) < b.keep:
		b.done = append(b.done, &Transaction{ID: t.id, Kind: kind, State: st, Commands: t.cmds})
		t.cmds = nil // the ring has them
	default:
		// the ring is full: its oldest entry is made the newest (the
		// ring's entries are the builder's alone until Build)
		*b.done[b.doneNext] = Transaction{ID: t.id, Kind: kind, State: st, Commands: t.cmds}
		t.cmds = nil
		b.doneNext = (b.doneNext + 1) % b.keep
		b.doneFull = true
	}
	b.spareTx = t
}

func (b *Builder) dropTx(t *txState) {
	for k, o := range b.txs {
		if o == t {
			delete(b.txs, k)
		}
	}
	b.releaseOps(t)
}

// releaseOps releases the message ids of t's operations and keeps the list
// for a later transaction (a busy store finishes hundreds of thousands).
func (b *Builder) releaseOps(t *txState) {
	for _, op := range t.ops {
		b.ids.release(op.id)
	}
	if ops := t.ops; cap(ops) > 0 && cap(ops) <= 256 && len(b.spareOps) < 64 {
		clear(ops)
		b.spareOps = append(b.spareOps, ops[:0])
	}
	t.ops = nil
}

// addOp appends op to t's operations, reusing a spare list.
func (b *Builder) addOp(t *txState, op txOp) {
	if t.ops == nil {
		if n := len(b.spareOps); n > 0 {
			t.ops = b.spareOps[n-1]
			b.spareOps[n-1] = nil
			b.spareOps = b.spareOps[:n-1]
		}
	}
	t.ops = append(t.ops, op)
}

package kahaindex

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"google.golang.org/protobuf/encoding/protowire"
)

// Index is a KahaDB index as a 5.17.2 broker loads it at start.
type Index struct {
	Path     string // db.data
	PageFile PageFile
	// Fresh: db.data is missing, empty, or holds no page: the broker starts
	// a new, empty index and replays the whole journal.
	Fresh        bool
	Meta         Metadata
	Destinations []*Destination // in the destinations B-tree's order (Java String order of keys)
	Notes        []Note

	shape shape
}

// Damaged reports whether some Note is Damage: parts of the index the
// broker cannot read and silently skips.
func (ix *Index) Damaged() bool {
	for _, n := range ix.Notes {
		if n.Kind == Damage {
			return true
		}
	}
	return false
}

// Destination returns the destination with key ("0:Q.A", "1:T.B"), or nil.
func (ix *Index) Destination(key string) *Destination {
	for _, d := range ix.Destinations {
		if d.Key == key {
			return d
		}
	}
	return nil
}

// ReplayStart is where a broker restarted on this index starts applying
// the journal (MessageDatabase.getRecoveryPosition, forceRecoverIndex off).
type ReplayStart struct {
	// FromStart: the index holds no position: the first record of the
	// journal.
	FromStart bool
	// At: the first transaction in progress at the last checkpoint
	// (After false, replay includes it), else the last update (After
	// true, replay starts at the record after it).
	At    codec.Location
	After bool
	// AuditReplay: the index has no producer audit or no ack-file map
	// location, so the broker reads the journal from its first record
	// anyway, using the records before the position above only to rebuild
	// the producer audit. (A location that does not load has the same
	// effect; that needs the journal to tell.)
	AuditReplay bool
}

// ReplayStart says where replay starts.
func (ix *Index) ReplayStart() ReplayStart {
	rs := ReplayStart{AuditReplay: ix.Meta.ProducerAudit == nil || ix.Meta.AckMap == nil}
	switch {
	case ix.Meta.FirstInProgressTx != nil:
		rs.At = *ix.Meta.FirstInProgressTx
	case ix.Meta.LastUpdate != nil:
		rs.At, rs.After = *ix.Meta.LastUpdate, true
	default:
		rs.FromStart = true
	}
	return rs
}

// Class is a priority class of the order index.
type Class int8

const (
	Low     Class = 0 // priorities 0-3 (prioritized destinations only)
	Default Class = 1 // priority 4, and every message of a non-prioritized destination
	High    Class = 2 // priorities 5-9
)

func (c Class) String() string {
	switch c {
	case Low:
		return "LO"
	case Default:
		return "DEF"
	case High:
		return "HI"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Message is one entry of a destination's order index.
type Message struct {
	Seq   int64
	ID    string
	Loc   codec.Location // of the ADD (or UPDATE) record, with its size
	Class Class
}

// Subscription is a durable subscription as the four subscription
// structures of a topic hold it.
type Subscription struct {
	Key string // clientId:subscriptionName
	// Command: the KahaSubscriptionCommand protobuf message as stored in
	// the subscriptions B-tree (unframed). HasCommand false: the key is
	// only in the other structures.
	Command    []byte
	HasCommand bool
	// Loc: where the subscription's command is in the journal (subLocations).
	Loc    codec.Location
	HasLoc bool
	// LastAck: the highest sequence acknowledged and its priority class
	// (PriorityHigh, PriorityDefault, PriorityLow) (subscriptionAcks).
	LastAck         int64
	LastAckPriority byte
	HasLastAck      bool
	// AckPositions: the sequences still pending for the subscription, as
	// stored (ackPositions). The broker keeps the next sequence to be
	// assigned in it as well.
	AckPositions    []Range
	HasAckPositions bool
}

// DecodeCommand decodes the stored subscription command into c (codec's
// decoder, as for a journal record). Byte fields of c point into Command.
func (s *Subscription) DecodeCommand(c *codec.Command) error {
	if !s.HasCommand {
		return fmt.Errorf("kahaindex: subscription %q: no command in the subscriptions B-tree", s.Key)
	}
	payload := protowire.AppendVarint([]byte{byte(codec.SubscriptionCommand)}, uint64(len(s.Command)))
	return codec.DecodeCommand(append(payload, s.Command...), c)
}

// Destination is one stored destination.
type Destination struct {
	Key  string         // "<type>:<name>" as stored
	Type codec.DestType // from the key
	Name string         // from the key
	// Topic: the destination has subscription indexes (a topic).
	Topic bool
	// Messages: the order index in the broker's iteration order (class
	// HI, then DEF, then LO, each by sequence).
	Messages []Message
	// NextSeq: the sequence the broker assigns to the next message
	// (MessageOrderIndex.nextMessageId after loadStoredDestination).
	NextSeq int64
	// Subscriptions: in subLocations order, then the keys of the
	// subscriptions B-tree that are not in subLocations, then keys only
	// in the last-ack or ack-position structures.
	Subscriptions []Subscription
	// Stats: the persisted statistics, nil when absent.
	Stats   *Stats
	Indexes Indexes
}

// Indexes are a destination's structures as stored, each in its own
// iteration order; Messages and Subscriptions are built from them.
type Indexes struct {
	MessageIDs            []MessageIDEntry // message-id index, key order
	Locations             []LocationEntry  // location index, key order
	SubscriptionCommands  []SubscriptionCommandEntry
	LastAcks              []LastAckEntry
	AckPositions          []AckPositionsEntry // list order
	SubscriptionLocations []SubscriptionLocationEntry
	Roots                 Roots
}

// MessageIDEntry is an entry of the message-id index.
type MessageIDEntry struct {
	ID  string
	Seq int64
}

// LocationEntry is an entry of the location index.
type LocationEntry struct {
	Loc codec.Location
	Seq int64
}

// SubscriptionCommandEntry is an entry of the subscriptions B-tree.
type SubscriptionCommandEntry struct {
	Key     string
	Command []byte
}

// LastAckEntry is an entry of the subscription-acks B-tree.
type LastAckEntry struct {
	Key      string
	Seq      int64
	Priority byte
}

// AckPositionsEntry is an entry of the ack-positions list.
type AckPositionsEntry struct {
	Key    string
	Ranges []Range
}

// SubscriptionLocationEntry is an entry of the subscription-locations list.
type SubscriptionLocationEntry struct {
	Key string
	Loc codec.Location
}

// Roots are the root pages of a destination's structures (-1: none).
type Roots struct {
	Default, Low, High, Locations, MessageIDs int64
	Subscriptions, LastAcks, AckPositions     int64
	SubscriptionLocations, Stats              int64
}

// Read loads the index of the KahaDB store in dir (db.data, db.redo and
// db.free) as a 5.17.2 broker does when it starts: the redo file is
// applied (in memory) when the broker would apply it, then the metadata
// page and every stored destination are read. It never writes anything.
//
// A *CorruptionError means the index is damaged; when its AtLoad is true
// a broker would log "Index corrupted. Recovering the index through journal
// replay" and rebuild it from the whole journal, which is what a caller
// should do too. Other errors are I/O errors. Damage the broker reads past
// without noticing is in Index.Notes.
func Read(dir string) (*Index, error) {
	var files [3]source
	for i, name := range []string{"db.data", "db.redo", "db.free"} {
		p := filepath.Join(dir, name)
		files[i].name = p
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kahaindex: %w", err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("kahaindex: %w", err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("kahaindex: %s: not a regular file", p)
		}
		files[i].r, files[i].size = f, st.Size()
	}
	return load(files[0], files[1], files[2])
}

// Parse is Read on the contents of db.data, db.redo and db.free (nil: the
// file does not exist).
func Parse(data, redo, free []byte) (*Index, error) {
	src := func(name string, b []byte) source {
		if b == nil {
			return source{name: name}
		}
		return source{name: name, r: bytes.NewReader(b), size: int64(len(b))}
	}
	return load(src("db.data", data), src("db.redo", redo), src("db.free", free))
}

// reader holds the state of one Read.
type reader struct {
	pf      *pageFile
	ix      *Index
	version int32
}

func load(data, redo, free source) (*Index, error) {
	pf, fresh, err := openPageFile(data, redo, free)
	if err != nil {
		return nil, err
	}
	ix := &Index{Path: data.name, PageFile: pf.info, Fresh: fresh}
	r := &reader{pf: pf, ix: ix}
	if fresh {
		// loadPageFile allocates the metadata page and the destinations
		// root: from the free list when db.free has pages, else as new
		// (free) pages at the end of the file.
		free := append([]Range(nil), pf.info.FreeList...)
		next := pf.info.PageCount
		alloc := func() (int64, bool) {
			if id, ok := allocateFree(&free); ok {
				return id, true
			}
			next++
			return next - 1, false
		}
		alloc() // the metadata page: written before it is read
		root, reused := alloc()
		ix.Meta = Metadata{State: 1, DestinationsPage: root, Version: IndexVersion, OpenWireVersion: 11}
		if !reused {
			return ix, nil
		}
		// A page the free list hands out is read as it is on disk.
		r.version = ix.Meta.Version
		if err := r.readDestinations(); err != nil {
			return nil, err
		}
		return ix, nil
	}
	if err := r.read(); err != nil {
		return nil, err
	}
	ix.shape = pf.shape
	return ix, nil
}

// allocateFree is SequenceSet.removeFirstSequence(1): the first value of
// the first sequence of at least one value.
func allocateFree(free *[]Range) (int64, bool) {
	for i, s := range *free {
		n := s.Last - s.First + 1
		if s.First == s.Last {
			n = 1
		}
		switch {
		case n == 1:
			*free = append((*free)[:i:i], (*free)[i+1:]...)
			return s.First, true
		case n > 1:
			(*free)[i].First++
			return s.First, true
		}
	}
	return 0, false
}

func (r *reader) note(kind NoteKind, dest string, page int64, format string, a ...any) {
	r.ix.Notes = append(r.ix.Notes, Note{Kind: kind, Destination: dest, Page: page, Text: fmt.Sprintf(format, a...)})
}

// stopNote records where an iteration stopped quietly.
func (r *reader) stopNote(dest, what string, stopped error) {
	page := int64(-1)
	var ce *CorruptionError
	if errors.As(stopped, &ce) {
		page = ce.Page
	}
	r.note(Damage, dest, page, "%s: iteration stops here, as the broker's does: %v", what, stopped)
}

// atLoad marks err as met while the broker loads the index.
func atLoad(err error) error {
	var ce *CorruptionError
	if errors.As(err, &ce) {
		ce.AtLoad = true
	}
	return err
}

func (r *reader) read() error {
	// Page 0: the metadata (MessageDatabase.loadPageFile).
	s, err := r.pf.openStream(0, "metadata")
	if err != nil {
		return atLoad(err)
	}
	if r.ix.Meta, err = readMetadata(s); err != nil {
		return atLoad(err)
	}
	r.version = r.ix.Meta.Version
	if r.version < minVersion {
		return &CorruptionError{File: r.pf.data.name, Page: 0, Offset: r.pf.toOffset(0), Structure: "metadata",
			Err: ErrVersion, Detail: fmt.Sprintf("version %d (a 5.17.2 broker upgrades it in place; this reader needs %d or later)", r.version, minVersion)}
	}
	return r.readDestinations()
}

// readDestinations reads the destinations B-tree and every destination.
func (r *reader) readDestinations() error {
	dests := &btree[jstring, storedDest]{pf: r.pf, root: r.ix.Meta.DestinationsPage, what: "destinations B-tree",
		key: readUTF, value: func(in dataInput) (storedDest, error) { return readStoredDest(in, r.version) },
		cmp: compareJava}
	if err := dests.load(); err != nil {
		return atLoad(err)
	}
	type entry struct {
		key jstring
		sd  storedDest
	}
	var list []entry
	stopped, err := dests.iterate(nil, func(k jstring, v storedDest) { list = append(list, entry{k, v}) })
	if err != nil {
		return atLoad(err)
	}
	if stopped != nil {
		r.stopNote("", "destinations B-tree", stopped)
	}
	seen := map[string]int{}
	for _, e := range list {
		// loadStoredDestination looks the key up again.
		sd, found, err := dests.get(e.key)
		if err != nil {
			return atLoad(err)
		}
		key := e.key.String()
		d, err := r.loadDestination(key, e.sd.topic, sd, found)
		if err != nil {
			return err
		}
		// The broker keeps its destinations in a map: a key listed twice
		// is loaded twice, and the last load is the one it keeps.
		if i, ok := seen[key]; ok {
			r.note(Mismatch, key, -1, "listed more than once in the destinations B-tree (the last one loaded is kept)")
			r.ix.Destinations[i] = d
			continue
		}
		seen[key] = len(r.ix.Destinations)
		r.ix.Destinations = append(r.ix.Destinations, d)
	}
	return nil
}

func newDestination(key string, topic bool) *Destination {
	d := &Destination{Key: key, Topic: topic, Name: key, Type: -1}
	if t, name, ok := strings.Cut(key, ":"); ok {
		if n, err := strconv.Atoi(t); err == nil {
			d.Type, d.Name = codec.DestType(n), name
		}
	}
	none := int64(-1)
	d.Indexes.Roots = Roots{none, none, none, none, none, none, none, none, none, none}
	return d
}

// loadDestination is MessageDatabase.loadStoredDestination (what the broker
// reads at load), followed by the reads of the structures the broker uses
// later (the order index iteration, the message-id, location and
// subscription indexes).
func (r *reader) loadDestination(key string, topic bool, sd storedDest, found bool) (*Destination, error) {
	d := newDestination(key, topic)
	if !found {
		r.note(Recreated, key, -1, "listed in the destinations B-tree but not found by a lookup of its key: the broker gives it new, empty indexes")
		return d, nil
	}
	if topic && !sd.topic {
		return nil, &CorruptionError{File: r.pf.data.name, Page: -1, Offset: -1, Structure: fmt.Sprintf("destination %q", key),
			Err: ErrInconsistent, Detail: "the destinations B-tree iterates it as a topic, but a lookup finds no subscription indexes", AtLoad: true}
	}
	if !topic && sd.topic {
		r.note(Mismatch, key, -1, "a lookup finds subscription indexes the broker does not load (the destinations B-tree iterates it as a queue)")
	}
	ro := &d.Indexes.Roots
	ro.Default, ro.Low, ro.High, ro.Locations, ro.MessageIDs = sd.defaultPrio, sd.lowPrio, sd.highPrio, sd.locations, sd.messageIDs
	if topic {
		ro.Subscriptions, ro.LastAcks, ro.AckPositions, ro.SubscriptionLocations =
			sd.subscriptions, sd.subscriptionAcks, sd.ackPositions, sd.subLocations
	}
	what := func(s string) string { return fmt.Sprintf("destination %q %s", key, s) }

	// Statistics (StoredMessageStoreStatistics.load): a free page is none.
	if sd.hasStats {
		ro.Stats = sd.stats
		typ, err := r.pf.pageType(sd.stats, what("statistics"))
		if err != nil {
			return nil, atLoad(err)
		}
		if typ != pageFree {
			s, err := r.pf.openStream(sd.stats, what("statistics"))
			if err != nil {
				return nil, atLoad(err)
			}
			if d.Stats, err = readStats(s); err != nil {
				return nil, atLoad(err)
			}
		}
	}

	// The order index (MessageOrderIndex.load, configureLast).
	orderTree := func(root int64, name string) *btree[int64, messageKeys] {
		return &btree[int64, messageKeys]{pf: r.pf, root: root, what: what("order index (" + name + ")"),
			key: readI64, value: func(in dataInput) (messageKeys, error) { return readMessageKeys(in, r.version) },
			cmp: compareInt64}
	}
	def, low, high := orderTree(sd.defaultPrio, "DEF"), orderTree(sd.lowPrio, "LO"), orderTree(sd.highPrio, "HI")
	for _, t := range []*btree[int64, messageKeys]{def, low, high} {
		if err := t.load(); err != nil {
			return nil, atLoad(err)
		}
	}
	var lastKey int64
	hasLast := false
	for _, t := range []*btree[int64, messageKeys]{high, def, low} {
		k, ok, err := t.last()
		if err != nil {
			return nil, atLoad(err)
		}
		if ok && (!hasLast || k > lastKey) {
			lastKey, hasLast = k, true
		}
	}
	if hasLast {
		d.NextSeq = lastKey + 1 // wraps as Java's long does
	}
	locations := &btree[codec.Location, int64]{pf: r.pf, root: sd.locations, what: what("location index"),
		key: func(in dataInput) (codec.Location, error) { return readLocationSize(in, r.version) }, value: readI64}
	messageIDs := &btree[jstring, int64]{pf: r.pf, root: sd.messageIDs, what: what("message-id index"),
		key: readUTF, value: readI64, cmp: compareJava}
	for _, err := range []error{locations.load(), messageIDs.load()} {
		if err != nil {
			return nil, atLoad(err)
		}
	}

	var subs *btree[jstring, []byte]
	if topic {
		var err error
		if subs, err = r.loadSubscriptionIndexes(d, sd, what); err != nil {
			return nil, err
		}
	}

	// What the broker reads later: the order index through a
	// MessageOrderIterator from the start, and the other indexes.
	zero := int64(0)
	for _, c := range []struct {
		t     *btree[int64, messageKeys]
		class Class
	}{{high, High}, {def, Default}, {low, Low}} {
		stopped, err := c.t.iterate(&zero, func(seq int64, mk messageKeys) {
			d.Messages = append(d.Messages, Message{Seq: seq, ID: mk.id.String(), Loc: mk.loc, Class: c.class})
		})
		if err != nil {
			return nil, err
		}
		if stopped != nil {
			r.stopNote(key, "order index ("+c.class.String()+")", stopped)
		}
	}
	stopped, err := messageIDs.iterate(nil, func(id jstring, seq int64) {
		d.Indexes.MessageIDs = append(d.Indexes.MessageIDs, MessageIDEntry{id.String(), seq})
	})
	if err != nil {
		return nil, err
	}
	if stopped != nil {
		r.stopNote(key, "message-id index", stopped)
	}
	stopped, err = locations.iterate(nil, func(l codec.Location, seq int64) {
		d.Indexes.Locations = append(d.Indexes.Locations, LocationEntry{l, seq})
	})
	if err != nil {
		return nil, err
	}
	if stopped != nil {
		r.stopNote(key, "location index", stopped)
	}
	if subs != nil {
		stopped, err = subs.iterate(nil, func(k jstring, cmd []byte) {
			d.Indexes.SubscriptionCommands = append(d.Indexes.SubscriptionCommands, SubscriptionCommandEntry{k.String(), cmd})
		})
		if err != nil {
			return nil, err
		}
		if stopped != nil {
			r.stopNote(key, "subscriptions B-tree", stopped)
		}
	}
	r.checkMessages(d)
	r.mergeSubscriptions(d)
	return d, nil
}

// loadSubscriptionIndexes is the topic part of loadStoredDestination:
// the subscriptions and subscription-acks B-trees, both lists (read whole),
// the subscription cache (an iteration of the acks), and the next sequence
// when the order index did not give one or ack positions go past it.
func (r *reader) loadSubscriptionIndexes(d *Destination, sd storedDest, what func(string) string) (*btree[jstring, []byte], error) {
	subs := &btree[jstring, []byte]{pf: r.pf, root: sd.subscriptions, what: what("subscriptions B-tree"),
		key: readUTF, value: readSubscriptionCommand, cmp: compareJava}
	acks := &btree[jstring, lastAck]{pf: r.pf, root: sd.subscriptionAcks, what: what("subscription-acks B-tree"),
		key: readUTF, value: func(in dataInput) (lastAck, error) { return readLastAck(in, r.version) }, cmp: compareJava}
	for _, err := range []error{subs.load(), acks.load()} {
		if err != nil {
			return nil, atLoad(err)
		}
	}
	ackPos := &listIndex[jstring, []Range]{pf: r.pf, head: sd.ackPositions, what: what("ack-positions list"),
		key: readUTF, value: readSequenceSet}
	positions, err := ackPos.load()
	if err != nil {
		return nil, atLoad(err)
	}
	subLocs := &listIndex[jstring, codec.Location]{pf: r.pf, head: sd.subLocations, what: what("subscription-locations list"),
		key: readUTF, value: readLocation}
	locs, err := subLocs.load()
	if err != nil {
		return nil, atLoad(err)
	}
	for _, e := range positions {
		d.Indexes.AckPositions = append(d.Indexes.AckPositions, AckPositionsEntry{e.key.String(), e.value})
	}
	for _, e := range locs {
		d.Indexes.SubscriptionLocations = append(d.Indexes.SubscriptionLocations, SubscriptionLocationEntry{e.key.String(), e.value})
	}
	stopped, err := acks.iterate(nil, func(k jstring, a lastAck) {
		d.Indexes.LastAcks = append(d.Indexes.LastAcks, LastAckEntry{k.String(), a.seq, a.prio})
	})
	if err != nil {
		return nil, atLoad(err)
	}
	if stopped != nil {
		r.stopNote(d.Key, "subscription-acks B-tree", stopped)
	}
	if d.NextSeq == 0 {
		// All messages gone: the next sequence follows the last acks.
		empty, err := acks.isEmpty()
		if err != nil {
			return nil, atLoad(err)
		}
		if !empty {
			for _, a := range d.Indexes.LastAcks {
				d.NextSeq = max(d.NextSeq, a.Seq+1)
			}
		}
		return subs, nil
	}
	// The largest pending sequence of any subscription (the broker keeps
	// the next sequence in every subscription's set).
	for _, e := range positions {
		m, ok, err := iteratedMax(e.value)
		if err != nil {
			return nil, &CorruptionError{File: r.pf.data.name, Page: sd.ackPositions, Offset: r.pf.toOffset(sd.ackPositions),
				Structure: what("ack-positions list"), Err: ErrBudget,
				Detail: fmt.Sprintf("subscription %q: %v", e.key.String(), err), AtLoad: true}
		}
		if ok {
			d.NextSeq = max(d.NextSeq, m)
		}
	}
	return subs, nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maxIterated bounds the values a SequenceSet iteration may yield before
// this reader gives up where the broker would loop (practically) forever.
const maxIterated = 1 << 32

// iteratedMax is the largest value SequenceSet's iterator yields for the
// stored sequences, computed without iterating. The iterator continues
// from the last value it returned, one at a time, until it reaches the
// sequence's last value: a sequence whose last value is not ahead of that
// (overlapping, unsorted or reversed sequences) makes it count around the
// whole long range.
func iteratedMax(seqs []Range) (m int64, ok bool, err error) {
	if len(seqs) == 0 {
		return 0, false, nil
	}
	yield := func(v int64) {
		if !ok || v > m {
			m, ok = v, true
		}
	}
	last := seqs[0].First - 1
	for _, s := range seqs {
		if last < s.First {
			last = s.First
			yield(last)
			if s.First == s.Last {
				continue
			}
		}
		steps := uint64(s.Last - last)
		if steps == 0 || steps > maxIterated {
			return 0, false, fmt.Errorf("the broker's iteration of sequence %d..%d would not end (it counts on from %d)", s.First, s.Last, last)
		}
		if s.Last < last { // wraps around through the largest long
			yield(int64(^uint64(0) >> 1))
		}
		last = s.Last
		yield(last)
	}
	return m, ok, nil
}

package kahaindex

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
	// LocationShapes: the location index of each destination (by key)
	// whose shape was read: a leaf for one that is a single leaf. A
	// destination whose location index could not be walked whole has
	// none.
	LocationShapes map[string]*LocationNode
	// LocationKeys: what each destination's location index iterated, by
	// key (the broker's cleanup keeps the files of those keys, whatever
	// the order index holds, and a broker refuses to start on a key in a
	// missing file)
	LocationKeys map[string]LocationKeys

	shape shape
}

// LocationKeys sums up the keys of a destination's location index.
type LocationKeys struct {
	Count int    // entries
	Sum   uint64 // SumLocation over their keys: the order index's locations sum the same in a sound index
	Files []int32
}

// SumLocation adds l to sum, a sum of locations that does not depend on
// their order (a hash of each, added): a location index's keys and the
// locations of its destination's order index sum the same unless a key
// or a message's location differs.
func SumLocation(sum uint64, l codec.Location) uint64 {
	x := uint64(uint32(l.File))<<32 | uint64(uint32(l.Offset))
	// splitmix64's finalizer
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return sum + x
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

// LocationNode is a node of a destination's location index as stored: a
// branch's keys and children, or a leaf (Children nil), whose keys are not
// kept (they are the destination's messages between its branch's keys).
// The broker's cleanup keeps the file of every branch key
// (MessageDatabase.checkpointUpdate's visitor), whether a message is still
// there or not.
type LocationNode struct {
	Keys     []codec.Location
	Children []*LocationNode
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
	// Node: the ordinal of the list node holding it (0: the head node);
	// the broker's ListNode splits and loses entries by node
	// (refgraph/acklist.go)
	Node int
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
	files, closeAll, err := openSources(dir, "db")
	if err != nil {
		return nil, err
	}
	defer closeAll()
	return load(files[0], files[1], files[2], nil)
}

// Sink receives the destinations of an index as Stream reads them. Any
// field may be nil.
type Sink struct {
	// Destination: a destination as the broker loaded it, before its
	// messages are read: everything but Messages, Subscriptions and the
	// Indexes Read keeps of the order, message-id, location and
	// subscriptions structures.
	Destination func(d *Destination)
	// Message: one entry of d's order index, in the order Read lists
	// them in Destination.Messages. m and m.ID are valid during the call
	// only.
	Message func(d *Destination, m *StreamMessage)
	// Done: d has been read whole (Subscriptions are set).
	Done func(d *Destination)
	// Restart (StreamFast): what the sink was handed so far is void; the
	// stream starts again from the first destination.
	Restart func()
	// CheckAfter (StreamFast): its second pass starts once this is closed
	// (nil: at once). StreamFast returns after both passes: it must be
	// closed.
	CheckAfter <-chan struct{}
}

// StreamMessage is a Message whose id is bytes (UTF-8, as Message.ID
// holds it) that the next message overwrites.
type StreamMessage struct {
	Seq   int64
	ID    []byte
	Loc   codec.Location
	Class Class
}

// Stream is Read for a caller that takes each destination's messages as
// they are read (sink) instead of all of them at once: it reads the same
// pages in the same order, with the same checks, notes and errors, but
// keeps neither Destination.Messages nor the message-id and location
// indexes (Indexes.MessageIDs, Indexes.Locations), so it does not note
// where those disagree with the order index (Read's Mismatch notes about
// them). A destination handed to the sink may yet be followed by an
// error: a caller keeps nothing of a Stream that fails.
func Stream(dir string, sink Sink) (*Index, error) {
	files, closeAll, err := openSources(dir, "db")
	if err != nil {
		return nil, err
	}
	defer closeAll()
	return load(files[0], files[1], files[2], &sink)
}

// StreamBytes is Stream on the contents of db.data, db.redo and db.free
// (Parse's arguments).
func StreamBytes(data, redo, free []byte, sink Sink) (*Index, error) {
	files := byteSources("db", data, redo, free)
	return load(files[0], files[1], files[2], &sink)
}

// openSources opens the page file PREFIX.data, its PREFIX.redo and
// PREFIX.free in dir (a missing one is a source without a reader); closeAll
// closes what was opened.
func openSources(dir, prefix string) (files [3]source, closeAll func(), err error) {
	var opened []*os.File
	closeAll = func() {
		for _, f := range opened {
			f.Close()
		}
	}
	for i, ext := range []string{".data", ".redo", ".free"} {
		p := filepath.Join(dir, prefix+ext)
		files[i].name = p
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			closeAll()
			return files, nil, fmt.Errorf("kahaindex: %w", err)
		}
		opened = append(opened, f)
		st, err := f.Stat()
		if err != nil {
			closeAll()
			return files, nil, fmt.Errorf("kahaindex: %w", err)
		}
		if !st.Mode().IsRegular() {
			closeAll()
			return files, nil, fmt.Errorf("kahaindex: %s: not a regular file", p)
		}
		files[i].r, files[i].size = f, st.Size()
	}
	return files, closeAll, nil
}

// byteSources are the page file PREFIX.data, .redo and .free given as
// their contents (nil: the file does not exist).
func byteSources(prefix string, data, redo, free []byte) (files [3]source) {
	for i, b := range [][]byte{data, redo, free} {
		files[i].name = prefix + []string{".data", ".redo", ".free"}[i]
		if b != nil {
			files[i].r, files[i].size = bytes.NewReader(b), int64(len(b))
		}
	}
	return files
}

// Parse is Read on the contents of db.data, db.redo and db.free (nil: the
// file does not exist).
func Parse(data, redo, free []byte) (*Index, error) {
	files := byteSources("db", data, redo, free)
	return load(files[0], files[1], files[2], nil)
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

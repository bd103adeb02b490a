package kahaindex

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error Read returns for a bad index wraps exactly
// one of them inside a *CorruptionError; an error that is not a
// *CorruptionError is an I/O error (a file that cannot be opened or read).
//
// The first group are the conditions the broker's Java code meets as an
// IOException (EOFException, UTFDataFormatException, ...): inside a B-tree
// iteration the broker swallows them and the iteration just ends there
// (Read does the same and adds a Note). The second group are runtime
// exceptions in the broker (or, for ErrCycle and ErrBudget, a broker that
// would never finish): they always fail.
var (
	// ErrHeader: neither copy of the 4 KiB properties header of db.data
	// can be used (file too short, malformed \u escape, page size unusable).
	ErrHeader = errors.New("page file header unusable")
	// ErrRedo: the redo file would make the broker's page file load fail
	// (missing or empty after an unclean shutdown, header shorter than 20
	// bytes, a page write at an impossible offset).
	ErrRedo = errors.New("redo file unusable")
	// ErrFreeList: a cleanly shut down page file says it has free pages but
	// db.free is missing or malformed.
	ErrFreeList = errors.New("free page list unusable")
	// ErrPageID: a negative page id, or a page past the end of the file.
	ErrPageID = errors.New("page id out of range")
	// ErrFreePage: a page stream starts at, or runs into, a free page.
	ErrFreePage = errors.New("page stream runs into a free page")
	// ErrShort: a structure needs more bytes than its page stream holds.
	ErrShort = errors.New("page stream ends early")
	// ErrUTF: a string is not valid modified UTF-8 (Java readUTF).
	ErrUTF = errors.New("malformed modified UTF-8")
	// ErrProtobuf: a stored subscription command does not parse.
	ErrProtobuf = errors.New("subscription command does not parse")

	// ErrOverrun: an end page whose length field exceeds the page size was
	// read past the page (ArrayIndexOutOfBoundsException in the broker).
	ErrOverrun = errors.New("page length exceeds page size")
	// ErrNegative: a negative element count or length where the broker
	// allocates an array of that size (NegativeArraySizeException).
	ErrNegative = errors.New("negative count")
	// ErrInconsistent: structures that contradict each other in a way the
	// broker fails on (NullPointerException), e.g. a destination whose
	// B-tree entry says topic but whose stored value has no subscriptions.
	ErrInconsistent = errors.New("index structures disagree")
	// ErrVersion: an index metadata version this reader does not read
	// (below 6; a 5.17.2 broker would upgrade it in place).
	ErrVersion = errors.New("unsupported index version")
	// ErrCycle: page links that loop (a page stream, a B-tree descent, a
	// leaf chain or a list chain). The broker would loop forever.
	ErrCycle = errors.New("page links form a cycle")
	// ErrBudget: reading the index needed far more page reads than its
	// size explains (pages shared between structures many times over).
	ErrBudget = errors.New("index too convoluted to read")
)

// swallowed reports whether the broker meets err as an IOException, which
// its B-tree iterators catch and treat as the end of the iteration.
func swallowed(err error) bool {
	for _, s := range []error{ErrPageID, ErrFreePage, ErrShort, ErrUTF, ErrProtobuf} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// isEOF reports whether the broker meets err as a java.io.EOFException (the
// only exception MessageDatabase.Metadata.read catches): the stream ended,
// ran into a free page, or linked past the end of the file.
func isEOF(err error) bool {
	var ce *CorruptionError
	if errors.As(err, &ce) {
		return ce.eof
	}
	return false
}

// CorruptionError locates damage in db.data (or db.redo, db.free).
type CorruptionError struct {
	File string // path of the file
	// Page is the page the damage is in, -1 when it is not in a page (the
	// header, the redo or free file).
	Page int64
	// Offset is the byte offset in File of the damaged field (for a page,
	// the page's offset plus the position in it).
	Offset int64
	// Structure names what was being read: "metadata", "destinations
	// B-tree", `destination "1:T.A" order index (HI)`, ...
	Structure string
	Err       error // one of the sentinels
	Detail    string
	// AtLoad: the broker reads this part while it loads the index, so it
	// would log "Index corrupted. Recovering the index through journal
	// replay", delete the index and replay the whole journal. When false
	// the broker loads the index and meets the damage later, while it runs.
	AtLoad bool

	eof bool // the broker sees a java.io.EOFException
}

func (e *CorruptionError) Error() string {
	s := e.File + ": "
	if e.Page >= 0 {
		s += fmt.Sprintf("page %d, ", e.Page)
	}
	s += fmt.Sprintf("offset %d", e.Offset)
	if e.Structure != "" {
		s += ": " + e.Structure
	}
	s += ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.AtLoad {
		s += " (a broker would discard the index and replay the whole journal)"
	}
	return s
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// NoteKind classifies a Note.
type NoteKind int

const (
	// Damage: part of an index the broker reads past without failing, as
	// its B-tree iterators do when a page cannot be read: the broker sees
	// less than was stored.
	Damage NoteKind = iota
	// Mismatch: two structures that should agree do not (the message-id
	// or location index against the order index, the four subscription
	// structures against each other). The broker keeps going.
	Mismatch
	// Recreated: a destination listed in the destinations B-tree that a
	// lookup by its key does not find; the broker gives it fresh, empty
	// indexes.
	Recreated
)

func (k NoteKind) String() string {
	switch k {
	case Damage:
		return "damage"
	case Mismatch:
		return "mismatch"
	case Recreated:
		return "recreated"
	}
	return fmt.Sprintf("NoteKind(%d)", int(k))
}

// Note is something Read found that does not stop it.
type Note struct {
	Kind        NoteKind
	Destination string // destination key, "" for the whole index
	Page        int64  // -1 when not about one page
	Text        string
}

func (n Note) String() string {
	s := n.Kind.String() + ": "
	if n.Destination != "" {
		s += fmt.Sprintf("destination %q: ", n.Destination)
	}
	if n.Page >= 0 {
		s += fmt.Sprintf("page %d: ", n.Page)
	}
	return s + n.Text
}

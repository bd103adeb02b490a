// Package holders is the document that says why each data file of a store
// is kept ("pinned", with what holds it) or deleted at the broker's next
// cleanup ("free"): what `kahafs holders` prints (Doc, as JSON or one line
// a file: Table) and what the mount shows in by-file/db-N.log/ (File, as
// holders.json and holders: Text). It only lays out refgraph's verdicts.
package holders

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
)

// File is what holds one data file: an element of Doc.Files, and the
// mount's holders.json.
type File struct {
	ID     int32  `json:"id"`
	Name   string `json:"name"`
	Pinned bool   `json:"pinned"`
	// Bytes is the file's length; Allocated the bytes it takes on disk
	// (less for a sparse, preallocated file; what deleting it gives back),
	// when known (Document stats the file).
	Bytes     int64             `json:"bytes"`
	Allocated int64             `json:"allocated,omitempty"`
	Commands  int               `json:"commands"`
	Reasons   []refgraph.Reason `json:"reasons"`
	Notes     []refgraph.Reason `json:"notes,omitempty"`
	// AcksFor are the ids of the files holding messages this file's acks
	// are for (the broker's ack-message-file map); ChainStart, for a file
	// kept by its acks, the ids of the files starting its ack chains:
	// kept by something else (refgraph.File).
	AcksFor    []int32 `json:"acksFor,omitempty"`
	ChainStart []int32 `json:"chainStart,omitempty"`
}

// Of is the holders of the data file f of a replay graph.
func Of(f *refgraph.File) File {
	hf := File{ID: f.ID, Name: f.Name, Pinned: f.Pinned, Bytes: f.Size, Commands: f.Commands, Reasons: f.Reasons, Notes: f.Notes,
		AcksFor: f.AcksFor, ChainStart: f.ChainStart}
	if hf.Reasons == nil {
		hf.Reasons = []refgraph.Reason{}
	}
	return hf
}

// Doc is the holders of every data file of a store.
type Doc struct {
	Store string `json:"store"`
	// BrokerPID is the process that held the broker's lock on the store
	// (a running broker) when it was read; Running says the prediction is
	// a running broker's next periodic cleanup, not a restarted one's.
	BrokerPID int32 `json:"brokerPid,omitempty"`
	Running   bool  `json:"running,omitempty"`
	// MaxFileLength is the journalMaxFileLength the prediction assumed.
	MaxFileLength replaycache.MaxFileLength `json:"maxFileLength"`
	Files         []File                    `json:"files"`
	// GCCandidates are the ids of the files the next cleanup deletes:
	// exactly those not Pinned.
	GCCandidates []int32 `json:"gcCandidates"`
	// Totals sums the files' sizes: all, pinned, free (what the next
	// cleanup gives back).
	Totals     Totals   `json:"totals"`
	LastUpdate string   `json:"lastUpdate,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// IfIndexDeleted: the durable subscriptions of which a broker whose
	// db.data was deleted (it rebuilds its index from the journal) does
	// not recover every pending message, and how many (refgraph
	// RebuildLoss): "do not delete db.data".
	IfIndexDeleted []refgraph.RebuildLoss `json:"ifIndexDeleted,omitempty"`
}

// Size is a number of files and their bytes: their length, and what they
// take on disk.
type Size struct {
	Files     int   `json:"files"`
	Bytes     int64 `json:"bytes"`
	Allocated int64 `json:"allocated"`
}

func (s *Size) add(f File) {
	s.Files++
	s.Bytes += f.Bytes
	s.Allocated += f.Allocated
}

// Totals are the sizes of a store's data files. NextCleanupFrees is the
// disk space the broker's next cleanup gives back: the allocated bytes of
// the free files.
type Totals struct {
	All              Size  `json:"all"`
	Pinned           Size  `json:"pinned"`
	Free             Size  `json:"free"`
	NextCleanupFrees int64 `json:"nextCleanupFrees"`
}

// TotalsOf sums files.
func TotalsOf(files []File) Totals {
	var t Totals
	for _, f := range files {
		t.All.add(f)
		if f.Pinned {
			t.Pinned.add(f)
		} else {
			t.Free.add(f)
		}
	}
	t.NextCleanupFrees = t.Free.Allocated
	return t
}

// Document is the holders of every data file of the store in dir, as the
// replay graph g says, assuming the journalMaxFileLength mfl.
func Document(dir string, g *refgraph.Graph, mfl replaycache.MaxFileLength) Doc {
	doc := Doc{Store: dir, MaxFileLength: mfl, Files: []File{}, GCCandidates: append([]int32{}, g.GCCandidates()...),
		Warnings: g.Warnings(), IfIndexDeleted: g.RebuildLosses()}
	if s := g.Summary(); s.HasCleanupLastUpdate {
		doc.LastUpdate = s.CleanupLastUpdate.String()
	}
	for _, f := range g.Files() {
		hf := Of(f)
		hf.Allocated = allocated(filepath.Join(dir, f.Name), hf.Bytes)
		doc.Files = append(doc.Files, hf)
	}
	doc.Totals = TotalsOf(doc.Files)
	return doc
}

// allocated is the disk space of the file at p (its length when it cannot
// be stat'ed, or stat gives no blocks).
func allocated(p string, size int64) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return size
	}
	return st.Blocks * 512
}

// WriteJSON writes doc as indented JSON.
func (doc Doc) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// freeText says what a free file is.
const freeText = "free: the broker deletes it at its next cleanup"

// Table returns one line a data file, the names padded to one width:
// "db-3.log pinned: REASON; REASON (note: NOTE)" or "db-4.log free: …".
// The texts are as the graph says them: a terminal needs them escaped.
func (doc Doc) Table() []string {
	width := 0
	for _, f := range doc.Files {
		width = max(width, len(f.Name))
	}
	lines := make([]string, 0, len(doc.Files))
	for _, f := range doc.Files {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%-*s %*s ", width, f.Name, sizeWidth, SizeText(f.Bytes))
		if f.Pinned {
			sb.WriteString("pinned: ")
			for i, r := range f.Reasons {
				if i > 0 {
					sb.WriteString("; ")
				}
				sb.WriteString(r.Text)
			}
		} else {
			sb.WriteString(freeText)
		}
		for _, n := range f.Notes {
			sb.WriteString(" (note: ")
			sb.WriteString(n.Text)
			sb.WriteString(")")
		}
		lines = append(lines, sb.String())
	}
	return lines
}

// sizeWidth is the width of SizeText up to 999.9 GiB.
const sizeWidth = 9

// SizeText is n bytes for a person: "512 B", "32.0 MiB".
func SizeText(n int64) string { return SizeTextPrec(n, 1) }

// SizeTextPrec is n bytes for a person with prec decimals past a KiB:
// "512 B", "32.00 MiB".
func SizeTextPrec(n int64, prec int) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for x := n / unit; x >= unit; x /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.*f %ciB", prec, float64(n)/float64(div), "KMGTPE"[exp])
}

// TotalsLines says the totals: what the data files take, what is pinned,
// what the next cleanup deletes and the disk space that gives back.
func (doc Doc) TotalsLines() []string {
	t := doc.Totals
	line := func(what string, s Size) string {
		return fmt.Sprintf("%s: %d file(s), %d bytes (%s), %d bytes on disk (%s)", what, s.Files, s.Bytes, SizeText(s.Bytes), s.Allocated, SizeText(s.Allocated))
	}
	return []string{
		line("total", t.All),
		line("pinned", t.Pinned),
		line("free", t.Free),
		fmt.Sprintf("the next cleanup frees %d bytes (%s)", t.NextCleanupFrees, SizeText(t.NextCleanupFrees)),
	}
}

// IndexDeletedLines are the warnings of IfIndexDeleted, one line each
// ("do not delete db.data: …").
func (doc Doc) IndexDeletedLines() []string {
	var out []string
	for _, l := range doc.IfIndexDeleted {
		out = append(out, l.Text())
	}
	return out
}

// Text is the holders of one file a line each: "pinned" or "free: …",
// then one reason a line ("KIND: text"), then the notes ("note: KIND:
// text"); line breaks in the texts become spaces. A file kept by its acks
// then says where its ack chains start ("chain-start: db-2.log, …").
func (f File) Text() []byte {
	var b strings.Builder
	if f.Pinned {
		b.WriteString("pinned\n")
	} else {
		b.WriteString(freeText + "\n")
	}
	for _, r := range f.Reasons {
		fmt.Fprintf(&b, "%s: %s\n", r.Kind, oneLine(r.Text))
	}
	for _, r := range f.Notes {
		fmt.Fprintf(&b, "note: %s: %s\n", r.Kind, oneLine(r.Text))
	}
	if len(f.ChainStart) > 0 {
		fmt.Fprintf(&b, "chain-start: %s (kept by something else than acks: the ack chain that keeps this file starts there)\n", fileNames(f.ChainStart))
	}
	return []byte(b.String())
}

// fileNames is "db-2.log, db-3.log".
func fileNames(ids []int32) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = codec.DataFileName(id)
	}
	return strings.Join(names, ", ")
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// StoreDoc is one store of a layout of several (an mKahaDB root, a
// broker's data directory): its directory's name as on disk, its kind
// ("kahadb", "txstore", "scheduler") and the holders of its files, shaped
// exactly as the Doc of a single store. A store kahafs does not model has
// no Doc: NotAnalysed says why, and nothing is predicted of its files.
type StoreDoc struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Filter is the destination filter an mKahaDB store is named after,
	// decoded from Name.
	Filter      string `json:"filter,omitempty"`
	NotAnalysed string `json:"notAnalysed,omitempty"`
	*Doc
	// Scheduler is a job scheduler store's document (package scheduler's
	// Report.WriteJSON, its own "kind"), written after Name in place of
	// Doc.
	Scheduler json.RawMessage `json:"-"`
}

// MarshalJSON writes sd; a job scheduler store's as its own document with
// its name first.
func (sd StoreDoc) MarshalJSON() ([]byte, error) {
	type plain StoreDoc
	if sd.Scheduler == nil {
		return json.Marshal(plain(sd))
	}
	raw := bytes.TrimSpace(sd.Scheduler)
	if len(raw) < 2 || raw[0] != '{' {
		return nil, fmt.Errorf("holders: %s: the scheduler's document is not a JSON object", sd.Name)
	}
	name, err := json.Marshal(sd.Name)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"name":`), name...)
	if rest := bytes.TrimSpace(raw[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, raw[1:]...), nil
}

// LayoutDoc is the holders of every store of a layout of several.
type LayoutDoc struct {
	Stores []StoreDoc `json:"stores"`
}

// WriteJSON writes doc as indented JSON.
func (doc LayoutDoc) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

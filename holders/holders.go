// Package holders is the document that says why each data file of a store
// is kept ("pinned", with what holds it) or deleted at the broker's next
// cleanup ("free"): what `kahafs holders` prints (Doc, as JSON or one line
// a file: Table) and what the mount shows in by-file/db-N.log/ (File, as
// holders.json and holders: Text). It only lays out refgraph's verdicts.
package holders

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
)

// File is what holds one data file: an element of Doc.Files, and the
// mount's holders.json.
type File struct {
	ID       int32             `json:"id"`
	Name     string            `json:"name"`
	Pinned   bool              `json:"pinned"`
	Commands int               `json:"commands"`
	Reasons  []refgraph.Reason `json:"reasons"`
	Notes    []refgraph.Reason `json:"notes,omitempty"`
}

// Of is the holders of the data file f of a replay graph.
func Of(f *refgraph.File) File {
	hf := File{ID: f.ID, Name: f.Name, Pinned: f.Pinned, Commands: f.Commands, Reasons: f.Reasons, Notes: f.Notes}
	if hf.Reasons == nil {
		hf.Reasons = []refgraph.Reason{}
	}
	return hf
}

// Doc is the holders of every data file of a store.
type Doc struct {
	Store string `json:"store"`
	// MaxFileLength is the journalMaxFileLength the prediction assumed.
	MaxFileLength replaycache.MaxFileLength `json:"maxFileLength"`
	Files         []File                    `json:"files"`
	// GCCandidates are the ids of the files the next cleanup deletes:
	// exactly those not Pinned.
	GCCandidates []int32  `json:"gcCandidates"`
	LastUpdate   string   `json:"lastUpdate,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
}

// Document is the holders of every data file of the store in dir, as the
// replay graph g says, assuming the journalMaxFileLength mfl.
func Document(dir string, g *refgraph.Graph, mfl replaycache.MaxFileLength) Doc {
	doc := Doc{Store: dir, MaxFileLength: mfl, Files: []File{}, GCCandidates: append([]int32{}, g.GCCandidates()...),
		Warnings: g.Warnings()}
	if s := g.Summary(); s.HasCleanupLastUpdate {
		doc.LastUpdate = s.CleanupLastUpdate.String()
	}
	for _, f := range g.Files() {
		doc.Files = append(doc.Files, Of(f))
	}
	return doc
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
		fmt.Fprintf(&sb, "%-*s ", width, f.Name)
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

// Text is the holders of one file a line each: "pinned" or "free: …",
// then one reason a line ("KIND: text"), then the notes ("note: KIND:
// text"); line breaks in the texts become spaces.
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
	return []byte(b.String())
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

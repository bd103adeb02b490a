package scheduler

import (
	"fmt"
	"io"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/jsonw"
	"github.com/kahafs/kahafs/openwire"
)

// DefaultMaxFileLength is the journalMaxFileLength of a job scheduler
// store the broker makes (Journal.DEFAULT_MAX_FILE_LENGTH).
const DefaultMaxFileLength = 32 << 20

// MaxFileLength is the journalMaxFileLength a report assumed.
type MaxFileLength struct {
	Value int64 `json:"value"`
	// Source: "flag", "preallocated", "lower-bound" or "default".
	Source string `json:"source"`
	// Exact: given, or read off preallocated files. Only then does the
	// report let the restart's trace start a new file (which frees the
	// newest one): otherwise the newest file is kept, the safe side.
	Exact bool   `json:"exact"`
	Text  string `json:"text"`
}

// Options say how to analyse a job scheduler store.
type Options struct {
	// MaxFileLength is the store's journalMaxFileLength (> 0: given);
	// zero: read off the store.
	MaxFileLength int64
	// Running predicts the next cleanup of a store running now (its last
	// update is the journal's last record) instead of a restarted one's.
	Running bool
	// SkipChecksums reads without verifying batch checksums.
	SkipChecksums bool
}

// Report is what Analyse found in a job scheduler store.
type Report struct {
	Store         *codec.Store
	Model         *Model
	Prediction    *Prediction
	MaxFileLength MaxFileLength
	Running       bool
	// Source says whether the state came from the index or the whole
	// journal.
	Source Source
}

// Analyse replays the job scheduler store st and predicts its next
// cleanup.
func Analyse(st *codec.Store, opts Options) (*Report, error) {
	m, src, err := Load(st, codec.ReadOptions{SkipChecksums: opts.SkipChecksums})
	if err != nil {
		return nil, err
	}
	r := &Report{Store: st, Model: m, Source: src, Running: opts.Running}
	r.MaxFileLength = settle(m, opts.MaxFileLength)
	if opts.Running {
		r.Prediction = m.predict(m.LastUpdate, false)
	} else {
		r.Prediction = m.Predict(r.MaxFileLength.Value)
		if r.Prediction.NewFile && !r.MaxFileLength.Exact {
			// the length is not known exactly: keep the newest file
			last := m.Files[len(m.Files)-1]
			r.Prediction = m.predict(codec.Location{File: last.Info.ID, Offset: int32(last.End + codec.BatchHeaderSize), Size: RestartTraceSize}, false)
		}
	}
	return r, nil
}

func settle(m *Model, given int64) MaxFileLength {
	if given > 0 {
		return MaxFileLength{Value: given, Source: "flag", Exact: true, Text: "given"}
	}
	lf := make([]codec.LayoutFile, len(m.Files))
	for i, f := range m.Files {
		lf[i] = codec.LayoutFile{Name: f.Info.Name, Size: f.Size, End: f.End, Records: f.Records, Damaged: len(f.Damage) > 0}
	}
	inf := codec.InferMaxFileLength(lf)
	switch inf.Kind {
	case codec.InferredPreallocated:
		return MaxFileLength{Value: inf.Value, Source: inf.Kind, Exact: true, Text: "read off the store: " + inf.Evidence}
	case codec.InferredLowerBound:
		return MaxFileLength{Value: inf.Value, Source: inf.Kind, Text: "at least this, read off the store: " + inf.Evidence +
			"; the newest file is kept unless the restart's trace surely fits in it"}
	}
	return MaxFileLength{Value: DefaultMaxFileLength, Source: "default", Text: "the broker's default (the files tell nothing); the newest file is kept"}
}

// Table is the text report: one line per data file.
func (r *Report) Table() []string {
	var out []string
	w := 0
	for _, f := range r.Prediction.Files {
		w = max(w, len(f.Name))
	}
	for _, f := range r.Prediction.Files {
		pad := strings.Repeat(" ", w-len(f.Name))
		if !f.Pinned {
			out = append(out, fmt.Sprintf("%s%s free: the job scheduler store deletes it at its next cleanup", f.Name, pad))
			continue
		}
		texts := make([]string, len(f.Reasons))
		for i, rs := range f.Reasons {
			texts[i] = rs.Text
		}
		out = append(out, fmt.Sprintf("%s%s pinned: %s", f.Name, pad, strings.Join(texts, "; ")))
	}
	return out
}

// Header is the report's first lines: the store, its jobs and the length.
func (r *Report) Header() []string {
	mode := "the first cleanup of a broker started on it"
	if r.Running {
		mode = "the next cleanup of the broker running on it"
	}
	src := "its index (scheduleDB.data) and the journal from the index's last update on (that record again)"
	if r.Source.LastUpdate != nil {
		src += " " + r.Source.LastUpdate.String()
	}
	if !r.Source.Index {
		src = "the whole journal (no index)"
		if r.Source.IndexProblem != "" {
			src = "the whole journal, as the broker rebuilds an index it cannot use: " + r.Source.IndexProblem
		}
	}
	return []string{
		fmt.Sprintf("job scheduler store %s: %d job(s) scheduled; predicting %s", r.Store.Dir, len(r.Model.Jobs()), mode),
		"state from " + src,
		fmt.Sprintf("journalMaxFileLength %d: %s", r.MaxFileLength.Value, r.MaxFileLength.Text),
	}
}

// WriteJSON writes the report as one JSON document:
//
//	{"kind":"scheduler","store":DIR,"maxFileLength":{…},"running":false,
//	 "writePosition":"11:1396","files":[{"id","name","size","pinned","references","reasons":[…]}],
//	 "gcCandidates":[…],"jobs":[JobJSON…]}
func (r *Report) WriteJSON(w io.Writer) error {
	jw := jsonw.Object(nil)
	jw.Str("kind", "scheduler")
	jw.Str("store", r.Store.Dir)
	jw.Open("maxFileLength")
	jw.Int("value", r.MaxFileLength.Value)
	jw.Str("source", r.MaxFileLength.Source)
	jw.Bool("exact", r.MaxFileLength.Exact)
	jw.Str("text", r.MaxFileLength.Text)
	jw.Close()
	jw.Bool("running", r.Running)
	jw.Bool("fromIndex", r.Source.Index)
	jw.Str("writePosition", r.Prediction.Trace.String())
	jw.OpenArray("files")
	for _, f := range r.Prediction.Files {
		jw.OpenValue()
		jw.Int("id", int64(f.ID))
		jw.Str("name", f.Name)
		jw.Int("size", f.Size)
		jw.Bool("pinned", f.Pinned)
		jw.Int("references", f.Refs)
		jw.OpenArray("reasons")
		for _, rs := range f.Reasons {
			jw.OpenValue()
			jw.Str("kind", rs.Kind)
			jw.Str("text", rs.Text)
			if len(rs.Jobs) > 0 {
				jw.OpenArray("jobs")
				for _, id := range rs.Jobs {
					jw.StrValue(id)
				}
				jw.CloseArray()
			}
			if len(rs.Files) > 0 {
				jw.OpenArray("files")
				for _, id := range rs.Files {
					jw.IntValue(int64(id))
				}
				jw.CloseArray()
			}
			jw.Close()
		}
		jw.CloseArray()
		jw.Close()
	}
	jw.CloseArray()
	jw.OpenArray("gcCandidates")
	for _, id := range r.Prediction.Deleted {
		jw.IntValue(int64(id))
	}
	jw.CloseArray()
	jw.OpenArray("jobs")
	for _, j := range r.Model.Jobs() {
		b, err := JobJSON(r.Store, j, openwire.JSONOptions{})
		if err != nil {
			return err
		}
		jw.RawValue(b)
	}
	jw.CloseArray()
	_, err := w.Write(append(jw.End(), '\n'))
	return err
}

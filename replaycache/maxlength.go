package replaycache

import (
	"fmt"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// Where the journalMaxFileLength of an analysis came from
// (MaxFileLength.Source).
const (
	// FromFlag: given (--max-file-length).
	FromFlag = "flag"
	// FromPreallocation: the store's files are preallocated to it (exact).
	FromPreallocation = codec.InferredPreallocated
	// FromLowerBound: the least length the store's files allow (they are
	// not preallocated, so the exact value cannot be read off them).
	FromLowerBound = codec.InferredLowerBound
	// FromDefault: nothing told it; the broker's default (32 MiB).
	FromDefault = "default"
)

// MaxFileLength is the journalMaxFileLength an analysis assumed (the
// prediction of the broker's next cleanup depends on it), where it came
// from, and what the store says against it.
type MaxFileLength struct {
	Value  int64  `json:"value"`
	Source string `json:"source"`
	// Exact: the store shows this very length (its preallocated files),
	// or it was given and the store does not contradict it.
	Exact bool `json:"exact"`
	// Text says it in words, for people.
	Text string `json:"text"`
	// Warning, when set, is what the store says against the value used.
	Warning string `json:"warning,omitempty"`
}

// LoadMaxFileLength is Load with the journalMaxFileLength settled the one
// way every command settles it. given > 0 (--max-file-length) is used as
// it is, and the store's files are checked against it (Warning). given 0:
// the length is read off the store (codec.InferMaxFileLength): exactly
// from preallocated files, else the lower bound the filled files allow,
// else the broker's default. ropts.MaxFileLength is ignored.
//
// The inference needs the files' logical ends, which a reading finds: the
// store is first analysed with the length guessed from the file system
// alone (codec.GuessMaxFileLength), and analysed again, only when the
// reading infers another length (a rare case: ack-compaction files among
// the full ones, damage), with that one.
func LoadMaxFileLength(st *codec.Store, ropts refgraph.Options, given int64, read codec.ReadOptions, copts Options) (*Result, MaxFileLength, error) {
	if given > 0 {
		ropts.MaxFileLength = given
		res, err := Load(st, ropts, read, copts)
		if err != nil {
			return nil, MaxFileLength{}, err
		}
		return res, givenMaxFileLength(given, Inferred(res)), nil
	}
	ropts.MaxFileLength = codec.GuessMaxFileLength(st.Files)
	if ropts.MaxFileLength <= 0 {
		ropts.MaxFileLength = codec.DefaultMaxFileLength
	}
	res, err := Load(st, ropts, read, copts)
	if err != nil {
		return nil, MaxFileLength{}, err
	}
	m := inferredMaxFileLength(Inferred(res))
	if m.Value != ropts.MaxFileLength {
		first := res.BytesRead
		guessed := res.side
		ropts.MaxFileLength = m.Value
		if res, err = Load(st, ropts, read, copts); err != nil {
			return nil, MaxFileLength{}, err
		}
		res.BytesRead += first
		res.guessed = guessed
	}
	return res, m, nil
}

// Inferred is what the data files of an analysis say about the
// journalMaxFileLength.
func Inferred(res *Result) codec.MaxFileLengthInference {
	files := make([]codec.LayoutFile, len(res.Files))
	for i := range res.Files {
		s := &res.Files[i].Summary
		files[i] = codec.LayoutFile{Name: s.Info.Name, Size: s.Size, End: s.End, Records: s.Records, Damaged: len(s.Damage) > 0}
		if f, ok := res.Graph.File(s.Info.ID); ok {
			files[i].AckCompaction = f.Compaction
		}
	}
	return codec.InferMaxFileLength(files)
}

// inferredMaxFileLength settles the length when none was given.
func inferredMaxFileLength(inf codec.MaxFileLengthInference) MaxFileLength {
	switch inf.Kind {
	case codec.InferredPreallocated:
		m := MaxFileLength{Value: inf.Value, Source: FromPreallocation, Exact: true,
			Text: "read off the store: " + inf.Evidence}
		if inf.Conflict != "" {
			m.Warning = inf.Conflict
		}
		return m
	case codec.InferredLowerBound:
		return MaxFileLength{Value: inf.Value, Source: FromLowerBound, Warning: inf.Conflict,
			Text: fmt.Sprintf("at least this, read off the store: %s; give --max-file-length for the exact value", inf.Evidence)}
	}
	return MaxFileLength{Value: codec.DefaultMaxFileLength, Source: FromDefault,
		Text: "the broker's default: the store does not tell it (give --max-file-length if the broker's journalMaxFileLength differs)"}
}

// givenMaxFileLength checks a given length against the store.
func givenMaxFileLength(given int64, inf codec.MaxFileLengthInference) MaxFileLength {
	m := MaxFileLength{Value: given, Source: FromFlag, Exact: true, Text: "given (--max-file-length)"}
	switch inf.Kind {
	case codec.InferredPreallocated:
		if inf.Value != given {
			m.Exact = false
			m.Warning = fmt.Sprintf("--max-file-length %d disagrees with the store: %s, the journalMaxFileLength of the broker that wrote them; using %d as given (leave the flag out to use the store's)",
				given, inf.Evidence, given)
		}
	case codec.InferredLowerBound:
		if given < inf.Value {
			m.Exact = false
			m.Warning = fmt.Sprintf("--max-file-length %d is less than the store allows: %s; using %d as given",
				given, inf.Evidence, given)
		}
	}
	return m
}

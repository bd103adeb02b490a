package codec

import (
	"fmt"
	"os"
	"strings"
)

// What a store's data files say about the journalMaxFileLength of the
// broker that wrote them (KAHADB-FORMAT §2.6, §2.7):
//
//   - A preallocated file (preallocationScope entire_journal, the
//     default, or entire_journal_async) is created with an apparent size
//     of exactly journalMaxFileLength, whatever it holds; its data ends
//     well before (the rest is a hole or zeros, and an EOF record at the
//     end). Such a file tells the length exactly.
//   - A file that grows with its writes (scope none) ends right after its
//     data (its last batch and an EOF record). The broker rotated before
//     the record that would have reached the maximum: a batch starts only
//     when currentLength + recordSize < max, and a batch never carries a
//     file past the maximum, so a file's data ends before max + 28: the
//     length is at least End − 27. A file holding a single record may hold
//     one larger than the maximum (it gets a file of its own) and tells
//     nothing; the newest file is still being written and says no more
//     than that it is not full.
//   - An ack-compaction file (first record KAHA_REWRITTEN_DATA_FILE_COMMAND)
//     is written by another appender that ignores the maximum and never
//     preallocates: it tells nothing.

// LayoutFile is what the inference needs to know of one data file, from
// a reading of it.
type LayoutFile struct {
	Name    string
	Size    int64 // apparent size
	End     int64 // logical end of the data
	Records int   // user records read
	// Damaged: the reading found damage (a torn tail included), so End
	// may not be where the broker's data ends.
	Damaged bool
	// AckCompaction: the file starts with KAHA_REWRITTEN_DATA_FILE_COMMAND.
	AckCompaction bool
}

// Kinds of MaxFileLengthInference.
const (
	// InferredNothing: the files tell nothing (one file, files of one
	// record, damage, ack-compaction files only).
	InferredNothing = ""
	// InferredPreallocated: files are preallocated to the length: exact.
	InferredPreallocated = "preallocated"
	// InferredLowerBound: files grew with their data; the length is at
	// least Value.
	InferredLowerBound = "lower-bound"
)

// MaxFileLengthInference is what a store's files say about the broker's
// journalMaxFileLength.
type MaxFileLengthInference struct {
	Kind string
	// Value is the length (InferredPreallocated) or the least length the
	// files allow (InferredLowerBound).
	Value int64
	// Evidence says in words which files show it.
	Evidence string
	// Conflict, when set, says which files disagree with Value (the
	// broker's setting changed while the store was in use).
	Conflict string
	// LastBound is set (to Value) when the newest data file sets the lower
	// bound: its data ends past the older files'.
	LastBound int64
}

// InferMaxFileLength reads the journalMaxFileLength off a store's data
// files (in id order), as described above. The newest preallocated file
// wins (it is what the broker's current setting made); without one, the
// files that filled up give a lower bound.
func InferMaxFileLength(files []LayoutFile) MaxFileLengthInference {
	var inf MaxFileLengthInference
	var pre []LayoutFile
	for _, f := range files {
		if !f.AckCompaction && !f.Damaged && f.Size > f.End+int64(len(EOFRecord)) {
			pre = append(pre, f)
		}
	}
	if len(pre) > 0 {
		newest := pre[len(pre)-1]
		inf.Kind, inf.Value = InferredPreallocated, newest.Size
		var same, other []string
		for _, f := range pre {
			if f.Size == newest.Size {
				same = append(same, f.Name)
			} else {
				other = append(other, fmt.Sprintf("%s to %d", f.Name, f.Size))
			}
		}
		inf.Evidence = fmt.Sprintf("%s preallocated to %d bytes", namesVerb(same), newest.Size)
		if len(other) > 0 {
			inf.Conflict = fmt.Sprintf("older files are preallocated to other lengths (%s): the broker's journalMaxFileLength changed; the newest files show the current one", strings.Join(other, ", "))
		}
		return inf
	}
	var bound, end int64
	var by string
	for i, f := range files {
		if f.AckCompaction || f.Damaged || f.Records < 2 {
			continue
		}
		b := f.End - (BatchHeaderSize - 1)
		if i == len(files)-1 {
			// The newest file is not full (as far as anyone knows), so
			// it only bounds from below too; past the older files, it is
			// the bound, and its own end is then as close to the maximum
			// as the store shows.
			if inf.Kind == InferredLowerBound && b > bound {
				inf.Value, inf.LastBound = b, b
				inf.Conflict = fmt.Sprintf("the data of %s, the newest file, ends at %d, past the older files (%s ends at %d): whether a restarted broker starts a new file depends on the exact journalMaxFileLength; give --max-file-length",
					f.Name, f.End, by, end)
				bound, end, by = b, f.End, f.Name
			}
			break
		}
		if b > bound {
			bound, end, by = b, f.End, f.Name
			inf.Kind, inf.Value = InferredLowerBound, b
		}
	}
	if inf.Kind == InferredLowerBound {
		inf.Evidence = fmt.Sprintf("the files are not preallocated and the data of %s ends at %d, which a broker writes only with a journalMaxFileLength of at least %d", by, end, bound)
	}
	return inf
}

// namesVerb is "db-4.log is" or "db-2.log … db-9.log (8 files) are".
func namesVerb(names []string) string {
	switch len(names) {
	case 1:
		return names[0] + " is"
	case 2:
		return names[0] + " and " + names[1] + " are"
	}
	return fmt.Sprintf("%s … %s (%d files) are", names[0], names[len(names)-1], len(names))
}

// GuessMaxFileLength guesses what InferMaxFileLength will say from what
// the file system says of the files alone (sizes and holes), before any of
// them is read; 0 when it cannot. A preallocated store shows as a newest
// file with a hole, or as newest files of one size; a store whose files
// grew, as files that end (EOF record included) 5 bytes after their data.
func GuessMaxFileLength(files []FileInfo) int64 {
	n := len(files)
	if n == 0 {
		return 0
	}
	last := files[n-1]
	if sparse(last.Path, last.Size) || (n > 1 && files[n-2].Size == last.Size) {
		return last.Size
	}
	var bound int64
	for _, f := range files[:n-1] {
		bound = max(bound, f.Size-int64(len(EOFRecord))-(BatchHeaderSize-1))
	}
	if bound > 0 {
		// The newest file counts when it ends past the older ones.
		bound = max(bound, last.Size-int64(len(EOFRecord))-(BatchHeaderSize-1))
	}
	return bound
}

// sparse reports whether the file at path has fewer bytes allocated than
// its apparent size by more than a page (a preallocated file's hole).
func sparse(path string, size int64) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	return allocated(st)+4096 < size
}

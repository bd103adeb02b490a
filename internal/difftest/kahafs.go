package difftest

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/store"
)

// Analyse analyses the store in dir the way `kahafs holders` and the
// mount do (store.Open, the cache off), with the index metadata when
// useIndex and db.data is there, and keeps every finished transaction, as
// the mount does. Index problems are returned as notes.
func Analyse(dir string, useIndex bool, maxLen int64) (*store.Analysis, []string, error) {
	l, err := store.Locate(dir)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	a, err := store.Analyse(l, store.Options{MaxFileLength: maxLen, NoIndex: !useIndex, KeepCompleted: -1,
		IndexProblem: func(err error) {
			notes = append(notes, fmt.Sprintf("index not used: %v", err))
		}})
	if err != nil {
		return nil, notes, fmt.Errorf("replay %s: %w", dir, err)
	}
	return a, notes, nil
}

// LoadGraph is the replay graph of Analyse.
func LoadGraph(dir string, useIndex bool, maxLen int64) (*refgraph.Graph, []string, error) {
	a, notes, err := Analyse(dir, useIndex, maxLen)
	if err != nil {
		return nil, notes, err
	}
	return a.Graph, notes, nil
}

// compactionNow is the time the compaction names its backup with.
func compactionNow() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// CompactCopy compacts a copy of store under scratch with compact.Compact
// and returns the compacted store's directory and the report.
func CompactCopy(scratch, store string, maxLen int64) (string, *compact.Report, error) {
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return "", nil, err
	}
	d, err := os.MkdirTemp(scratch, "compact-")
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(d, "store")
	if err := faults.CopyDir(dir, store); err != nil {
		return "", nil, fmt.Errorf("copy %s: %w", store, err)
	}
	rep, err := compact.Compact(dir, compact.Options{MaxFileLength: maxLen, Now: compactionNow})
	if err != nil {
		_ = os.RemoveAll(d)
		return "", rep, fmt.Errorf("compact a copy of %s: %w", store, err)
	}
	return dir, rep, nil
}

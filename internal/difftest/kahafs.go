package difftest

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/refgraph"
)

// LoadGraph replays store the way `kahafs holders` and the mount do
// (refgraph.StoreOptions, then refgraph.Load), with the index metadata
// when useIndex and db.data is there, and keeps every finished
// transaction, as the mount does. Index problems are returned as notes.
func LoadGraph(store string, useIndex bool, maxLen int64) (*refgraph.Graph, []string, error) {
	st, err := codec.OpenStore(store)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	opts := refgraph.StoreOptions(st, useIndex, func(err error) {
		notes = append(notes, fmt.Sprintf("index not used: %v", err))
	})
	opts.MaxFileLength = maxLen
	opts.KeepCompleted = -1
	g, err := refgraph.Load(st, opts, codec.ReadOptions{})
	if err != nil {
		return nil, notes, fmt.Errorf("replay %s: %w", store, err)
	}
	return g, notes, nil
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

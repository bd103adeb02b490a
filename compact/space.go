package compact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kahafs/kahafs/codec"
	"golang.org/x/sys/unix"
)

// Space is what a compaction needs and finds on the file system it writes
// the new store to, and what deleting the old one gives back.
type Space struct {
	// Target is the directory on whose file system the new store is
	// written (the store's parent, or --to's).
	Target string `json:"target"`
	// Needed is Journal + Index + Other.
	Needed int64 `json:"needed"`
	// Journal is the new journal files at their preallocated length
	// (journalMaxFileLength each, as the broker creates them).
	Journal int64 `json:"journal"`
	// Index is the index the broker rebuilds at its first start on the
	// new store, estimated as the original's db.data.
	Index int64 `json:"index"`
	// Other is the marker and the store's other files copied over (lock,
	// …), a block each at least.
	Other int64 `json:"other"`
	// Free is what the target's file system had available when the
	// compaction started.
	Free int64 `json:"free"`
	// Exact: Journal is the laid-out size (else an upper bound).
	Exact bool `json:"exact"`
	// Reclaim says what to delete (or do) to get the disk space back
	// once the compacted store is in use, and Frees how many bytes that
	// gives back on the store's file system.
	Reclaim string `json:"reclaim,omitempty"`
	Frees   int64  `json:"frees,omitempty"`
}

// ErrNoSpace: the new store does not fit the free space of the file
// system it is to be written to.
var ErrNoSpace = errors.New("not enough free space for the compacted store")

// freeSpace is the space available to kahafs on the file system of dir.
func freeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// diskUsage is the disk space the regular files below p take (du).
func diskUsage(p string) int64 {
	var n int64
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(q, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// storeUsage is the disk space of the journal and index files of the store
// in dir (what replacing them with a compacted journal gives back).
func storeUsage(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		name := e.Name()
		if _, ok := codec.ParseDataFileName(name); !ok && name != "db.data" && name != "db.redo" && name != "db.free" {
			continue
		}
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(dir, name), &st) == nil {
			n += st.Blocks * 512
		}
	}
	return n
}

// otherSpace is what the marker and the copied extras of the store in dir
// take: their sizes rounded up to 4 KiB blocks, and the index estimate.
func otherSpace(dir string) (other, index int64) {
	const block = 4096
	other = block // the marker
	ents, err := os.ReadDir(dir)
	if err != nil {
		return other, 0
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		name := e.Name()
		if _, ok := codec.ParseDataFileName(name); ok {
			continue
		}
		switch name {
		case "db.data":
			index = info.Size()
		case "db.redo", "db.free", markerName:
		default:
			other += (info.Size() + block - 1) / block * block
		}
	}
	return other, index
}

// text says a Space's need against its free space.
func (s *Space) text() string {
	kind := "at most "
	if s.Exact {
		kind = ""
	}
	return fmt.Sprintf("the compacted store needs %d bytes on the file system of %s (journal files at their preallocated length: %s%d; the index the broker rebuilds, estimated as the original's db.data: %d; marker and other files: %d); %d bytes are free there",
		s.Needed, s.Target, kind, s.Journal, s.Index, s.Other, s.Free)
}

// noSpace is the refusal of a compaction that does not fit.
func (s *Space) noSpace() error {
	return fmt.Errorf("%w: %s: %d bytes missing. Nothing was written. Free that much there, or write the compacted store to another file system with --to DIR (the original stays as it is; the report says how to put the result in place), or see the figures with --dry-run", ErrNoSpace, s.text(), s.Needed-s.Free)
}

// enospc turns a "no space left on device" met while writing the new
// store into newDir into one sentence with the figures; other errors are
// returned as they are.
func (s *Space) enospc(err error, newDir string) error {
	if !errors.Is(err, syscall.ENOSPC) || s == nil {
		return err
	}
	written := diskUsage(newDir)
	now, ferr := freeSpace(s.Target)
	if ferr != nil {
		now = 0
	}
	missing := s.Needed - written - now
	tail := fmt.Sprintf("%d bytes were missing", missing)
	if missing <= 0 {
		tail = "the file system filled up while it wrote (something else wrote to it)"
	}
	return fmt.Errorf("%w (the compacted store needed %d bytes on the file system of %s; %d were free when the compaction started; %d had been written and %d were free when it failed: %s). Nothing of the original was changed and what was written is removed. Free space there, or write to another file system with --to DIR",
		err, s.Needed, s.Target, s.Free, written, now, tail)
}

// space is what the new store of the store in dir needs, written with a
// journal of journal bytes onto the file system of target, and what is
// free there.
func space(dir, target string, journal int64, exact bool) (*Space, error) {
	free, err := freeSpace(target)
	if err != nil {
		return nil, err
	}
	other, index := otherSpace(dir)
	return &Space{Target: target, Journal: journal, Index: index, Other: other, Needed: journal + index + other,
		Free: free, Exact: exact}, nil
}

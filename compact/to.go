package compact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// compactTo writes the compacted store into opts.To (Options.To) and
// verifies it there; the original is not changed. On any error what it
// wrote is removed (and the directory, when it made it).
func compactTo(rep *Report, st *codec.Store, p *compactPlan, pf *prefetcher, opts Options, start time.Time,
	phase func(string, time.Time), g *refgraph.Graph) (*Report, error) {
	to := opts.To
	made := false
	if err := os.Mkdir(to, 0o755); err == nil {
		made = true
	} else if errors.Is(err, fs.ErrExist) {
		ents, err := os.ReadDir(to)
		if err != nil {
			return nil, fmt.Errorf("--to %s: %w", to, err)
		}
		if len(ents) > 0 {
			return nil, fmt.Errorf("--to %s is not empty: give a new or empty directory", to)
		}
	} else {
		return nil, fmt.Errorf("--to %s: %w", to, err)
	}
	ok := false
	defer func() {
		if ok {
			return
		}
		if made {
			os.RemoveAll(to)
			return
		}
		ents, _ := os.ReadDir(to)
		for _, e := range ents {
			os.RemoveAll(filepath.Join(to, e.Name()))
		}
	}()
	t0 := time.Now()
	written, files, err := p.write(pf, to, opts)
	if err != nil {
		return nil, rep.Space.enospc(err, to)
	}
	pf.close()
	if err := opts.fault("extras"); err != nil {
		return nil, rep.Space.enospc(err, to)
	}
	if err := copyExtras(st.Dir, to); err != nil {
		return nil, rep.Space.enospc(err, to)
	}
	// Keep a broker off the new store while it is verified.
	newLock, err := AcquireLock(to)
	if err != nil {
		return nil, rep.Space.enospc(err, to)
	}
	defer newLock.Release()
	phase("write", t0)
	if d := rep.Phases[len(rep.Phases)-1].elapsed; d > 0 {
		rep.RecordsPerSecond = float64(written) / d.Seconds()
	}
	opts.crash("written")

	t0 = time.Now()
	if err := syncJournal(to, files, opts.fault); err != nil {
		return nil, rep.Space.enospc(err, to)
	}
	if err := codec.SyncDir(filepath.Dir(to)); err != nil {
		return nil, err
	}
	want := stateOf(g, opts.NoRedelivery)
	g, p.g = nil, nil
	debug.FreeOSMemory()
	nst, ng, err := replayChecked(to, opts.MaxFileLength, p.expected(st), opts.bytes("verify"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVerify, err)
	}
	if err := verify(want, ng); err != nil {
		return nil, err
	}
	rep.Verified = true
	rep.After = journalSize(nst)
	phase("verify", t0)
	ok = true

	dir := st.Dir
	if sameDevice(dir, to) {
		rep.Space.Frees = diskUsage(dir)
		rep.Space.Reclaim = fmt.Sprintf("with the broker stopped, put the compacted store in place: mv %s %s.old && mv %s %s; once a broker runs well on it, rm -r %s.old",
			dir, dir, to, dir, dir)
	} else {
		rep.Space.Frees = storeUsage(dir) - diskUsage(to)
		rep.Space.Reclaim = fmt.Sprintf("with the broker stopped, replace the store's journal and index by the compacted journal (%s is on another file system; it is the only copy of the result, keep it until the broker runs well): rm -f %s/db-*.log %s/db.data %s/db.redo %s/db.free; cp %s/db-*.log %s/",
			to, dir, dir, dir, dir, to, dir)
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// sameDevice reports whether a and b are on one file system.
func sameDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}

package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// ErrUnmodeled: the journal holds commands whose effect on the store
// kahafs does not model (refgraph.Modeled), so it cannot say what the
// broker's cleanup deletes: it makes no prediction at all.
var ErrUnmodeled = errors.New("the journal holds commands kahafs does not model")

// ErrSchedulerStore: the store is a broker's job scheduler store
// (JobSchedulerStoreImpl: scheduleDB.data, the scheduler's commands).
var ErrSchedulerStore = errors.New("job scheduler store")

// SchedulerIndex is the job scheduler store's index file
// (JobSchedulerStoreImpl's page file "scheduleDB").
const SchedulerIndex = "scheduleDB.data"

// UnmodeledError refuses a store whose journal kahafs does not model. It
// wraps ErrUnmodeled, and ErrSchedulerStore when the store is a job
// scheduler's.
type UnmodeledError struct {
	Dir string
	// File and Offset are where the first record (replay order) of a
	// command kahafs does not model is ("" when none was found: a job
	// scheduler store known by its index alone).
	File   string
	Offset int64
	// Names are the command types kahafs does not model found in the
	// journal, in type order ("UNKNOWN_N" for a type byte no ActiveMQ
	// command has).
	Names []string
	// Scheduler: the store is a job scheduler store (scheduleDB.data, or
	// the scheduler's commands in the journal).
	Scheduler bool
}

func (e *UnmodeledError) Error() string {
	var b strings.Builder
	if e.File != "" {
		fmt.Fprintf(&b, "%s: offset %d: ", e.File, e.Offset)
	} else {
		fmt.Fprintf(&b, "%s: ", e.Dir)
	}
	if e.Scheduler {
		b.WriteString("a job scheduler store (JobSchedulerStoreImpl")
		if _, err := os.Stat(filepath.Join(e.Dir, SchedulerIndex)); err == nil {
			b.WriteString(", " + SchedulerIndex)
		}
		b.WriteString("): its cleanup keeps data files by its own job references, which kahafs does not model")
		if len(e.Names) > 0 {
			b.WriteString("; ")
		}
	}
	if len(e.Names) > 0 {
		fmt.Fprintf(&b, "%s: %s", ErrUnmodeled, strings.Join(e.Names, ", "))
	}
	b.WriteString("; kahafs makes no cleanup prediction for this store")
	return b.String()
}

// Is makes errors.Is find ErrUnmodeled and, for a job scheduler store,
// ErrSchedulerStore.
func (e *UnmodeledError) Is(target error) bool {
	return target == ErrUnmodeled || (e.Scheduler && target == ErrSchedulerStore)
}

// schedulerCommand: a command only a job scheduler store writes.
func schedulerCommand(t codec.EntryType) bool {
	return t >= codec.AddScheduledJobCommand && t <= codec.DestroySchedulerCommand
}

// Suspect reports whether reading a data file found commands kahafs does
// not model: counts are its decoded commands by type, damage what reading
// it found (a record of an unknown type is damage to the codec).
func Suspect(counts *[codec.NumEntryTypes]int64, damage []*codec.CorruptionError) bool {
	for t := range counts {
		if counts[t] > 0 && !refgraph.Modeled(codec.EntryType(t)) {
			return true
		}
	}
	for _, d := range damage {
		if errors.Is(d, codec.ErrUnknownCommand) {
			return true
		}
	}
	return false
}

// CheckModeled refuses the store of l (an *UnmodeledError) when it is a
// job scheduler store, or when a data file for which suspect(i) (the
// index in l.Journal.Files) is true holds a record of a command kahafs
// does not model. Only the suspect files are read again, for the
// location of the first such record and the names of their types.
func CheckModeled(l *Layout, ro codec.ReadOptions, suspect func(i int) bool) error {
	e := &UnmodeledError{Dir: l.Dir(), Scheduler: l.Kind == KindScheduler}
	var seen [256]bool
	for i, fi := range l.Journal.Files {
		if !suspect(i) {
			continue
		}
		if err := scanUnmodeled(fi, ro, e, &seen); err != nil {
			return err
		}
	}
	for t, ok := range seen {
		if ok {
			e.Names = append(e.Names, codec.EntryType(t).String())
			if schedulerCommand(codec.EntryType(t)) {
				e.Scheduler = true
			}
		}
	}
	if e.Scheduler || len(e.Names) > 0 {
		return e
	}
	return nil
}

// scanUnmodeled notes in e the first record of fi of a type kahafs does
// not model and in seen the types of all of them.
func scanUnmodeled(fi codec.FileInfo, ro codec.ReadOptions, e *UnmodeledError, seen *[256]bool) error {
	df, err := codec.OpenDataFile(fi.Path, fi.ID)
	if err != nil {
		return fmt.Errorf("%s: %w", fi.Path, err)
	}
	defer df.Close()
	ro.Lenient = true // damage is skipped (the analysis reports it)
	r := codec.NewReader(df, ro)
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := rec.Payload()
		if len(p) == 0 {
			continue
		}
		t := codec.EntryType(p[0])
		if refgraph.Modeled(t) {
			continue
		}
		if e.File == "" {
			e.File, e.Offset = fi.Path, int64(rec.Loc.Offset)
		}
		seen[t] = true
	}
}

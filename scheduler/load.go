package scheduler

import (
	"errors"
	"fmt"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
)

// ErrRecovery: the store's index and journal disagree in a way the
// broker's recovery stops at or repairs by dropping jobs (a job in a
// missing file, a job past the end of the journal, a last update in a
// missing file): not modeled.
var ErrRecovery = errors.New("job scheduler index and journal disagree (the broker's recovery would fail or drop jobs)")

// ErrLegacy: scheduleDB.data is not a current job scheduler index: the
// broker upgrades such a store from the legacy format, not modeled.
var ErrLegacy = errors.New("job scheduler index of a legacy format (the broker upgrades it)")

// Source says where a Model's state came from.
type Source struct {
	// Index: the state is the index's (scheduleDB.data) and the journal
	// records from its last update (LastUpdate) on, that record included,
	// as a starting store recovers it. Otherwise the whole journal was replayed (no index, or
	// one the broker would not use: IndexProblem says why).
	Index        bool
	LastUpdate   *codec.Location
	IndexProblem string
}

// Load recovers the state of the job scheduler store st as a starting
// JobSchedulerStoreImpl does: from its index and the journal records
// from the index's last update on, that record included (recover starts
// at Journal.getNextLocation(lastUpdate), and a location read from the
// index has no size, so that is the record at it, processed again: a
// reschedule replayed so drops the jobs left at its execution time, as
// the broker does; seen on a real broker, layout seed scheduler-1,
// "Recovering from the scheduled job journal @8:14361 ... Process
// reschedule command for non-scheduled job"); without a usable index (none, or one
// the broker finds corrupt and deletes), from the whole journal, which
// must then be complete (ErrIncomplete).
func Load(st *codec.Store, ro codec.ReadOptions) (*Model, Source, error) {
	ix, fresh, err := kahaindex.ReadScheduler(st.Dir)
	var ce *kahaindex.CorruptionError
	switch {
	case errors.Is(err, kahaindex.ErrSchedulerToken):
		return nil, Source{}, fmt.Errorf("%w: %v", ErrLegacy, err)
	case errors.As(err, &ce) && ce.AtLoad, fresh:
		src := Source{}
		if err != nil {
			src.IndexProblem = err.Error()
		}
		m, err := Replay(st, ro)
		return m, src, err
	case err != nil:
		return nil, Source{}, err
	}
	m := newModel()
	for _, is := range ix.Schedulers {
		s := m.get(is.Name)
		for i, t := range is.Times {
			for _, xj := range is.Jobs[i] {
				m.seq++
				j := &Job{Scheduler: is.Name, ID: xj.ID, Add: xj.Location, StartTime: xj.Start, Delay: xj.Delay,
					Period: xj.Period, Repeat: xj.Repeat, Cron: xj.Cron, NextTime: xj.NextTime, order: m.seq}
				if xj.LastUpdate != nil {
					j.LastUpdate, j.HasLastUpdate = *xj.LastUpdate, true
				}
				s.slots[t] = append(s.slots[t], j)
			}
		}
	}
	for f, n := range ix.JournalRC {
		m.RC[f] = int64(n)
	}
	for f, adds := range ix.RemoveTracker {
		m.Removes[f] = append([]int32(nil), adds...)
	}
	present := map[int32]bool{}
	for _, fi := range st.Files {
		present[fi.ID] = true
	}
	if lu := ix.LastUpdate; lu != nil {
		if !present[lu.File] {
			return nil, Source{}, fmt.Errorf("%w: the index's last update %s is in a missing file", ErrRecovery, lu)
		}
		m.LastUpdate, m.HasLastUpdate = *lu, true
	}
	if err := m.replay(st, ro, ix.LastUpdate); err != nil {
		return nil, Source{}, err
	}
	// recoverIndex: jobs at or past the journal's end are dropped, jobs
	// in missing files stop the broker (ignoreMissingJournalfiles off)
	var end codec.Location
	if n := len(m.Files); n > 0 {
		end = codec.Location{File: m.Files[n-1].Info.ID, Offset: int32(m.Files[n-1].End)}
	}
	for _, j := range m.Jobs() {
		if !j.Add.Less(end) {
			return nil, Source{}, fmt.Errorf("%w: job %s is at %s, past the journal's end %s", ErrRecovery, j.ID, j.Add, end)
		}
		if !present[j.Add.File] || (j.HasLastUpdate && !present[j.LastUpdate.File]) {
			return nil, Source{}, fmt.Errorf("%w: job %s refers to a missing data file", ErrRecovery, j.ID)
		}
	}
	return m, Source{Index: true, LastUpdate: ix.LastUpdate}, nil
}

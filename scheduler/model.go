// Package scheduler models a broker's job scheduler store
// (JobSchedulerStoreImpl, ActiveMQ 5.17: the scheduler/ directory of a
// broker with schedulerSupport="true"): which jobs it holds, and which of
// its data files its next cleanup deletes.
//
// The store's journal is in the KahaDB format (package codec) but holds
// the scheduler's own commands, and its index (scheduleDB.data) keeps,
// per scheduler, the jobs by next execution time, a reference count per
// data file (one for each job's add record and one for the record of its
// last reschedule) and, per data file holding removes, the files of the
// removed jobs' adds. Its cleanup (JobSchedulerStoreImpl.checkpointUpdate)
// deletes every data file except the one of its last update, those with a
// reference count, those holding removes whose adds' files still exist,
// and those at or after its write position.
//
// Load recovers that state as a starting store does: from its index
// (kahaindex.ReadScheduler) and the journal records from the index's last
// update on, that record included (the broker processes it again). Without a usable index it replays the whole journal (Replay), as
// the store does when its index is lost or corrupt; that gives the broker's
// state only when the journal is complete (db-1.log onwards, no file
// missing): a file deleted by an earlier cleanup may have held a
// reschedule of a job still scheduled, which the index remembers and a
// replay cannot. Such a journal is refused (ErrIncomplete), as are damage,
// commands a job scheduler store does not write, and an index the
// broker's recovery would stop at or repair (ErrRecovery): it never
// guesses.
package scheduler

import (
	"errors"
	"fmt"
	"sort"

	"github.com/kahafs/kahafs/codec"
)

// ErrIncomplete: the journal does not start at db-1.log or has gaps: an
// earlier cleanup deleted files, and what the index remembers of them
// (the last reschedule of a job) a replay cannot know.
var ErrIncomplete = errors.New("job scheduler journal is not complete (files were deleted by an earlier cleanup): what its index remembers of them is not modeled")

// ErrDamaged: a data file has damage other than a torn end of the last
// one.
var ErrDamaged = errors.New("job scheduler journal has damage")

// ErrUnexpected: a record the model does not expect in a job scheduler
// store (a KahaDB message command, or a job id scheduled twice).
var ErrUnexpected = errors.New("job scheduler journal holds a record the model does not expect")

// Job is a job the scheduler holds.
type Job struct {
	Scheduler string
	ID        string
	// Add is where its KAHA_ADD_SCHEDULED_JOB_COMMAND is; LastUpdate
	// where its last KAHA_RESCHEDULE_JOB_COMMAND is (HasLastUpdate).
	Add           codec.Location
	LastUpdate    codec.Location
	HasLastUpdate bool
	StartTime     int64 // ms since 1970, as the add record says
	Delay, Period int64 // ms
	Repeat        int32 // repeats left (decremented at each reschedule of a non-cron job)
	Cron          string
	NextTime      int64 // ms since 1970: the job's key in the index
	Rescheduled   int32
	order         int64 // position in its time slot's list
}

// IsCron: the job has a cron entry.
func (j *Job) IsCron() bool { return j.Cron != "" }

// same is JobLocation.equals: every field but the last update.
func (j *Job) same(o *Job) bool {
	return j.ID == o.ID && j.Add == o.Add && j.Cron == o.Cron && j.Delay == o.Delay && j.NextTime == o.NextTime &&
		j.Period == o.Period && j.Repeat == o.Repeat && j.StartTime == o.StartTime && j.Rescheduled == o.Rescheduled
}

// sched is one scheduler's index: its jobs by next execution time, each
// time's list in the order the broker keeps it.
type sched struct {
	name  string
	slots map[int64][]*Job
}

// keys are the scheduler's times in ascending order.
func (s *sched) keys() []int64 {
	ks := make([]int64, 0, len(s.slots))
	for k := range s.slots {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// Model is the state of a job scheduler store after its journal.
type Model struct {
	// Files are the data files, in id order, with what reading them found.
	Files []codec.FileSummary
	// RC is the broker's reference count of each data file (journalRC:
	// entries > 0 only).
	RC map[int32]int64
	// Removes maps a data file holding removes to the files of the
	// removed jobs' adds (removeLocationTracker; with repeats).
	Removes map[int32][]int32
	// LastUpdate is the last record replayed (HasLastUpdate).
	LastUpdate    codec.Location
	HasLastUpdate bool
	// Leaked counts references left by jobs the broker dropped without
	// releasing them (a destroyed scheduler's jobs; a time slot lost by
	// a reschedule that did not find its job), per data file.
	Leaked map[int32]int64

	scheds map[string]*sched
	seq    int64
}

// Jobs lists the jobs held, by scheduler name, then next time, then the
// order within a time slot.
func (m *Model) Jobs() []*Job {
	var out []*Job
	names := make([]string, 0, len(m.scheds))
	for n := range m.scheds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := m.scheds[n]
		for _, k := range s.keys() {
			out = append(out, s.slots[k]...)
		}
	}
	return out
}

func newModel() *Model {
	return &Model{RC: map[int32]int64{}, Removes: map[int32][]int32{}, Leaked: map[int32]int64{}, scheds: map[string]*sched{}}
}

// Replay reads the journal of st (every data file, in order) and replays
// it as JobSchedulerStoreImpl does when it has no index: the journal must
// be complete (ErrIncomplete).
func Replay(st *codec.Store, ro codec.ReadOptions) (*Model, error) {
	for i, fi := range st.Files {
		if fi.ID != int32(i+1) {
			return nil, fmt.Errorf("%s: %w (the first file is %s, file %d of the store is %s)", st.Dir, ErrIncomplete, st.Files[0].Name, i+1, fi.Name)
		}
	}
	m := newModel()
	return m, m.replay(st, ro, nil)
}

// replay processes the records of st from from on, the record at from
// included (all when nil).
func (m *Model) replay(st *codec.Store, ro codec.ReadOptions, from *codec.Location) error {
	for i, fi := range st.Files {
		var perr error
		sum, err := codec.ScanFile(fi, ro, func(rec codec.Record, c *codec.Command) error {
			if from != nil && rec.Loc.Less(*from) {
				return nil
			}
			perr = m.process(rec.Loc, c)
			if perr != nil {
				perr = fmt.Errorf("%s: offset %d: %w", fi.Path, rec.Loc.Offset, perr)
			}
			return perr
		})
		if perr != nil {
			return perr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", fi.Path, err)
		}
		if i < len(st.Files)-1 {
			sum.NotLast()
		}
		for _, d := range sum.Damage {
			if !codec.IsTail(d) {
				return fmt.Errorf("%w: %v", ErrDamaged, d)
			}
		}
		m.Files = append(m.Files, sum)
	}
	return nil
}

func (m *Model) process(loc codec.Location, c *codec.Command) error {
	switch c.Type {
	case codec.AddScheduledJobCommand:
		m.add(loc, c)
	case codec.RescheduleJobCommand:
		m.reschedule(loc, c)
	case codec.RemoveScheduledJobCommand:
		if err := m.remove(loc, c); err != nil {
			return err
		}
	case codec.RemoveScheduledJobsCommand:
		m.removeRange(loc, m.get(string(c.Scheduler)), c.StartTime, c.EndTime)
	case codec.DestroySchedulerCommand:
		if s, ok := m.scheds[string(c.Scheduler)]; ok {
			// removeJobScheduler: removeAll without a location releases
			// no reference
			for _, jobs := range s.slots {
				for _, j := range jobs {
					m.leak(j)
				}
			}
			delete(m.scheds, s.name)
		}
	case codec.TraceCommand:
	default:
		return fmt.Errorf("%w: %s", ErrUnexpected, c.Type)
	}
	// recovery makes every record it reads the last update
	m.LastUpdate, m.HasLastUpdate = loc, true
	return nil
}

// get is getJobScheduler: the scheduler, created when it is not there.
func (m *Model) get(name string) *sched {
	s, ok := m.scheds[name]
	if !ok {
		s = &sched{name: name, slots: map[int64][]*Job{}}
		m.scheds[name] = s
	}
	return s
}

func (m *Model) inc(file int32) { m.RC[file]++ }

func (m *Model) dec(file int32, n int64) {
	if v, ok := m.RC[file]; ok {
		if v -= n; v <= 0 {
			delete(m.RC, file)
		} else {
			m.RC[file] = v
		}
	}
}

// leak notes the references of a job dropped without releasing them.
func (m *Model) leak(j *Job) {
	m.Leaked[j.Add.File]++
	if j.HasLastUpdate {
		m.Leaked[j.LastUpdate.File]++
	}
}

func (m *Model) add(loc codec.Location, c *codec.Command) {
	s := m.get(string(c.Scheduler))
	j := &Job{Scheduler: s.name, ID: string(c.JobID), Add: loc, StartTime: c.StartTime, Cron: string(c.CronEntry),
		Delay: c.Delay, Period: c.Period, Repeat: c.Repeat, NextTime: c.NextExecutionTime}
	for _, o := range s.slots[j.NextTime] {
		if o.same(j) {
			return // idempotent (index recovery)
		}
	}
	m.seq++
	j.order = m.seq
	s.slots[j.NextTime] = append(s.slots[j.NextTime], j)
	m.inc(loc.File)
}

func (m *Model) reschedule(loc codec.Location, c *codec.Command) {
	s := m.get(string(c.Scheduler))
	cur, ok := s.slots[c.ExecutionTime]
	if !ok {
		return
	}
	// the slot is taken out of the index and put back only when the job
	// is found in it: a reschedule that does not find its job drops the
	// slot's jobs (their references stay)
	delete(s.slots, c.ExecutionTime)
	var j *Job
	for i, x := range cur {
		if x.ID == string(c.JobID) {
			j = x
			cur = append(cur[:i:i], cur[i+1:]...)
			if len(cur) > 0 {
				s.slots[c.ExecutionTime] = cur
			}
			break
		}
	}
	if j == nil {
		for _, x := range cur {
			m.leak(x)
		}
		return
	}
	prev, hadPrev := j.LastUpdate, j.HasLastUpdate
	j.NextTime = c.NextExecutionTime
	j.LastUpdate, j.HasLastUpdate = loc, true
	j.Rescheduled = c.RescheduledCount
	if !j.IsCron() && j.Repeat > 0 {
		j.Repeat--
	}
	s.slots[j.NextTime] = append(s.slots[j.NextTime], j)
	m.inc(loc.File)
	if hadPrev {
		m.dec(prev.File, 1)
	}
}

func (m *Model) remove(loc codec.Location, c *codec.Command) error {
	s := m.get(string(c.Scheduler))
	id := string(c.JobID)
	t := c.NextExecutionTime
	var values []*Job
	var have bool
	if t == -1 {
		found := 0
		for _, k := range s.keys() {
			for _, x := range s.slots[k] {
				if x.ID == id {
					if found == 0 {
						t = k
					}
					found++
					break
				}
			}
		}
		if found > 1 {
			// the broker's loop goes on over an index it changes
			return fmt.Errorf("%w: job %s is scheduled at %d times", ErrUnexpected, id, found)
		}
		if found == 1 {
			values, have = s.slots[t], true
			delete(s.slots, t)
		}
	} else {
		values, have = s.slots[t]
		delete(s.slots, t)
	}
	if !have {
		return nil
	}
	var removed *Job
	for i, x := range values {
		if x.ID == id {
			removed = x
			values = append(values[:i:i], values[i+1:]...)
			break
		}
	}
	if len(values) > 0 {
		s.slots[t] = values
	}
	if removed == nil {
		return nil
	}
	m.dec(removed.Add.File, 1)
	if removed.HasLastUpdate {
		m.dec(removed.LastUpdate.File, 1)
	}
	if removed.Add.File != loc.File {
		m.Removes[loc.File] = append(m.Removes[loc.File], removed.Add.File)
	}
	return nil
}

func (m *Model) removeRange(loc codec.Location, s *sched, start, end int64) {
	var files []int32
	decs := map[int32]int64{}
	for _, k := range s.keys() {
		if k < start {
			continue
		}
		if k > end {
			break
		}
		for _, j := range s.slots[k] {
			decs[j.Add.File]++
			if j.HasLastUpdate {
				decs[j.LastUpdate.File]++
			}
			if j.Add.File != loc.File {
				files = append(files, j.Add.File)
			}
		}
		delete(s.slots, k)
	}
	if len(files) > 0 {
		m.Removes[loc.File] = append(m.Removes[loc.File], files...)
	}
	for f, n := range decs {
		m.dec(f, n)
	}
}

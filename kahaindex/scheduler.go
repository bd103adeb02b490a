package kahaindex

import (
	"errors"
	"fmt"

	"github.com/kahafs/kahafs/codec"
)

// A job scheduler store's index (JobSchedulerStoreImpl's page file
// scheduleDB.data, .redo, .free: the same PageFile as db.data). Page 0 is
// JobSchedulerKahaDBMetaData:
//
//	int64, int64 token (SCHEDULER_STORE_TOKEN 57ed642b-1ee3-47b3-be6d-b7297d500409)
//	int32 version | bool + LocationMarshaller (int32 file, int32 offset) last update
//	int64 schedulers B-tree page (String -> JobSchedulerImpl: UTF name, int64 index page)
//	int64 journalRC B-tree page (Integer -> Integer)
//	int64 removeLocationTracker B-tree page (Integer -> int32 n, n Integer)
//
// and each scheduler's index is a B-tree Long (next execution time) ->
// List<JobLocation> (int32 n, then per job: UTF id, int32 repeat, int64
// start, delay, next time, period, UTF cron, Location (int32 file, int32
// offset, int32 size, byte type), bool + Location last update).

// SchedulerToken is SCHEDULER_STORE_TOKEN: a page 0 that does not start
// with it is a legacy store (the broker upgrades it) or not one at all.
var SchedulerToken = [2]uint64{0x57ed642b1ee347b3, 0xbe6db7297d500409}

// ErrSchedulerToken: page 0 of scheduleDB.data is not a current job
// scheduler store's metadata (UnknownStoreVersionException: the broker
// then moves the store aside and upgrades it from the legacy format).
var ErrSchedulerToken = errors.New("not a job scheduler store of the current format")

// SchedulerIndex is a job scheduler store's index as a 5.17.2 broker
// loads it.
type SchedulerIndex struct {
	Path       string
	Version    int32
	LastUpdate *codec.Location
	// Schedulers in key (name) order.
	Schedulers []IndexScheduler
	// JournalRC is the reference count per data file.
	JournalRC map[int32]int32
	// RemoveTracker maps a data file holding removes to the files of the
	// removed jobs' adds.
	RemoveTracker map[int32][]int32
}

// IndexScheduler is one scheduler's jobs, by next execution time (keys
// ascending, each list in its stored order).
type IndexScheduler struct {
	Name  string
	Times []int64
	Jobs  [][]IndexJob
}

// IndexJob is a JobLocation (the index keeps no rescheduled count).
type IndexJob struct {
	ID                     string
	Repeat                 int32
	Start, Delay, NextTime int64
	Period                 int64
	Cron                   string
	Location               codec.Location
	LastUpdate             *codec.Location
}

// ReadScheduler reads the job scheduler index in dir (scheduleDB.data,
// .redo, .free) as JobSchedulerStoreImpl.loadPageFile does: the redo file
// applied when the broker would, the metadata page, every scheduler's
// jobs, the reference counts and the remove tracker. A *CorruptionError
// with AtLoad, or ErrSchedulerToken, means the broker would not use the
// index (it rebuilds it from the journal, or upgrades the store). fresh:
// there is no index (no page), and the broker starts an empty one.
func ReadScheduler(dir string) (ix *SchedulerIndex, fresh bool, err error) {
	files, closeAll, err := openSources(dir, "scheduleDB")
	if err != nil {
		return nil, false, err
	}
	defer closeAll()
	return loadScheduler(files[0], files[1], files[2])
}

// ParseScheduler is ReadScheduler on the contents of scheduleDB.data,
// .redo and .free (nil: the file does not exist).
func ParseScheduler(data, redo, free []byte) (*SchedulerIndex, bool, error) {
	files := byteSources("scheduleDB", data, redo, free)
	return loadScheduler(files[0], files[1], files[2])
}

func loadScheduler(data, redo, free source) (*SchedulerIndex, bool, error) {
	pf, fresh, err := openPageFile(data, redo, free)
	if err != nil || fresh {
		return nil, fresh, err
	}
	ix := &SchedulerIndex{Path: data.name, JournalRC: map[int32]int32{}, RemoveTracker: map[int32][]int32{}}
	if err := readScheduler(pf, ix); err != nil {
		return nil, false, err
	}
	return ix, false, nil
}

func readScheduler(pf *pageFile, ix *SchedulerIndex) error {
	if err := pf.claim(0, kindMetadata, "metadata"); err != nil {
		return atLoad(err)
	}
	s, err := pf.openStream(0, "metadata")
	if err != nil {
		return atLoad(err)
	}
	msb, err1 := readI64(s)
	lsb, err2 := readI64(s)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("%s: metadata: %w: %v", ix.Path, ErrSchedulerToken, err)
	}
	if uint64(msb) != SchedulerToken[0] || uint64(lsb) != SchedulerToken[1] {
		return fmt.Errorf("%s: metadata: %w (token %016x%016x)", ix.Path, ErrSchedulerToken, uint64(msb), uint64(lsb))
	}
	if ix.Version, err = readI32(s); err != nil {
		return atLoad(err)
	}
	if ix.LastUpdate, err = readOptLocation(s); err != nil {
		return atLoad(err)
	}
	var roots [3]int64
	for i := range roots {
		if roots[i], err = readI64(s); err != nil {
			return atLoad(err)
		}
	}
	pf.cacheAs(0, kindMetadata, false, false)

	type named struct {
		name string
		page int64
	}
	scheds := &btree[jstring, named]{pf: pf, root: roots[0], what: "schedulers B-tree", kind: kindSchedulers,
		key: readUTF, cmp: compareJava,
		value: func(in dataInput) (named, error) {
			n, err := readUTF(in)
			if err != nil {
				return named{}, err
			}
			p, err := readI64(in)
			return named{n.String(), p}, err
		}}
	rc := &btree[int32, int32]{pf: pf, root: roots[1], what: "journalRC B-tree", kind: kindJournalRC,
		key: readI32, value: readI32, cmp: compareInt32}
	rm := &btree[int32, []int32]{pf: pf, root: roots[2], what: "remove tracker B-tree", kind: kindRemoveTracker,
		key: readI32, value: readI32List, cmp: compareInt32}
	for _, load := range []func() (bool, error){scheds.load, rc.load, rm.load} {
		if _, err := load(); err != nil { // a free root: an empty tree, as for the broker
			return atLoad(err)
		}
	}
	// loadPageFile (its failures make the broker rebuild the index from
	// the journal: AtLoad) reads the metadata, loads the three roots,
	// iterates the schedulers and loads each one's root; the jobs are
	// iterated by the recovery after it, the reference counts and the
	// remove tracker by the cleanup: their failures stop the broker's
	// start or cleanup instead.
	var list []named
	if err := iterateAll(scheds, func(_ jstring, v named) { list = append(list, v) }); err != nil {
		return atLoad(err)
	}
	for _, sc := range list {
		jobs := &btree[int64, []IndexJob]{pf: pf, root: sc.page, what: "jobs B-tree of scheduler " + sc.name, kind: kindJobs,
			key: readI64, value: readJobLocations, cmp: compareInt64}
		if _, err := jobs.load(); err != nil { // a free root: no jobs, as for the broker
			return atLoad(err)
		}
		is := IndexScheduler{Name: sc.name}
		if err := iterateAll(jobs, func(k int64, v []IndexJob) {
			is.Times = append(is.Times, k)
			is.Jobs = append(is.Jobs, v)
		}); err != nil {
			return err
		}
		ix.Schedulers = append(ix.Schedulers, is)
	}
	if err := iterateAll(rc, func(k, v int32) { ix.JournalRC[k] = v }); err != nil {
		return err
	}
	return iterateAll(rm, func(k int32, v []int32) { ix.RemoveTracker[k] = v })
}

// iterateAll iterates t whole; an iteration that stops early (the broker's
// would stop quietly) is an error here: the state would be partial.
func iterateAll[K, V any](t *btree[K, V], fn func(K, V)) error {
	stopped, err := t.iterate(nil, fn)
	if err != nil {
		return err
	}
	return stopped
}

func compareInt32(a, b int32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func readI32List(in dataInput) ([]int32, error) {
	n, err := readI32(in)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, in.fail(ErrNegative, fmt.Sprintf("list size %d", n), false)
	}
	var out []int32
	for i := int32(0); i < n; i++ {
		v, err := readI32(in)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// readJobLocations is JobLocationsMarshaller.
func readJobLocations(in dataInput) ([]IndexJob, error) {
	n, err := readI32(in)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, in.fail(ErrNegative, fmt.Sprintf("job list size %d", n), false)
	}
	var out []IndexJob
	for i := int32(0); i < n; i++ {
		var j IndexJob
		id, err := readUTF(in)
		if err != nil {
			return nil, err
		}
		j.ID = id.String()
		if j.Repeat, err = readI32(in); err != nil {
			return nil, err
		}
		for _, p := range []*int64{&j.Start, &j.Delay, &j.NextTime, &j.Period} {
			if *p, err = readI64(in); err != nil {
				return nil, err
			}
		}
		cron, err := readUTF(in)
		if err != nil {
			return nil, err
		}
		j.Cron = cron.String()
		if j.Location, err = readJournalLocation(in); err != nil {
			return nil, err
		}
		has, err := readBool(in)
		if err != nil {
			return nil, err
		}
		if has {
			l, err := readJournalLocation(in)
			if err != nil {
				return nil, err
			}
			j.LastUpdate = &l
		}
		out = append(out, j)
	}
	return out, nil
}

// readJournalLocation is Location.readExternal: file, offset, size, type.
func readJournalLocation(in dataInput) (codec.Location, error) {
	l, err := readLocation(in)
	if err != nil {
		return l, err
	}
	if l.Size, err = readI32(in); err != nil {
		return l, err
	}
	_, err = readU8(in)
	return l, err
}

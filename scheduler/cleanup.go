package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kahafs/kahafs/codec"
)

// RestartTraceSize is the record size of the "LOADED <date>" trace a
// starting store appends (AbstractKahaDBStore.doStart), with a 3-letter
// time zone (as refgraph's default).
const RestartTraceSize = 44

// Reason kinds: why the cleanup keeps a file.
const (
	// KindWritePosition: the file holds the restarted store's last update
	// (its LOADED trace) or comes after it: the cleanup never deletes it.
	KindWritePosition = "write-position"
	// KindJobs: jobs still scheduled have their add record or the record
	// of their last reschedule in the file (a reference count).
	KindJobs = "jobs"
	// KindLeaked: references the broker never released (a destroyed
	// scheduler's jobs, jobs dropped by a reschedule that did not find
	// its job): the file stays for good.
	KindLeaked = "leaked-references"
	// KindRemoves: the file holds removes of jobs whose add records are
	// in files that still exist; it stays until they are deleted.
	KindRemoves = "removes"
)

// Reason is one holder of a file.
type Reason struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Jobs are the ids of the jobs that reference the file (KindJobs).
	Jobs []string `json:"jobs,omitempty"`
	// Files are the files of the removed jobs' adds that still exist
	// (KindRemoves).
	Files []int32 `json:"files,omitempty"`
}

// File is one data file's fate at the next cleanup.
type File struct {
	ID      int32    `json:"id"`
	Name    string   `json:"name"`
	Size    int64    `json:"size"`
	Pinned  bool     `json:"pinned"`
	Refs    int64    `json:"references"`
	Reasons []Reason `json:"reasons"`
}

// Prediction is what the first cleanup of a store started on the journal
// deletes.
type Prediction struct {
	// Trace is where the restart's LOADED trace goes: its last update and
	// write position (a new file when the newest is full: NewFile).
	Trace   codec.Location
	NewFile bool
	Files   []File
	// Deleted are the ids of the files the cleanup deletes.
	Deleted []int32
}

// Predict computes what the first cleanup of a store started on the
// journal of m deletes (JobSchedulerStoreImpl.checkpointUpdate after
// recovery and the LOADED trace), with maxFileLength the store's
// journalMaxFileLength.
func (m *Model) Predict(maxFileLength int64) *Prediction {
	// the LOADED trace: appended to the newest file, or to a new one
	// when it does not fit (the rotation rule refgraph uses)
	var file int32 = 1
	var end int64
	if n := len(m.Files); n > 0 {
		file, end = m.Files[n-1].Info.ID, m.Files[n-1].End
	}
	newFile := false
	if end > 0 && end+RestartTraceSize >= maxFileLength {
		file, end = file+1, 0
		newFile = true
	}
	return m.predict(codec.Location{File: file, Offset: int32(end + codec.BatchHeaderSize), Size: RestartTraceSize}, newFile)
}

// predict is the cleanup with trace the store's last update and write
// position (the restart's trace, or the last record of a running store).
func (m *Model) predict(trace codec.Location, newFile bool) *Prediction {
	p := &Prediction{Trace: trace, NewFile: newFile}

	complete := map[int32]bool{}
	for _, f := range m.Files {
		complete[f.Info.ID] = true
	}
	refs := m.references()
	for _, f := range m.Files {
		id := f.Info.ID
		pf := File{ID: id, Name: codec.DataFileName(id), Size: f.Size, Refs: m.RC[id]}
		if id >= p.Trace.File {
			pf.Reasons = append(pf.Reasons, Reason{Kind: KindWritePosition,
				Text: fmt.Sprintf("the store's last update and write position is %s: the cleanup never deletes its file or a later one", p.Trace)})
		}
		if rc := m.RC[id]; rc > 0 {
			if ids := refs[id]; len(ids) > 0 {
				pf.Reasons = append(pf.Reasons, Reason{Kind: KindJobs, Jobs: ids,
					Text: fmt.Sprintf("%d reference(s) of %s", rc, jobsText(ids))})
			}
			if n := rc - int64(len(refs[id])); n > 0 {
				pf.Reasons = append(pf.Reasons, Reason{Kind: KindLeaked,
					Text: fmt.Sprintf("%d reference(s) the broker never releases (jobs of a destroyed scheduler, or dropped by a reschedule that did not find its job)", n)})
			}
		}
		if adds, ok := m.Removes[id]; ok {
			var live []int32
			seen := map[int32]bool{}
			for _, a := range adds {
				if complete[a] && !seen[a] {
					seen[a] = true
					live = append(live, a)
				}
			}
			sort.Slice(live, func(i, j int) bool { return live[i] < live[j] })
			// the broker checks removes only of a file still a candidate
			if len(live) > 0 && len(pf.Reasons) == 0 {
				pf.Reasons = append(pf.Reasons, Reason{Kind: KindRemoves, Files: live,
					Text: fmt.Sprintf("holds removes of jobs added in %s, which still exist(s): a store replaying the journal needs them", filesText(live))})
			}
		}
		pf.Pinned = len(pf.Reasons) > 0
		if !pf.Pinned {
			p.Deleted = append(p.Deleted, id)
		}
		p.Files = append(p.Files, pf)
	}
	return p
}

// references lists, per data file, the jobs that hold a reference to it
// (once for the add, once for the last reschedule).
func (m *Model) references() map[int32][]string {
	out := map[int32][]string{}
	for _, j := range m.Jobs() {
		out[j.Add.File] = append(out[j.Add.File], j.ID)
		if j.HasLastUpdate {
			out[j.LastUpdate.File] = append(out[j.LastUpdate.File], j.ID)
		}
	}
	return out
}

func jobsText(ids []string) string {
	const show = 3
	var b strings.Builder
	n := len(ids)
	if n == 1 {
		b.WriteString("job ")
	} else {
		fmt.Fprintf(&b, "%d jobs: ", n)
	}
	for i, id := range ids {
		if i == show {
			fmt.Fprintf(&b, ", … (%d more)", n-show)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(id)
	}
	return b.String()
}

func filesText(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = codec.DataFileName(id)
	}
	return strings.Join(s, ", ")
}

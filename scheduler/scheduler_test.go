package scheduler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/openwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokerCleanup is brokerkit SchedulerCleanup's output.
type brokerCleanup struct {
	MaxFileLength int64   `json:"maxFileLength"`
	FilesBefore   []int32 `json:"filesBefore"`
	FilesAfter    []int32 `json:"filesAfter"`
	Deleted       []int32 `json:"deleted"`
	Jobs          []struct {
		JobID       string `json:"jobId"`
		Delay       int64  `json:"delay"`
		Period      int64  `json:"period"`
		Repeat      int32  `json:"repeat"`
		Cron        string `json:"cron"`
		MessageID   string `json:"messageId"`
		Destination string `json:"destination"`
	} `json:"jobs"`
}

func fixtureDir(name string) string {
	return filepath.Join(brokertest.RepoRoot(), "testdata", "scheduler", name)
}

func readCleanup(t *testing.T, path string) brokerCleanup {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var bc brokerCleanup
	require.NoError(t, json.Unmarshal(raw, &bc))
	return bc
}

// predict loads the store as a starting broker does (its index and the
// journal after it) and predicts the cleanup.
func predict(t *testing.T, dir string, maxFileLength int64) (*Model, *Prediction) {
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	m, src, err := Load(st, codec.ReadOptions{})
	require.NoError(t, err)
	require.True(t, src.Index)
	return m, m.Predict(maxFileLength)
}

// TestIndexEqualsReplay: on the complete fixtures, the state recovered
// from the index and the journal after it is the state a replay of the
// whole journal makes (the index keeps no rescheduled counts), and so is
// the prediction.
func TestIndexEqualsReplay(t *testing.T) {
	for _, name := range []string{"jobs", "churn"} {
		st, err := codec.OpenStore(filepath.Join(fixtureDir(name), "store"))
		require.NoError(t, err)
		mi, src, err := Load(st, codec.ReadOptions{})
		require.NoError(t, err)
		require.True(t, src.Index)
		mr, err := Replay(st, codec.ReadOptions{})
		require.NoError(t, err)
		ji, jr := mi.Jobs(), mr.Jobs()
		require.Equal(t, len(jr), len(ji), name)
		for i := range jr {
			a, b := *ji[i], *jr[i]
			a.Rescheduled, b.Rescheduled, a.order, b.order = 0, 0, 0, 0
			a.Add.Size, b.Add.Size, a.LastUpdate.Size, b.LastUpdate.Size = 0, 0, 0, 0
			assert.Equal(t, b, a, name)
		}
		assert.Equal(t, mr.RC, mi.RC, name)
		assert.Equal(t, mr.LastUpdate.String(), mi.LastUpdate.String(), name)
		assert.Equal(t, mr.Predict(8192).Deleted, mi.Predict(8192).Deleted, name)
	}
}

// TestPredictRecorded: the prediction on the committed fixture is what the
// broker's cleanup deleted from a copy of it (cleanup.json, recorded by
// brokerkit SchedulerCleanup), and the jobs are the ones it listed.
func TestPredictRecorded(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			dir := fixtureDir(name)
			bc := readCleanup(t, filepath.Join(dir, "cleanup.json"))
			m, p := predict(t, filepath.Join(dir, "store"), bc.MaxFileLength)
			assert.Equal(t, bc.Deleted, nonNil(p.Deleted))
			assert.Equal(t, bc.FilesBefore, ids(p))
			for _, f := range p.Files {
				assert.Equal(t, f.Pinned, len(f.Reasons) > 0, f.Name)
			}
			assertJobs(t, bc, m)
		})
	}
}

// fixtures are the job scheduler stores under testdata/scheduler: jobs
// (files freed, files pinned by jobs and by removes), churn (jobs
// rescheduled from file to file; every file pinned, four of them by
// removes alone).
// aged (a first run's cleanup deleted db-2.log and db-3.log, the second
// run's jobs repeat on from reschedules in them: only the index knows
// them), crash (Runtime.halt: the index on disk is its last checkpoint's,
// the journal goes on after it).
var fixtures = []string{"jobs", "churn", "aged", "crash"}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func ids(p *Prediction) []int32 {
	var out []int32
	for _, f := range p.Files {
		out = append(out, f.ID)
	}
	return out
}

// TestReasons: every pinned file of the fixtures is held by what the
// model says, and the kinds are the broker's (jobs: its reference count;
// removes: its remove tracker; the write position).
func TestReasons(t *testing.T) {
	_, p := predict(t, filepath.Join(fixtureDir("jobs"), "store"), 8192)
	kinds := map[string]string{}
	for _, f := range p.Files {
		if len(f.Reasons) > 0 {
			kinds[f.Name] = f.Reasons[0].Kind
		}
	}
	assert.Equal(t, map[string]string{"db-1.log": KindJobs, "db-2.log": KindJobs, "db-6.log": KindJobs,
		"db-7.log": KindRemoves, "db-10.log": KindRemoves, "db-11.log": KindWritePosition}, kinds)
	_, p = predict(t, filepath.Join(fixtureDir("churn"), "store"), 8192)
	n := 0
	for _, f := range p.Files {
		if f.Reasons[0].Kind == KindRemoves {
			n++
			assert.NotEmpty(t, f.Reasons[0].Files)
		}
	}
	assert.Equal(t, 3, n)
}

// TestIncomplete: a journal an earlier cleanup deleted files of is refused
// without its index: a replay cannot know what the deleted files held.
func TestIncomplete(t *testing.T) {
	st, err := codec.OpenStore(filepath.Join(fixtureDir("aged"), "store"))
	require.NoError(t, err)
	_, err = Replay(st, codec.ReadOptions{})
	assert.ErrorIs(t, err, ErrIncomplete)
	cp := brokertest.CopyStore(t, filepath.Join(fixtureDir("aged"), "store"))
	for _, f := range []string{"scheduleDB.data", "scheduleDB.redo", "scheduleDB.free"} {
		require.NoError(t, os.Remove(filepath.Join(cp, f)))
	}
	st, err = codec.OpenStore(cp)
	require.NoError(t, err)
	_, src, err := Load(st, codec.ReadOptions{})
	assert.ErrorIs(t, err, ErrIncomplete)
	assert.False(t, src.Index)

	// a job's add in a file that is gone: the broker's recovery stops
	cp = brokertest.CopyStore(t, filepath.Join(fixtureDir("jobs"), "store"))
	require.NoError(t, os.Remove(filepath.Join(cp, "db-1.log")))
	st, err = codec.OpenStore(cp)
	require.NoError(t, err)
	_, _, err = Load(st, codec.ReadOptions{})
	assert.ErrorIs(t, err, ErrRecovery)

	for _, gone := range []string{"db-1.log", "db-4.log"} {
		cp := brokertest.CopyStore(t, filepath.Join(fixtureDir("jobs"), "store"))
		require.NoError(t, os.Remove(filepath.Join(cp, gone)))
		st, err := codec.OpenStore(cp)
		require.NoError(t, err)
		_, err = Replay(st, codec.ReadOptions{})
		assert.ErrorIs(t, err, ErrIncomplete, gone)
	}
}

func assertJobs(t *testing.T, bc brokerCleanup, m *Model) {
	jobs := m.Jobs()
	require.Len(t, jobs, len(bc.Jobs))
	byID := map[string]*Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for _, bj := range bc.Jobs {
		j := byID[bj.JobID]
		require.NotNil(t, j, bj.JobID)
		assert.Equal(t, bj.Delay, j.Delay, bj.JobID)
		assert.Equal(t, bj.Period, j.Period, bj.JobID)
		assert.Equal(t, bj.Repeat, j.Repeat, bj.JobID)
		assert.Equal(t, bj.Cron, j.Cron, bj.JobID)
	}
}

// TestPredictBroker: a real JobSchedulerStoreImpl started and stopped on a
// copy of each fixture deletes exactly the files predicted.
func TestPredictBroker(t *testing.T) {
	brokertest.Require(t)
	for _, name := range fixtures {
		for _, rotate := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/rotate=%v", name, rotate), func(t *testing.T) {
				bc0 := readCleanup(t, filepath.Join(fixtureDir(name), "cleanup.json"))
				cp := brokertest.CopyStore(t, filepath.Join(fixtureDir(name), "store"))
				maxLen := bc0.MaxFileLength
				if rotate {
					// the LOADED trace does not fit in the newest file:
					// it starts a new one, and the newest is no longer the
					// write position
					m, _ := predict(t, cp, maxLen)
					maxLen = m.Files[len(m.Files)-1].End + RestartTraceSize - 1
				}
				m, p := predict(t, cp, maxLen)
				assert.Equal(t, rotate, p.NewFile)
				out := filepath.Join(t.TempDir(), "cleanup.json")
				brokertest.Run(t, "SchedulerCleanup", cp, out, "--max-file-length", strconv.FormatInt(maxLen, 10))
				bc := readCleanup(t, out)
				assert.Equal(t, bc.Deleted, nonNil(p.Deleted))
				assert.Equal(t, bc.FilesBefore, ids(p))
				assertJobs(t, bc, m)
			})
		}
	}
}

// TestJobJSON: the JSON of every job of the fixtures names the destination
// and message the broker's own classes read from the job's payload
// (cleanup.json: SchedulerCleanup unmarshals it with OpenWireFormat), and
// its times and schedule are the model's.
func TestJobJSON(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			dir := fixtureDir(name)
			bc := readCleanup(t, filepath.Join(dir, "cleanup.json"))
			st, err := codec.OpenStore(filepath.Join(dir, "store"))
			require.NoError(t, err)
			r, err := Analyse(st, Options{})
			require.NoError(t, err)
			byID := map[string]*Job{}
			for _, j := range r.Model.Jobs() {
				byID[j.ID] = j
			}
			for _, bj := range bc.Jobs {
				j := byID[bj.JobID]
				require.NotNil(t, j)
				b, err := JobJSON(st, j, openwire.JSONOptions{})
				require.NoError(t, err)
				var doc struct {
					JobID         string  `json:"jobId"`
					Destination   string  `json:"destination"`
					NextRun       string  `json:"nextRun"`
					NextRunMillis int64   `json:"nextRunMillis"`
					Cron          string  `json:"cron"`
					Delay         int64   `json:"delay"`
					Add           string  `json:"add"`
					LastUpdate    *string `json:"lastUpdate"`
					Message       struct {
						Headers map[string]any `json:"headers"`
						Body    map[string]any `json:"body"`
					} `json:"message"`
				}
				require.NoError(t, json.Unmarshal(b, &doc), "%s", b)
				assert.Equal(t, bj.JobID, doc.JobID)
				assert.Equal(t, bj.Destination, doc.Destination)
				assert.Equal(t, bj.MessageID, doc.Message.Headers["JMSMessageID"], "%s", b)
				assert.Equal(t, bj.Cron, doc.Cron)
				assert.Equal(t, bj.Delay, doc.Delay)
				assert.Equal(t, time.UnixMilli(j.NextTime).UTC().Format("2006-01-02T15:04:05.000Z07:00"), doc.NextRun)
				assert.Equal(t, j.Add.String(), doc.Add)
				assert.NotEmpty(t, doc.Message.Body, "%s", b)
			}
			var out bytes.Buffer
			require.NoError(t, r.WriteJSON(&out))
			var rep struct {
				Kind         string            `json:"kind"`
				GCCandidates []int32           `json:"gcCandidates"`
				Jobs         []json.RawMessage `json:"jobs"`
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
			assert.Equal(t, "scheduler", rep.Kind)
			assert.Equal(t, bc.Deleted, nonNil(rep.GCCandidates))
			assert.Len(t, rep.Jobs, len(bc.Jobs))
		})
	}
}

// TestCorruptIndex: an index the broker cannot load (here cut to 100
// bytes) is rebuilt from the whole journal, by the broker and by Load; a
// real JobSchedulerStoreImpl then deletes what is predicted.
func TestCorruptIndex(t *testing.T) {
	cp := brokertest.CopyStore(t, filepath.Join(fixtureDir("jobs"), "store"))
	require.NoError(t, os.Truncate(filepath.Join(cp, "scheduleDB.data"), 100))
	st, err := codec.OpenStore(cp)
	require.NoError(t, err)
	m, src, err := Load(st, codec.ReadOptions{})
	require.NoError(t, err)
	assert.False(t, src.Index)
	assert.NotEmpty(t, src.IndexProblem)
	p := m.Predict(8192)
	bc0 := readCleanup(t, filepath.Join(fixtureDir("jobs"), "cleanup.json"))
	assert.Equal(t, bc0.Deleted, p.Deleted)

	brokertest.Require(t)
	out := filepath.Join(t.TempDir(), "cleanup.json")
	brokertest.Run(t, "SchedulerCleanup", cp, out, "--max-file-length", "8192")
	bc := readCleanup(t, out)
	assert.Equal(t, bc.Deleted, nonNil(p.Deleted))
	assertJobs(t, bc, m)
}

// TestRunning: a running store's write position is its last record; its
// cleanup deletes what a restarted one's deletes when the restart's trace
// stays in the newest file.
func TestRunning(t *testing.T) {
	for _, name := range fixtures {
		st, err := codec.OpenStore(filepath.Join(fixtureDir(name), "store"))
		require.NoError(t, err)
		run, err := Analyse(st, Options{Running: true})
		require.NoError(t, err)
		restart, err := Analyse(st, Options{})
		require.NoError(t, err)
		assert.Equal(t, run.Model.LastUpdate, run.Prediction.Trace, name)
		require.False(t, restart.Prediction.NewFile, name)
		assert.Equal(t, restart.Prediction.Deleted, run.Prediction.Deleted, name)
	}
}

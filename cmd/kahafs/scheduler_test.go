package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSchedulerStoreRefused: on a real broker's job scheduler store
// (testdata/scheduler/jobs, brokerkit SchedulerGen) every command but
// holders (which has the scheduler's own model) and dump refuses, naming
// the store kind, the first scheduler command's file and offset and the
// command types; nothing is printed on stdout. dump, which only lists
// records, works.
func TestSchedulerStoreRefused(t *testing.T) {
	dir := brokertest.CopyStore(t, filepath.Join(brokertest.RepoRoot(), "testdata", "scheduler", "jobs", "store"))
	names := func() []string {
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	before := names()
	defer func() { assert.Equal(t, before, names(), "nothing written into the store") }()
	for _, args := range [][]string{
		{"stats", dir},
		{"stats", "--json", dir},
		{"compact", "--dry-run", dir},
		{"compact", dir},
		{"ls", dir, "/"},
		{"find", dir, "--message-id", "ID:x:1:1:1:1"},
		{"cat", dir, "summary.json"},
	} {
		out, stderr, code := runCLI(t, args...)
		assert.Equal(t, exitError, code, "%v: %s", args, out)
		assert.Empty(t, out, "%v", args)
		assert.Contains(t, stderr, "job scheduler store", "%v", args)
		assert.Contains(t, stderr, filepath.Join(dir, "db-1.log")+": offset 100: ", "%v", args)
		assert.Contains(t, stderr, "KAHA_ADD_SCHEDULED_JOB_COMMAND, KAHA_RESCHEDULE_JOB_COMMAND, KAHA_REMOVE_SCHEDULED_JOB_COMMAND, KAHA_REMOVE_SCHEDULED_JOBS_COMMAND", "%v", args)
		assert.NotContains(t, out+stderr, "free", "%v", args)
	}
	// the mount reads its tree through fsnode.Open
	_, err := fsnode.Open(dir, fsnode.Options{})
	assert.ErrorIs(t, err, store.ErrSchedulerStore)

	out, stderr, code := runCLI(t, "dump", dir)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "1:100 ")
	assert.Equal(t, 93, strings.Count(out, "KAHA_ADD_SCHEDULED_JOB_COMMAND"))
}

// TestSchedulerHolders: holders on the job scheduler fixtures calls free
// exactly the files the broker's cleanup deleted (cleanup.json, recorded
// by brokerkit SchedulerCleanup on a copy), in text and JSON, and refuses
// a scheduler journal an earlier cleanup deleted files of when its index
// is gone.
func TestSchedulerHolders(t *testing.T) {
	for _, name := range []string{"jobs", "churn", "aged", "crash"} {
		fx := filepath.Join(brokertest.RepoRoot(), "testdata", "scheduler", name)
		raw, err := os.ReadFile(filepath.Join(fx, "cleanup.json"))
		require.NoError(t, err)
		var bc struct {
			FilesBefore []int32 `json:"filesBefore"`
			Deleted     []int32 `json:"deleted"`
			Jobs        []any   `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal(raw, &bc))
		dir := brokertest.CopyStore(t, filepath.Join(fx, "store"))

		out, stderr, code := runCLI(t, "holders", dir)
		require.Equal(t, exitOK, code, stderr)
		assert.Contains(t, out, "job scheduler store "+dir+": "+strconv.Itoa(len(bc.Jobs))+" job(s) scheduled")
		var free []int32
		lines := 0
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "db-") {
				continue
			}
			lines++
			name, rest, _ := strings.Cut(line, " ")
			id, ok := codec.ParseDataFileName(name)
			require.True(t, ok, line)
			if strings.HasPrefix(strings.TrimSpace(rest), "free:") {
				free = append(free, id)
			} else {
				assert.True(t, strings.HasPrefix(strings.TrimSpace(rest), "pinned: "), line)
			}
		}
		assert.Equal(t, len(bc.FilesBefore), lines)
		assert.Equal(t, bc.Deleted, nonNilIDs(free), name)

		out, stderr, code = runCLI(t, "holders", "--json", dir)
		require.Equal(t, exitOK, code, stderr)
		var doc struct {
			Kind         string  `json:"kind"`
			GCCandidates []int32 `json:"gcCandidates"`
			Jobs         []any   `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		assert.Equal(t, "scheduler", doc.Kind)
		assert.Equal(t, bc.Deleted, nonNilIDs(doc.GCCandidates), name)
		assert.Len(t, doc.Jobs, len(bc.Jobs))
	}

	// without its index, a journal an earlier cleanup deleted files of
	// (aged: db-2.log, db-3.log): refused
	dir := brokertest.CopyStore(t, filepath.Join(brokertest.RepoRoot(), "testdata", "scheduler", "aged", "store"))
	require.NoError(t, os.Remove(filepath.Join(dir, "scheduleDB.data")))
	out, stderr, code := runCLI(t, "holders", dir)
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Contains(t, stderr, "job scheduler store")
	assert.Contains(t, stderr, "not complete")
	assert.Contains(t, stderr, "no cleanup prediction")
}

func nonNilIDs(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

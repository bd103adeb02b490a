package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
)

// TestSchedulerStoreRefused: on a real broker's job scheduler store
// (testdata/scheduler/jobs, brokerkit SchedulerGen) every command that
// would predict what the cleanup deletes refuses, naming the store kind,
// the first scheduler command's file and offset and the command types;
// nothing is printed on stdout. dump, which only lists records, works.
func TestSchedulerStoreRefused(t *testing.T) {
	dir := brokertest.CopyStore(t, filepath.Join(brokertest.RepoRoot(), "testdata", "scheduler", "jobs", "store"))
	for _, args := range [][]string{
		{"holders", dir},
		{"holders", "--json", dir},
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

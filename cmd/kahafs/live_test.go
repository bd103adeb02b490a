package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunningBroker: beside a real broker's lock (HoldStore), holders says
// on its first line that a broker runs (its pid) and predicts its next
// periodic cleanup, as --running does; --running=false predicts a
// restart's; the tree and stats say so first on stderr; a dry run works
// and names it; a compaction refuses.
func TestRunningBroker(t *testing.T) {
	fx := brokertest.Named(t, "tx")
	dir := brokertest.CopyStore(t, fx.StoreDir)
	n := strconv.Itoa(fx.Expected.MaxFileLength)
	out, stderr, code := runCLI(t, "holders", "--no-cache", "--max-file-length", n, dir)
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, out, "broker running")

	pid, release := brokertest.HoldStore(t, dir)
	p := strconv.Itoa(pid)
	// The broker opened the store (and wrote to it): both predictions
	// are of the store as it is now.
	holders := func(args ...string) (string, string) {
		out, stderr, code := runCLI(t, append(append([]string{"holders", "--no-cache", "--max-file-length", n}, args...), dir)...)
		require.Equal(t, exitOK, code, stderr)
		first, rest, _ := strings.Cut(out, "\n")
		return first, rest
	}
	// The broker may still write (its first checkpoint's records): the
	// predictions compared are taken between two equal readings.
	var running, restart, lineRestart, first, rest string
	for try := 0; ; try++ {
		_, running = holders("--running")
		lineRestart, restart = holders("--running=false")
		first, rest = holders()
		if _, again := holders("--running"); again == running || try == 20 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.NotEqual(t, running, restart, "the fixture's two predictions differ")
	assert.Equal(t, "broker running: process "+p+" holds the store's lock (it is writing to the store); the prediction is its next periodic cleanup (--running; --running=false: a broker started on the store as it is)", first)
	assert.Equal(t, running, rest, "the running broker's prediction")
	assert.Contains(t, lineRestart, "process "+p)
	assert.Contains(t, lineRestart, "the prediction is the first cleanup of a broker started on the store as it is")

	out, stderr, code = runCLI(t, "holders", "--no-cache", "--json", "--max-file-length", n, dir)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		BrokerPID int  `json:"brokerPid"`
		Running   bool `json:"running"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, pid, doc.BrokerPID)
	assert.True(t, doc.Running)

	for _, args := range [][]string{{"ls", "--no-cache", dir}, {"stats", dir}} {
		_, stderr, code = runCLI(t, args...)
		require.Equal(t, exitOK, code, stderr)
		assert.True(t, strings.HasPrefix(stderr, "broker running: process "+p+" "), "%v: %s", args, stderr)
	}

	t.Run("mount", func(t *testing.T) {
		requireFUSE(t)
		m := startMountProc(t, buildKahafs(t), dir, "--no-cache", "--max-file-length", n)
		m.mu.Lock()
		first := m.lines[0]
		m.mu.Unlock()
		assert.True(t, strings.HasPrefix(first, "broker running: process "+p+" "), first)
		var want string
		for _, l := range strings.Split(running, "\n") {
			if f := strings.Fields(l); len(f) > 3 && f[3] == "free:" {
				want += f[0] + "\n"
			}
		}
		b, err := os.ReadFile(filepath.Join(m.mnt, "free"))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), "the mount predicts the running broker's cleanup")
	})

	out, stderr, code = runCLI(t, "compact", "--dry-run", "--no-cache", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "- Broker running: process "+p+" holds the store's lock")
	_, stderr, code = runCLI(t, "compact", "--no-cache", dir)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "locked by process "+p)
	release()
}

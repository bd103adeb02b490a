package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startMount runs `kahafs mount ARGS... STORE MNT` and waits for "ready".
func startMount(t *testing.T, store string, args ...string) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	cmd := exec.Command(buildKahafs(t), append(append([]string{"mount"}, args...), store, mnt)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("kahafs:", sc.Text())
			if strings.HasPrefix(sc.Text(), "ready") {
				ready <- true
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		require.True(t, ok, "kahafs mount exited before ready")
	case <-time.After(60 * time.Second):
		t.Fatal("no ready within 60 s")
	}
	return mnt
}

func readControl(t *testing.T, mnt string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mnt, "control"))
	require.NoError(t, err)
	return string(b)
}

// waitControl polls control until the state is idle and the last result
// names cmd.
func waitControl(t *testing.T, mnt, cmd string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		s := readControl(t, mnt)
		if strings.HasPrefix(s, "state: idle") && strings.Contains(s, "command: "+cmd+"\n") {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("control never finished %q: %s", cmd, readControl(t, mnt))
	return ""
}

func TestMountControlCompacts(t *testing.T) {
	requireFUSE(t)
	fx := brokertest.Named(t, "topics")
	store := brokertest.CopyStore(t, fx.StoreDir)
	before := hashTree(t, store)

	ro := startMount(t, store, "--max-file-length", "16384")
	_, err := os.Stat(filepath.Join(ro, "control"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "no control file without --rw")

	mnt := startMount(t, store, "--rw", "--max-file-length", "16384")
	assert.True(t, strings.HasPrefix(readControl(t, mnt), "state: idle"))
	names := dirNames(t, mnt)
	assert.Contains(t, names, "control")
	readme, err := os.ReadFile(filepath.Join(mnt, "README"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), `"compact --dry-run"`)
	roReadme, err := os.ReadFile(filepath.Join(ro, "README"))
	require.NoError(t, err)
	assert.NotContains(t, string(roReadme), "--rw")
	// Everything else is still read-only.
	err = os.WriteFile(filepath.Join(mnt, "pinned"), []byte("x"), 0o644)
	assert.ErrorIs(t, err, syscall.EROFS)

	// Garbage: a clear error, nothing changes.
	err = os.WriteFile(filepath.Join(mnt, "control"), []byte("rm -rf /\n"), 0o600)
	assert.ErrorIs(t, err, syscall.EINVAL)
	assert.Contains(t, readControl(t, mnt), `rejected "rm -rf /"`)
	assert.Equal(t, before, hashTree(t, store))

	// Dry run: a report, nothing changes.
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "control"), []byte("compact --dry-run\n"), 0o600))
	out := waitControl(t, mnt, "compact --dry-run")
	assert.Contains(t, out, "status: done")
	assert.Contains(t, out, "dry run")
	assert.Equal(t, before, hashTree(t, store))

	// The real thing: the tree then shows the compacted store.
	filesBefore := dirNames(t, filepath.Join(mnt, "by-file"))
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "control"), []byte("compact\n"), 0o600))
	out = waitControl(t, mnt, "compact")
	require.Contains(t, out, "status: done", out)
	assert.Contains(t, out, "Original kept at: "+store+".backup-")
	filesAfter := dirNames(t, filepath.Join(mnt, "by-file"))
	assert.Less(t, len(filesAfter), len(filesBefore))
	assert.Equal(t, []string{"db-1.log"}, filesAfter)
	// The same pending messages as the broker recovered from the original.
	compared := 0
	for _, d := range dirNames(t, filepath.Join(mnt, "by-destination", "topic")) {
		for _, s := range dirNames(t, filepath.Join(mnt, "by-destination", "topic", d, "subscriptions")) {
			sdir := filepath.Join(mnt, "by-destination", "topic", d, "subscriptions", s)
			n := len(dirNames(t, filepath.Join(sdir, "pending"))) / 2 // .json and .body
			var info struct {
				Deliverable       int `json:"deliverable"`
				SkippedBySelector int `json:"skippedBySelector"`
			}
			b, err := os.ReadFile(filepath.Join(sdir, "info.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &info))
			key := "topic://" + d + "|" + s
			if want, ok := fx.Expected.Inspect.Subscriptions[key]; ok {
				// the store's candidates (what Inspect recovers) are the
				// delivered ones and those the selector skips
				assert.Equal(t, len(want.Pending), n+info.SkippedBySelector, key)
				assert.Equal(t, info.Deliverable, n, key)
				compared++
			}
		}
	}
	assert.Positive(t, compared)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}

// TestMountControlCompactsLayout: the control file of a --rw mount of a
// broker's data directory compacts its stores one by one; the tree then
// shows them compacted (nothing free any more).
func TestMountControlCompactsLayout(t *testing.T) {
	requireFUSE(t)
	fx := brokertest.LayoutFixtures(t)[0]
	data := brokertest.CopyTree(t, fx.DataDir)
	mnt := startMount(t, data, "--rw", "--no-cache", "--max-file-length", "16384")
	free, err := os.ReadFile(filepath.Join(mnt, "free"))
	require.NoError(t, err)
	assert.NotEmpty(t, free)
	readme, err := os.ReadFile(filepath.Join(mnt, "README"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "compacts each KahaDB store in turn")
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "control"), []byte("compact\n"), 0o600))
	out := waitControl(t, mnt, "compact")
	require.Contains(t, out, "status: done", out)
	assert.Contains(t, out, "== mKahaDB/queue#3a#2f#2fORDERS.#3e (kahadb)")
	assert.Contains(t, out, "skipped: the transaction store of an mKahaDB is not compacted")
	free, err = os.ReadFile(filepath.Join(mnt, "free"))
	require.NoError(t, err)
	assert.Empty(t, string(free))
	assert.Equal(t, []string{"db-1.log"}, dirNames(t, filepath.Join(mnt, "queue:%2F%2FORDERS.>", "by-file")))
}

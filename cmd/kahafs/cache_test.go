package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHoldersCache: the second run of holders answers from the cache, with
// the same output; --no-cache reads everything and writes no cache.
func TestHoldersCache(t *testing.T) {
	for _, name := range []string{"tx", "crash", "topics"} {
		t.Run(name, func(t *testing.T) {
			fx := brokertest.Named(t, name)
			store := brokertest.AgedCopy(t, fx.StoreDir)
			cdir := filepath.Join(t.TempDir(), "cache")
			mfl := strconv.Itoa(fx.Expected.MaxFileLength)
			for _, format := range [][]string{{"--json"}, {}} {
				args := append(append([]string{"holders"}, format...), "--max-file-length", mfl, "--cache-dir", cdir, store)
				out1, err1, code := runCLI(t, args...)
				require.Equal(t, exitOK, code, err1)
				out2, err2, code := runCLI(t, args...)
				require.Equal(t, exitOK, code, err2)
				assert.Equal(t, out1, out2)
				assert.Contains(t, err2, "cache: hit")
				if len(format) > 0 {
					assert.Contains(t, err1, "cache: miss (no cache file); saved")
				}

				plain, errPlain, code := runCLI(t, append(args[:len(args)-3:len(args)-3], "--no-cache", store)...)
				require.Equal(t, exitOK, code, errPlain)
				assert.Equal(t, out1, plain)
				assert.NotContains(t, errPlain, "cache:")
			}
			ents, err := os.ReadDir(cdir)
			require.NoError(t, err)
			assert.Len(t, ents, 1, "one cache file for the store")

			// the store grew: only the new file is read
			appendTraceFile(t, store)
			args := []string{"holders", "--json", "--max-file-length", mfl, store}
			fresh, _, code := runCLI(t, append(args, "--no-cache")...)
			require.Equal(t, exitOK, code)
			tail, errTail, code := runCLI(t, append(args, "--cache-dir", cdir)...)
			require.Equal(t, exitOK, code, errTail)
			assert.Contains(t, errTail, "cache: tail")
			assert.Equal(t, fresh, tail)
		})
	}
}

// TestMountCache: a second mount of an unchanged store answers from the
// cache, through the kernel, with the same tree; a refresh after the store
// grew reads only the tail.
func TestMountCache(t *testing.T) {
	requireFUSE(t)
	fx := brokertest.Named(t, "tx")
	store := brokertest.AgedCopy(t, fx.StoreDir)
	cdir := t.TempDir()
	bin := buildKahafs(t)
	mfl := strconv.Itoa(fx.Expected.MaxFileLength)

	type mount struct {
		cmd   *exec.Cmd
		mnt   string
		lines chan string
		done  bool
	}
	start := func(extra ...string) *mount {
		m := &mount{mnt: filepath.Join(t.TempDir(), "mnt"), lines: make(chan string, 100)}
		require.NoError(t, os.Mkdir(m.mnt, 0o755))
		args := append(append([]string{"mount", "--max-file-length", mfl}, extra...), store, m.mnt)
		m.cmd = exec.Command(bin, args...)
		stderr, err := m.cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, m.cmd.Start())
		t.Cleanup(func() {
			if !m.done {
				_ = m.cmd.Process.Kill()
				_ = m.cmd.Wait()
				_ = exec.Command("fusermount3", "-u", "-z", m.mnt).Run()
			}
		})
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				m.lines <- sc.Text()
			}
			close(m.lines)
		}()
		return m
	}
	waitFor := func(m *mount, prefix string) string {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-m.lines:
				require.True(t, ok, "kahafs exited before printing %q", prefix)
				t.Logf("kahafs: %s", l)
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-deadline:
				t.Fatalf("no %q from kahafs within 60s", prefix)
			}
		}
	}
	stop := func(m *mount) {
		require.NoError(t, m.cmd.Process.Signal(syscall.SIGTERM))
		waitFor(m, "unmounted")
		require.NoError(t, m.cmd.Wait())
		m.done = true
	}
	// what the tree says, besides the time of the reading
	tree := func(mnt string) map[string]string {
		out := map[string]string{}
		for _, p := range []string{"pinned", "free"} {
			b, err := os.ReadFile(filepath.Join(mnt, p))
			require.NoError(t, err)
			out[p] = string(b)
		}
		ents, err := os.ReadDir(filepath.Join(mnt, "by-file"))
		require.NoError(t, err)
		for _, e := range ents {
			for _, n := range []string{"info.json", "holders.json"} {
				b, err := os.ReadFile(filepath.Join(mnt, "by-file", e.Name(), n))
				require.NoError(t, err)
				out[e.Name()+"/"+n] = string(b)
			}
			cmds, err := os.ReadDir(filepath.Join(mnt, "by-file", e.Name()))
			require.NoError(t, err)
			out[e.Name()+"/"] = strconv.Itoa(len(cmds))
		}
		var sum map[string]any
		b, err := os.ReadFile(filepath.Join(mnt, "summary.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &sum))
		delete(sum, "readAt")
		delete(sum, "snapshot")
		s, _ := json.Marshal(sum)
		out["summary.json"] = string(s)
		return out
	}

	plain := start("--no-cache")
	assert.NotContains(t, waitFor(plain, "ready"), "cache")
	want := tree(plain.mnt)
	stop(plain)

	first := start("--cache-dir", cdir)
	assert.Contains(t, waitFor(first, "ready"), "cache miss")
	assert.Equal(t, want, tree(first.mnt))
	stop(first)

	second := start("--cache-dir", cdir)
	assert.Contains(t, waitFor(second, "ready"), "cache hit")
	assert.Equal(t, want, tree(second.mnt))

	// the store grows: the refresh reads the new file only
	next := appendTraceFile(t, store)
	require.NoError(t, second.cmd.Process.Signal(syscall.SIGHUP))
	assert.Contains(t, waitFor(second, "refreshed: snapshot 2"), "cache tail")
	_, err := os.Stat(filepath.Join(second.mnt, "by-file", codec.DataFileName(next), "0000000028-KAHA_TRACE_COMMAND.json"))
	assert.NoError(t, err)
	grown := tree(second.mnt)
	stop(second)

	third := start("--no-cache")
	waitFor(third, "ready")
	assert.Equal(t, tree(third.mnt), grown, "the refreshed tree is a fresh reading's")
	stop(third)
}

// appendTraceFile adds a data file after the store's last one, holding one
// trace command ("hello", at offset 28), and returns its id.
func appendTraceFile(t *testing.T, store string) int32 {
	t.Helper()
	st, err := codec.OpenStore(store)
	require.NoError(t, err)
	next := st.Files[len(st.Files)-1].ID + 1
	w := codec.NewJournalWriter(store, codec.WriterOptions{FirstID: next, NoSync: true})
	_, err = w.AppendCommand(codec.NewTraceCommand([]byte("hello")))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return next
}

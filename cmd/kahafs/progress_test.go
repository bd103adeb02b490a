package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestProgressBarDrawing: on a terminal the bar says what it does, how
// far (bar, percent, bytes of total) and how fast, redraws at most ten
// times a second, steps aside for lines said meanwhile and is erased at
// the end; anywhere else it draws nothing.
func TestProgressBarDrawing(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := &progressBar{w: &out, tty: true, now: func() time.Time { return clock }, prev: clock}
	step := func(d time.Duration, label string, done, total int64) {
		clock = clock.Add(d)
		p.update(label, done, total)
	}
	step(100*time.Millisecond, "reading store", 100<<20, 3<<30)
	step(50*time.Millisecond, "reading store", 200<<20, 3<<30) // too soon: not drawn
	step(350*time.Millisecond, "reading store", 1<<30, 3<<30)
	fmt.Fprintln(p, "warning: cache: not saved: disk full")
	step(time.Second, "reading store", 3<<30, 3<<30)
	step(time.Second, "writing", 64<<20, 200<<20)
	step(2*time.Second, "writing", 250<<20, 200<<20) // past the estimate: 100 %
	p.finish()
	var b strings.Builder
	for _, part := range strings.SplitAfter(out.String(), "\r") {
		b.WriteString(strconv.Quote(part) + "\n")
	}
	golden(t, "progress", b.String())

	out.Reset()
	p = &progressBar{w: &out, tty: false, now: time.Now}
	p.update("reading store", 1, 2)
	p.update("reading store", 2, 2)
	fmt.Fprintln(p, "a line")
	p.finish()
	assert.Equal(t, "a line\n", out.String(), "nothing but the lines when not on a terminal")
}

// openPTY opens a pseudo-terminal pair (the terminal side is slave).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		need.Skip(t, "no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	return m, s
}

// runOnTerminal runs bin with args, its stderr on a terminal (or a pipe)
// and returns what it wrote there.
func runOnTerminal(t *testing.T, tty bool, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout = io.Discard
	var got bytes.Buffer
	if !tty {
		cmd.Stderr = &got
		require.NoError(t, cmd.Run(), got.String())
		return got.String()
	}
	m, s := openPTY(t)
	cmd.Stderr = s
	require.NoError(t, cmd.Start())
	s.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(&got, m) // ends with EIO once the process is gone
		close(done)
	}()
	require.NoError(t, cmd.Wait())
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("terminal output did not end")
	}
	return got.String()
}

// TestProgressOnTerminalOnly: holders and compact (and mount, below) show
// the bar on a terminal, with bytes and a rate, and nothing of it when
// stderr is not one.
func TestProgressOnTerminalOnly(t *testing.T) {
	bin := buildKahafs(t)
	store := brokertest.Named(t, "queues").StoreDir
	for _, c := range []struct {
		name   string
		args   []string
		labels []string
	}{
		{"holders", []string{"holders", "--no-cache", store}, []string{"reading store ["}},
		{"compact-dry-run", []string{"compact", "--dry-run", "--no-cache", store}, []string{"reading store [", "laying out ["}},
		{"compact", []string{"compact", "--no-cache", "COPY"}, []string{"reading store [", "writing [", "verifying ["}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string(nil), c.args...)
			if args[len(args)-1] == "COPY" {
				args[len(args)-1] = brokertest.CopyStore(t, store)
			}
			term := runOnTerminal(t, true, bin, args...)
			for _, l := range c.labels {
				assert.Contains(t, term, "\r\033[K"+l, "%q", term)
			}
			assert.Regexp(t, `\] 100% \d+\.\d KiB / \d+\.\d KiB, [\d.]+ [KMG]?i?B/s`, term)
			assert.True(t, strings.HasSuffix(strings.TrimRight(term, "\r\n"), "\r\033[K") || !strings.HasSuffix(term, "/s"), "erased at the end: %q", term)

			if args[len(args)-1] != store {
				args[len(args)-1] = brokertest.CopyStore(t, store)
			}
			pipe := runOnTerminal(t, false, bin, args...)
			assert.NotContains(t, pipe, "\r")
			assert.NotContains(t, pipe, "\033")
			assert.NotContains(t, pipe, "[#")
			for _, l := range c.labels {
				assert.NotContains(t, pipe, l)
			}
		})
	}

	t.Run("mount", func(t *testing.T) {
		requireFUSE(t)
		mnt := filepath.Join(t.TempDir(), "mnt")
		require.NoError(t, os.Mkdir(mnt, 0o755))
		m, s := openPTY(t)
		cmd := exec.Command(bin, "mount", "--no-cache", store, mnt)
		cmd.Stderr = s
		require.NoError(t, cmd.Start())
		s.Close()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
		})
		var got bytes.Buffer
		buf := make([]byte, 4096)
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(got.String(), "ready: ") && time.Now().Before(deadline) {
			_ = m.SetReadDeadline(deadline)
			n, err := m.Read(buf)
			got.Write(buf[:n])
			if err != nil && !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		require.Contains(t, got.String(), "ready: ")
		assert.Contains(t, got.String(), "\r\033[Kreading store [")
		assert.Regexp(t, `\] 100% \d+\.\d KiB / \d+\.\d KiB, [\d.]+ [KMG]?i?B/s\r\033\[Kready: `, got.String())
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		_ = cmd.Wait()
	})
}

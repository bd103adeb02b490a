package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mountProc is a `kahafs mount` process whose stderr is kept line by line.
type mountProc struct {
	cmd   *exec.Cmd
	mnt   string
	mu    sync.Mutex
	lines []string
	more  chan struct{} // a line came, or stderr closed
	done  bool
}

// startMountProc runs the binary bin as `mount ARGS... STORE MNT` (a
// fresh mountpoint) and waits for its ready line; the process is stopped
// (and the mount detached) at the end of the test.
func startMountProc(t *testing.T, bin, store string, args ...string) *mountProc {
	t.Helper()
	p := &mountProc{mnt: filepath.Join(t.TempDir(), "mnt"), more: make(chan struct{}, 1)}
	require.NoError(t, os.Mkdir(p.mnt, 0o755))
	p.cmd = exec.Command(bin, append(append([]string{"mount"}, args...), store, p.mnt)...)
	pipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			t.Logf("kahafs: %s", sc.Text())
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
		p.mu.Lock()
		p.done = true
		p.mu.Unlock()
		close(p.more)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
		_ = exec.Command("fusermount3", "-u", "-z", p.mnt).Run()
	})
	p.waitFor(t, "ready")
	return p
}

// waitFor waits up to 60 s for a line starting with prefix and returns it.
func (p *mountProc) waitFor(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	seen := 0
	for {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if strings.HasPrefix(p.lines[seen], prefix) {
				l := p.lines[seen]
				p.mu.Unlock()
				return l
			}
		}
		done := p.done
		p.mu.Unlock()
		if done {
			t.Fatalf("kahafs exited before printing %q", prefix)
		}
		select {
		case <-p.more:
		case <-deadline:
			t.Fatalf("no %q from kahafs within 60 s", prefix)
		}
	}
}

// output is every stderr line so far.
func (p *mountProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

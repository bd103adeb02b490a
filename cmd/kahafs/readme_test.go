package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeExample is a command README.md shows and what it prints.
type readmeExample struct {
	cmd, want string
}

// readmeExamples lists the "$ command" lines of README.md's code blocks
// with the lines that follow them, up to the next command or the block's
// end.
func readmeExamples(t *testing.T) []readmeExample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	var out []readmeExample
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			in = !in
		case in && strings.HasPrefix(l, "$ "):
			out = append(out, readmeExample{cmd: strings.TrimPrefix(l, "$ ")})
		case in && len(out) > 0:
			out[len(out)-1].want += l + "\n"
		}
	}
	return out
}

// runExample runs an example's command with bash in the repository, with
// kahafs on PATH and the sample mountpoint replaced by mnt.
func runExample(t *testing.T, bin, mnt string, ex readmeExample) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", strings.ReplaceAll(ex.cmd, "/tmp/kahafs-sample", mnt))
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	require.NoError(t, err, ex.cmd)
	if mnt == "" {
		return string(out)
	}
	return strings.ReplaceAll(string(out), mnt, "/tmp/kahafs-sample")
}

// sameListing compares what README.md shows ls print on a terminal
// (columns) with what it prints into a pipe (one name a line).
func sameListing(want, got string) bool {
	return strings.Join(strings.Fields(want), " ") == strings.Join(strings.Fields(got), " ")
}

// TestReadmeCommands: the commands README.md shows print what it shows:
// holders, stats, dump, ls, cat, find and grep on the bundled stores.
func TestReadmeCommands(t *testing.T) {
	bin := buildKahafs(t)
	n := 0
	for _, ex := range readmeExamples(t) {
		sub, _, _ := strings.Cut(strings.TrimPrefix(ex.cmd, "kahafs "), " ")
		switch {
		case !strings.HasPrefix(ex.cmd, "kahafs "):
			continue
		case sub == "holders", sub == "stats", sub == "dump", sub == "ls", sub == "cat", sub == "find", sub == "metrics", sub == "grep", sub == "plan":
		default:
			continue
		}
		n++
		// The disk space a file takes depends on the file system.
		assert.Equal(t, onDisk.ReplaceAllString(ex.want, "DISK"), onDisk.ReplaceAllString(runExample(t, bin, "", ex), "DISK"), ex.cmd)
	}
	assert.GreaterOrEqual(t, n, 11, "README's holders, stats, dump, ls, cat and find examples")
}

// TestSampleMountScript: the first of README.md's two commands, as
// printed: it says what it does while it builds, its ready line says how
// to unmount, the tree answers what README.md shows, and Ctrl-C (SIGINT)
// unmounts.
func TestSampleMountScript(t *testing.T) {
	requireFUSE(t)
	mnt := filepath.Join(t.TempDir(), "sample")
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "sample-mount.sh"), mnt)
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var said []string
	waitFor := func(prefix string) string {
		t.Helper()
		deadline := time.After(5 * time.Minute) // a first build downloads modules
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "the script ended before %q: %s", prefix, strings.Join(said, "\n"))
				t.Logf("script: %s", l)
				said = append(said, l)
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-deadline:
				t.Fatalf("no %q from the script", prefix)
			}
		}
	}
	waitFor("building kahafs into bin/kahafs (the first build downloads its Go modules and compiles them: about a minute) ...")
	waitFor("built: kahafs ")
	ready := waitFor("ready: ")
	assert.Contains(t, ready, " mounted at "+mnt+" (")
	assert.Contains(t, ready, "; to unmount: Ctrl-C, kill ")
	assert.True(t, strings.HasSuffix(ready, " or fusermount3 -u "+mnt), ready)

	bin, err := filepath.Abs(filepath.Join("..", "..", "bin", "kahafs"))
	require.NoError(t, err)
	n := 0
	for _, ex := range readmeExamples(t) {
		if !strings.Contains(ex.cmd, "/tmp/kahafs-sample") {
			continue
		}
		n++
		got := runExample(t, bin, mnt, ex)
		if strings.HasPrefix(ex.cmd, "ls ") && !strings.Contains(ex.cmd, "|") {
			assert.True(t, sameListing(ex.want, got), "%s: README shows %q, got %q", ex.cmd, ex.want, got)
			continue
		}
		assert.Equal(t, ex.want, got, ex.cmd)
	}
	assert.GreaterOrEqual(t, n, 7, "README's tree examples")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	waitFor("unmounted " + mnt)
	require.NoError(t, cmd.Wait())
	exited = true
	assert.False(t, mounted(t, mnt))
}

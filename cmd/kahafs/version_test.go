package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersionText: --version names the module version, the revision (and
// uncommitted changes), the commit time and the Go release; a binary
// built without version control information says so.
func TestVersionText(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	var all strings.Builder
	for _, info := range []*debug.BuildInfo{
		{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/kahafs/kahafs", Version: "v1.2.0"},
			Settings: settings("GOOS", "linux", "GOARCH", "amd64", "vcs", "git", "vcs.revision", "0123456789abcdef0123456789abcdef01234567",
				"vcs.time", "2026-11-29T22:30:12Z", "vcs.modified", "false")},
		{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/kahafs/kahafs", Version: "v0.0.0-20261129223012-0123456789ab+dirty"},
			Settings: settings("GOOS", "linux", "GOARCH", "arm64", "vcs.revision", "0123456789abcdef0123456789abcdef01234567",
				"vcs.time", "2026-11-29T22:30:12Z", "vcs.modified", "true")},
		{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/kahafs/kahafs", Version: "(devel)"},
			Settings: settings("GOOS", "linux", "GOARCH", "amd64")},
	} {
		all.WriteString(versionText(info, true) + "--\n")
	}
	all.WriteString(versionText(nil, false))
	golden(t, "version", all.String())

	out, _, code := runCLI(t, "--version")
	require.Equal(t, exitOK, code)
	assert.Equal(t, buildVersion(), out)
	assert.True(t, strings.HasPrefix(out, "kahafs "), out)
}

// readmeInstall is README.md's install command (go build … -o
// /usr/local/bin/kahafs ./cmd/kahafs), its words.
func readmeInstall(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		l, _, _ = strings.Cut(strings.TrimSpace(l), "#")
		if strings.HasPrefix(l, "go build ") && strings.Contains(l, "-o /usr/local/bin/kahafs") {
			return strings.Fields(l)
		}
	}
	t.Fatal("README.md has no install command go build … -o /usr/local/bin/kahafs")
	return nil
}

// TestVersionBinary: a binary built from a git checkout with README.md's
// install command names the commit it was built from, even where GOFLAGS
// says -buildvcs=false.
func TestVersionBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kahafs")
	args := readmeInstall(t)
	for i, a := range args {
		if a == "/usr/local/bin/kahafs" {
			args[i] = bin
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
	v, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(v), "\n")
	assert.True(t, strings.HasPrefix(first, "kahafs "), first)
	assert.Contains(t, string(v), "\ngo: go1.")

	if _, err := exec.LookPath("git"); err != nil {
		need.Skip(t, "git is not in PATH: %v", err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		// a source tree without its history: nothing to stamp
		t.Skipf("not a git checkout (%v): no revision to compare", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err)
	if st, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !st.IsDir() {
		// The go command stamps only where .git is a directory, not in a
		// linked work tree (git worktree) or a submodule.
		t.Skip(".git is not a directory (git worktree): go build stamps no revision here")
	}
	assert.Contains(t, string(v), "\nrevision: "+strings.TrimSpace(string(head)))
}

// TestGenMan: the gen-man command (listed in --help) writes a manual page for kahafs
// and for each command, with the flags.
func TestGenMan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	out, stderr, code := runCLI(t, "gen-man", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "manual pages written to "+dir)
	for _, name := range []string{"kahafs", "kahafs-holders", "kahafs-mount", "kahafs-compact", "kahafs-dump", "kahafs-stats"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".1"))
		require.NoError(t, err, name)
		assert.Contains(t, string(b), `.TH "KAHAFS" "1"`, name)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kahafs-holders.1"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `\fB--max-file-length\fP`)
	assert.Contains(t, string(b), "holders replays the journal")
	top, _, _ := runCLI(t, "--help")
	assert.Contains(t, top, "gen-man", "listed in --help, as README.md tells it")
}

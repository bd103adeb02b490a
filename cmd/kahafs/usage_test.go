package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUsageLine: a wrong number of arguments, an unknown flag or a flag
// value that does not parse says what went wrong and how to call the
// command.
func TestUsageLine(t *testing.T) {
	store := brokertest.Named(t, "tx").StoreDir
	var all strings.Builder
	for _, args := range [][]string{
		{"dump"},
		{"stats", store, store},
		{"holders"},
		{"compact"},
		{"mount", store},
		{"dump", "--file", "x", store},
		{"stats", "--bogus", store},
		{"holders", "--max-file-length", "16q", store},
		{"compact", "--max-file-length", "4g", store},
	} {
		out, stderr, code := runCLI(t, args...)
		assert.Equal(t, exitError, code, args)
		assert.Empty(t, out, args)
		all.WriteString("$ kahafs " + strings.Join(args, " ") + "\n" + stderr + "\n")
	}
	golden(t, "usage", all.String(), store, "STORE")
}

// TestDumpFileByName: --file takes a data file's name (as ls shows it,
// also as a path) as well as its id, and a file the store does not have
// is named together with those it has.
func TestDumpFileByName(t *testing.T) {
	store := brokertest.Named(t, "tx").StoreDir
	byID, stderr, code := runCLI(t, "dump", "--file", "4", store)
	require.Equal(t, exitOK, code, stderr)
	require.NotEmpty(t, byID)
	for _, name := range []string{"db-4.log", filepath.Join(store, "db-4.log")} {
		out, stderr, code := runCLI(t, "dump", "--file", name, store)
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, byID, out, name)
	}
	_, stderr, code = runCLI(t, "dump", "--file", "db-37.log", store)
	assert.Equal(t, exitError, code)
	golden(t, "dump-missing-file", stderr, store, "STORE")
}

// TestCacheWarningsOneFormat: a cache that cannot be written is reported
// in one format by holders and by mount: "warning: cache: …", no time
// stamp.
func TestCacheWarningsOneFormat(t *testing.T) {
	fx := brokertest.Named(t, "tx")
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o644))
	cdir := filepath.Join(notDir, "cache")
	warning := regexp.MustCompile(`^warning: cache: not saved: mkdir .*: not a directory$`)

	_, stderr, code := runCLI(t, "holders", "--cache-dir", cdir, fx.StoreDir)
	require.Equal(t, exitOK, code, stderr)
	assert.True(t, hasLine(stderr, warning), "holders: %s", stderr)
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "cache: ") && !strings.HasPrefix(l, "cache: miss") {
			assert.True(t, strings.HasPrefix(l, "warning: cache: "), "holders: %q", l)
		}
	}

	requireFUSE(t)
	p := startMountProc(t, buildKahafs(t), fx.StoreDir, "--cache-dir", cdir)
	got := p.output()
	assert.True(t, hasLine(got, warning), "mount: %s", got)
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "cache: ") && !strings.HasPrefix(l, "ready") {
			assert.True(t, strings.HasPrefix(l, "warning: cache: "), "mount: %q", l)
		}
	}
}

func hasLine(s string, re *regexp.Regexp) bool {
	for _, l := range strings.Split(s, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

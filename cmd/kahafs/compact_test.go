package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// compactLine is the report line that starts with prefix.
func compactLine(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no %q line in:\n%s", prefix, out)
	return ""
}

// TestCompactDryRunCLI: the dry run's "Journals after" is the line the
// compaction prints afterwards, and a dry run works on a store it cannot
// write to.
func TestCompactDryRunCLI(t *testing.T) {
	dir := brokertest.CopyStore(t, brokertest.Named(t, "topics").StoreDir)
	ro := filepath.Join(t.TempDir(), "ro")
	require.NoError(t, os.Mkdir(ro, 0o755))
	readOnly := unix.Mount(dir, ro, "", unix.MS_BIND, "") == nil
	if readOnly {
		t.Cleanup(func() { _ = unix.Unmount(ro, unix.MNT_DETACH) })
		readOnly = unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, "") == nil
	}
	if !readOnly {
		t.Log("no read-only bind mount here (needs privileges): the dry run reads the writable store")
		ro = dir
	} else {
		require.ErrorIs(t, os.WriteFile(filepath.Join(ro, "probe"), nil, 0o644), syscall.EROFS)
	}
	dry, stderr, code := runCLI(t, "compact", "--dry-run", "--no-cache", "--max-file-length", "4k", ro)
	require.Equal(t, exitOK, code, stderr)
	assert.True(t, strings.HasPrefix(dry, "COMPACTION (dry run: nothing written) of "+ro+"\n"), dry)
	assert.Regexp(t, regexp.MustCompile(`(?m)^- layout took \d+\.\d{3} s\.$`), dry)
	if readOnly {
		_, stderr, code = runCLI(t, "compact", "--no-cache", "--max-file-length", "4k", ro)
		assert.Equal(t, exitError, code)
		assert.Contains(t, stderr, "read-only file system")
		assert.Contains(t, stderr, "--dry-run needs only read access")
	}

	real, stderr, code := runCLI(t, "compact", "--no-cache", "--max-file-length", "4k", dir)
	require.Equal(t, exitOK, code, stderr)
	after := compactLine(t, real, "- Journals after: ")
	assert.Equal(t, after, compactLine(t, dry, "- Journals after: "))
	assert.Equal(t, compactLine(t, real, "- Messages moved: "), compactLine(t, dry, "- Messages moved: "))
	assert.NotContains(t, dry+real, "estimate")
	assert.Regexp(t, `(?m)^- Space: the new store needs .* free on the file system of `+regexp.QuoteMeta(filepath.Dir(ro))+`: fits\.$`, dry)
	line := compactLine(t, real, "- To get the space back: ")
	assert.Regexp(t, `delete the original kept at (\S+) \(rm -r (\S+)\)\. That frees \d`, line)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(real[strings.Index(real, line):]), "s."), "then only the total")

	// --to writes elsewhere and leaves the store as it is
	dir2 := brokertest.CopyStore(t, brokertest.Named(t, "topics").StoreDir)
	to := filepath.Join(t.TempDir(), "new")
	out, stderr, code := runCLI(t, "compact", "--no-cache", "--to", to, dir2)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "- Compacted store written to: "+to+" (the original is as it was).")
	assert.Contains(t, compactLine(t, out, "- To get the space back: "), "with the broker stopped")
	_, err := os.Stat(filepath.Join(dir2, "db.data"))
	assert.NoError(t, err, "the original keeps its index")
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onDisk matches the figures of the totals that depend on the file system
// the fixtures are on (its block size).
var onDisk = regexp.MustCompile(`\d+ bytes \([^)]*\) on disk|frees \d+ bytes \([^)]*\)`)

// maxLengthRuns are the runs of holders-max-file-length.golden: without
// --max-file-length, with one the store contradicts, with one it agrees
// with. TestHoldersGivenLengthMatchesBroker checks every file's verdict of
// each against a real broker run with that length.
var maxLengthRuns = []struct {
	fixture string
	args    []string
	length  int // the journalMaxFileLength the run uses
}{
	{"queues", nil, 16384}, // preallocated: exact
	{"tx", nil, 16384},     // grown: a lower bound (16263); the fixture's broker used 16384
	{"queues", []string{"--max-file-length", "32mb"}, 32 << 20},  // contradicted
	{"tx", []string{"--max-file-length", "8k"}, 8 << 10},         // contradicted
	{"tx", []string{"--max-file-length", "16384"}, 16384},        // agrees
	{"topics", []string{"--max-file-length", "16KiB"}, 16 << 10}, // agrees
}

// TestHoldersMaxFileLength: without --max-file-length the length is read
// off the store and the output's first line says which and why; a flag
// the store contradicts is warned about. holders-max-file-length.golden is
// kahafs's own output: it holds the wording and the layout of these runs;
// that their verdicts (which file is free) are the broker's is
// TestHoldersGivenLengthMatchesBroker's to check.
func TestHoldersMaxFileLength(t *testing.T) {
	var all strings.Builder
	for _, c := range maxLengthRuns {
		fx := brokertest.Named(t, c.fixture)
		args := append(append([]string{"holders", "--no-cache"}, c.args...), fx.StoreDir)
		out, stderr, code := runCLI(t, args...)
		require.Equal(t, exitOK, code, stderr)
		all.WriteString("$ kahafs " + strings.Join(args, " ") + "\n" + stderr + onDisk.ReplaceAllString(out, "DISK"))
	}
	golden(t, "holders-max-file-length", all.String(), filepath.Dir(brokertest.Named(t, "tx").Dir), "FIXTURES")

	out, stderr, code := runCLI(t, "holders", "--json", "--max-file-length", "32mb", brokertest.Named(t, "queues").StoreDir)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		MaxFileLength replaycache.MaxFileLength `json:"maxFileLength"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, int64(32<<20), doc.MaxFileLength.Value)
	assert.Equal(t, "flag", doc.MaxFileLength.Source)
	assert.False(t, doc.MaxFileLength.Exact)
	assert.Contains(t, doc.MaxFileLength.Warning, "preallocated to 16384 bytes")
	assert.Contains(t, stderr, "warning: journalMaxFileLength: --max-file-length 33554432 disagrees with the store")
}

// TestHoldersGivenLengthMatchesBroker: each run of
// holders-max-file-length.golden predicts the cleanup a real broker makes
// on the store with that journalMaxFileLength (brokerkit Inspect on a
// copy, or the fixture's recorded one for the length its broker used),
// also where the length contradicts the store's.
func TestHoldersGivenLengthMatchesBroker(t *testing.T) {
	brokertest.Require(t)
	for _, c := range maxLengthRuns {
		t.Run(c.fixture+"-"+strconv.Itoa(c.length), func(t *testing.T) {
			fx := brokertest.Named(t, c.fixture)
			args := append(append([]string{"holders", "--no-cache", "--json"}, c.args...), fx.StoreDir)
			out, stderr, code := runCLI(t, args...)
			require.Equal(t, exitOK, code, stderr)
			var doc holdersOut
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			// the fixture's length: the broker's cleanup is recorded in
			// expected.json; any other: run the broker with it
			want := fx.Expected.Inspect.Deleted
			if c.length != fx.Expected.MaxFileLength {
				want = brokertest.Inspect(t, brokertest.CopyStore(t, fx.StoreDir), c.length).Deleted
			}
			if want == nil {
				want = []int32{}
			}
			assert.Equal(t, want, doc.GCCandidates, "files the broker deletes with journalMaxFileLength %d", c.length)
		})
	}
}

// TestHoldersInferredMatchesBroker: on every real-broker fixture, the
// length read off the store predicts the cleanup the broker made.
func TestHoldersInferredMatchesBroker(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			out, stderr, code := runCLI(t, "holders", "--json", fx.StoreDir)
			require.Equal(t, exitOK, code, stderr)
			var doc holdersOut
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			want := fx.Expected.Inspect.Deleted
			if want == nil {
				want = []int32{}
			}
			assert.Equal(t, want, doc.GCCandidates)
		})
	}
}

// TestCompactMaxFileLength: compact reads the length off the store the
// same way and says so; its new files are no longer than that.
func TestCompactMaxFileLength(t *testing.T) {
	dir := brokertest.CopyStore(t, brokertest.Named(t, "queues").StoreDir)
	out, stderr, code := runCLI(t, "compact", "--no-cache", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "- journalMaxFileLength: 16384, read off the store: db-2.log … db-10.log (9 files) are preallocated to 16384 bytes.\n")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "db-") && strings.HasSuffix(e.Name(), ".log") {
			info, err := e.Info()
			require.NoError(t, err)
			assert.Equal(t, int64(16384), info.Size(), "%s preallocated as the broker's", e.Name())
			n++
		}
	}
	assert.Greater(t, n, 1, "the live data takes more than one 16 KiB file")
	// the next run reads the length off the compacted store exactly
	out, stderr, code = runCLI(t, "holders", "--no-cache", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.True(t, strings.HasPrefix(out, "journalMaxFileLength 16384: read off the store: "), out)
	assert.Contains(t, strings.SplitN(out, "\n", 2)[0], "are preallocated to 16384 bytes")

	dir = brokertest.CopyStore(t, brokertest.Named(t, "queues").StoreDir)
	_, stderr, code = runCLI(t, "compact", "--dry-run", "--no-cache", "--max-file-length", "1m", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "warning: journalMaxFileLength: --max-file-length 1048576 disagrees with the store")
}

// TestMountMaxFileLength: the mount reads the length off the store the
// same way: summary.json says which, and a contradicted flag is warned
// about before the ready line.
func TestMountMaxFileLength(t *testing.T) {
	requireFUSE(t)
	bin := buildKahafs(t)
	fx := brokertest.Named(t, "queues")
	p := startMountProc(t, bin, fx.StoreDir, "--no-cache")
	var sum struct {
		MaxFileLength replaycache.MaxFileLength `json:"maxFileLength"`
	}
	b, err := os.ReadFile(filepath.Join(p.mnt, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Equal(t, replaycache.MaxFileLength{Value: 16384, Source: "preallocated", Exact: true,
		Text: "read off the store: db-2.log … db-10.log (9 files) are preallocated to 16384 bytes"}, sum.MaxFileLength)
	assert.NotContains(t, p.output(), "warning")

	p = startMountProc(t, bin, fx.StoreDir, "--no-cache", "--max-file-length", "32mb")
	assert.Contains(t, p.output(), "warning: journalMaxFileLength: --max-file-length 33554432 disagrees with the store")
	b, err = os.ReadFile(filepath.Join(p.mnt, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum))
	assert.Equal(t, int64(33554432), sum.MaxFileLength.Value)
	assert.Equal(t, "flag", sum.MaxFileLength.Source)
}

// TestMaxFileLengthRange: a length no broker is configured with is refused
// before anything is read, naming the accepted range.
func TestMaxFileLengthRange(t *testing.T) {
	dir := brokertest.Named(t, "queues").StoreDir
	for _, v := range []string{"100", "4095", "2g", "0", "-5"} {
		_, stderr, code := runCLI(t, "compact", "--dry-run", "--no-cache", "--max-file-length", v, dir)
		assert.Equal(t, exitError, code, v)
		if v != "0" && v != "-5" {
			assert.Contains(t, stderr, "give a journalMaxFileLength from 4096 (4 KiB) to 2147483647 (2 GiB - 1) bytes", v)
		}
		assert.NotContains(t, stderr, "COMPACTION", v)
	}
	_, stderr, code := runCLI(t, "holders", "--no-cache", "--max-file-length", "4k", dir)
	assert.Equal(t, exitOK, code, stderr)
}

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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileClaims finds what a text says of a data file's existence or size.
var fileClaims = regexp.MustCompile(`(db-\d+\.log),? which (still exists|is kept|are kept|is no longer in the store)|(db-\d+\.log) at offsets \d+\.\.\d+ \([^)]*\), but the file (is empty|is missing|holds no complete record in its (\d+) bytes|holds data up to offset \d+ only)`)

// checkClaims asserts that what text says of the files of the store in dir
// is so: a file named as existing (or kept) exists, one named as gone is
// not there, "empty" is zero bytes, a size is the file's size. It returns
// how many claims it checked.
func checkClaims(t *testing.T, dir, text string) int {
	t.Helper()
	n := 0
	for _, m := range fileClaims.FindAllStringSubmatch(text, -1) {
		n++
		name, claim := m[1], m[2]
		if name == "" {
			name, claim = m[3], m[4]
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		switch {
		case claim == "still exists", claim == "is kept", claim == "are kept":
			assert.NoError(t, err, "%q: %s is said to exist", m[0], name)
		case claim == "is no longer in the store", claim == "is missing":
			assert.ErrorIs(t, err, os.ErrNotExist, "%q: %s is said to be gone", m[0], name)
		case claim == "is empty":
			require.NoError(t, err, m[0])
			assert.Zero(t, fi.Size(), "%q: empty means zero bytes", m[0])
		case m[5] != "":
			require.NoError(t, err, m[0])
			assert.Equal(t, m[5], strconv.FormatInt(fi.Size(), 10), m[0])
			assert.NotZero(t, fi.Size(), m[0])
		default:
			require.NoError(t, err, m[0])
		}
	}
	return n
}

// holdersTexts runs holders --json on dir and returns every reason, note
// and warning it gives (the JSON's and stderr's), and stderr.
func holdersTexts(t *testing.T, dir string, args ...string) (string, string) {
	t.Helper()
	out, stderr, code := runCLI(t, append(append([]string{"holders", "--no-cache", "--json"}, args...), dir)...)
	require.Contains(t, []int{exitOK, exitDamaged}, code, stderr)
	var doc struct {
		Files []struct {
			Reasons, Notes []struct{ Text string }
		}
		Warnings []string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	var b strings.Builder
	for _, f := range doc.Files {
		for _, r := range append(f.Reasons, f.Notes...) {
			b.WriteString(r.Text + "\n")
		}
	}
	for _, w := range doc.Warnings {
		b.WriteString(w + "\n")
	}
	return b.String() + stderr, stderr
}

// TestMessagesTrue: what holders says of the files of every fixture is so
// (a file named as existing exists, one named as gone is not there).
func TestMessagesTrue(t *testing.T) {
	n := 0
	for _, fx := range brokertest.Fixtures(t) {
		text, _ := holdersTexts(t, fx.StoreDir)
		n += checkClaims(t, fx.StoreDir, text)
	}
	assert.Greater(t, n, 10, "claims checked")

	// ackfwd-gone: the ack-compaction file's source db-4.log is gone
	fx := brokertest.Named(t, "ackfwd-gone")
	_, err := os.Stat(filepath.Join(fx.StoreDir, "db-4.log"))
	require.ErrorIs(t, err, os.ErrNotExist)
	text, _ := holdersTexts(t, fx.StoreDir)
	assert.Contains(t, text, "an ack-compaction file for db-4.log, which is no longer in the store")
	assert.NotContains(t, text, "db-4.log, which still exists")
}

// TestDamageSaidOnceAndTrue: a data file cut short (to a few bytes inside
// its first batch, to nothing, or removed) with index entries in it is
// said once as damage with its file and offsets, once as lost messages,
// and what is said of the file is so.
func TestDamageSaidOnceAndTrue(t *testing.T) {
	fx := brokertest.Named(t, "queues")
	for _, c := range []struct {
		name string
		cut  func(p string) error
		want string
	}{
		{"short", func(p string) error { return os.Truncate(p, 100) }, "but the file holds no complete record in its 100 bytes"},
		{"empty", func(p string) error { return os.Truncate(p, 0) }, "but the file is empty"},
		{"missing", os.Remove, "but the file is missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := brokertest.CopyStore(t, fx.StoreDir)
			require.NoError(t, c.cut(filepath.Join(dir, "db-3.log")))
			text, stderr := holdersTexts(t, dir)
			assert.Contains(t, text, c.want)
			assert.Equal(t, 1, checkClaims(t, dir, stderr), "one lost-messages line: %s", stderr)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			seen := map[string]bool{}
			for _, l := range lines {
				assert.False(t, seen[l], "said twice: %s", l)
				seen[l] = true
				assert.NotRegexp(t, `^warning: index: .* at 3:`, l, "each lost message is in the one lost-messages line")
				assert.NotContains(t, l, "offset 0:", "no offset where there is none: %s", l)
				// the cause is said once a line
				assert.LessOrEqual(t, strings.Count(l, "record extends past end of file"), 1, l)
			}
			damage := 0
			for _, l := range lines {
				if strings.HasPrefix(l, "damage: ") {
					damage++
					assert.Regexp(t, `^damage: \S+/db-3\.log: offset \d+\.\.\d+: `, l, "file and offsets")
				}
			}
			if c.name == "short" {
				assert.Equal(t, 1, damage, stderr)
			}
		})
	}
}

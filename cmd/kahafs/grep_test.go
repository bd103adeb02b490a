package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGrepCLI: kahafs grep's modes print the same files: -l the files -c
// counts lines in (every file below PATH, 0 included), --json those with
// their counts; its exit status is grep's (0 a match, 1 none) and a
// pattern it cannot honour is refused before the store is read.
func TestGrepCLI(t *testing.T) {
	store := brokertest.Named(t, "messages").StoreDir
	const dir = "by-destination/queue/Q.MSG/pending"

	list, stderr, code := runCLI(t, "grep", "queue store", store, dir)
	require.Equal(t, exitOK, code, stderr)
	counts, stderr, code := runCLI(t, "grep", "-c", "queue store", store, dir)
	require.Equal(t, exitOK, code, stderr)
	names, _, code := runCLI(t, "ls", store, dir)
	require.Equal(t, exitOK, code)

	var fromCounts []string
	countLines := strings.Split(strings.TrimSuffix(counts, "\n"), "\n")
	require.Len(t, countLines, strings.Count(names, "\n"), "-c: a line for every file")
	total := map[string]int{}
	for _, l := range countLines {
		i := strings.LastIndexByte(l, ':')
		require.Positive(t, i, l)
		n, err := strconv.Atoi(l[i+1:])
		require.NoError(t, err, l)
		if n > 0 {
			fromCounts = append(fromCounts, l[:i])
			total[l[:i]] = n
		}
	}
	require.NotEmpty(t, fromCounts)
	assert.Equal(t, strings.Join(fromCounts, "\n")+"\n", list)
	assert.Less(t, len(fromCounts), len(countLines), "some files do not match")

	out, stderr, code := runCLI(t, "grep", "--json", "queue store", store, dir)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Files   int `json:"files"`
		Matches []struct {
			Path  string `json:"path"`
			Count int    `json:"count"`
		} `json:"matches"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, len(countLines), doc.Files)
	require.Len(t, doc.Matches, len(fromCounts))
	for i, m := range doc.Matches {
		assert.Equal(t, fromCounts[i], m.Path)
		assert.Equal(t, total[m.Path], m.Count, m.Path)
	}

	out, _, code = runCLI(t, "grep", "-F", "no such text anywhere", store)
	assert.Equal(t, exitError, code, "nothing matched: exit 1 as grep")
	assert.Empty(t, out)

	for _, args := range [][]string{
		{"grep", `\(a\)\1`, store},
		{"grep", "-F", "-E", "a", store},
		{"grep", "-l", "-c", "a", store},
		{"grep", "a", store, "no-such-dir"},
		{"grep", "--no-such-flag", "a", store},
		{"grep", "a"},
		{"grep", "a", "no-such-store"},
	} {
		out, stderr, code := runCLI(t, args...)
		assert.Equal(t, exitDamaged, code, "%q: trouble is grep's status 2, not 1 (no match)", args)
		assert.Empty(t, out, "%q", args)
		assert.NotEmpty(t, stderr, "%q", args)
	}
}

package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with what the tests got")

// golden compares got with testdata/NAME.golden (rewritten with -update).
// Pairs in replace (old, new, ...) are replaced in got first: paths of
// temporary directories, timings.
func golden(t *testing.T, name, got string, replace ...string) {
	t.Helper()
	if len(replace) > 0 {
		got = strings.NewReplacer(replace...).Replace(got)
	}
	p := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "no golden file: run go test ./cmd/kahafs -run %s -update", t.Name())
	assert.Equal(t, string(want), got, "differs from %s (go test -update rewrites it)", p)
}

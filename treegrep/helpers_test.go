package treegrep

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pattern is a pattern as Grep and as grep(1) take it.
type pattern struct {
	syn        Syntax
	expr       string
	ignoreCase bool
}

func (p pattern) String() string {
	return strings.Join(append(p.grepFlags(), p.expr), " ")
}

// grepFlags are grep(1)'s flags for the pattern's syntax.
func (p pattern) grepFlags() []string {
	var fl []string
	switch p.syn {
	case Fixed:
		fl = append(fl, "-F")
	case Extended:
		fl = append(fl, "-E")
	}
	if p.ignoreCase {
		fl = append(fl, "-i")
	}
	return fl
}

func (p pattern) compile(t testing.TB) *Matcher {
	t.Helper()
	m, err := Compile(p.expr, p.syn, p.ignoreCase)
	require.NoError(t, err, "%s", p)
	return m
}

// systemGrep runs grep(1) with args (in a UTF-8 locale) and returns its
// output lines with prefix cut off each; no match is no lines.
func systemGrep(t testing.TB, prefix string, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("grep"); err != nil {
		t.Skip("no grep(1) to compare with")
	}
	cmd := exec.Command("grep", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 1 {
		err = nil
	}
	require.NoError(t, err, "grep %q: %s", args, stderr.String())
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if l != "" {
			lines = append(lines, strings.TrimPrefix(l, prefix))
		}
	}
	return lines
}

// countLine is grep -c's line for path.
func countLine(path string, n int) string { return path + ":" + strconv.Itoa(n) }

// writeFiles writes each content to a file of its own under a new
// directory, returning their paths.
func writeFiles(t testing.TB, contents []string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, c := range contents {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		require.NoError(t, os.WriteFile(p, []byte(c), 0o644))
		paths = append(paths, p)
	}
	return paths
}

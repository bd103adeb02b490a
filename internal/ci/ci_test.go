package ci

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// notFuzzedInCI are the repository's fuzz targets .ci/run does not fuzz,
// each with the reason. Empty: every target is fuzzed.
var notFuzzedInCI = map[string]string{}

var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w*)\(\w+ \*testing\.F\)`)

// repoFuzzTargets is every fuzz function of the repository's test files, as
// "package-dir:FuzzName".
func repoFuzzTargets(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// what go test ./... leaves out: testdata, ., _ directories
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(b, -1) {
			out = append(out, filepath.ToSlash(rel)+":"+string(m[1]))
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(out)
	return out
}

// ciFuzzTargets is .ci/run's fuzz_targets=( ... ) list.
func ciFuzzTargets(t *testing.T, script string) []string {
	m := regexp.MustCompile(`(?ms)^fuzz_targets=\((.*?)^\)`).FindStringSubmatch(script)
	require.NotNil(t, m, ".ci/run has no fuzz_targets=( ... ) list")
	var out []string
	for _, line := range strings.Split(m[1], "\n") {
		line, _, _ = strings.Cut(line, "#")
		out = append(out, strings.Fields(line)...)
	}
	sort.Strings(out)
	return out
}

// TestFuzzTargetsListed: .ci/run fuzzes every fuzz target of the
// repository (but those notFuzzedInCI names, with their reason), and
// names no target that does not exist (which would fuzz nothing and pass).
func TestFuzzTargetsListed(t *testing.T) {
	root := brokertest.RepoRoot()
	script, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	require.NoError(t, err)
	listed := ciFuzzTargets(t, string(script))
	repo := repoFuzzTargets(t, root)
	require.NotEmpty(t, repo)
	var want []string
	for _, target := range repo {
		if why, ok := notFuzzedInCI[target]; ok {
			assert.NotEmpty(t, why, "%s: an exclusion needs its reason", target)
			continue
		}
		want = append(want, target)
	}
	for target := range notFuzzedInCI {
		assert.Contains(t, repo, target, "an exclusion of a target that does not exist")
	}
	assert.Equal(t, want, listed, ".ci/run's fuzz_targets must be the repository's Fuzz functions")
}

// TestCIRunStrict: .ci/run runs the tests with CI=true exported (so that
// a missing dependency fails: internal/need), and fails without /dev/fuse
// and on a fuzz target that fuzzes nothing instead of going on.
func TestCIRunStrict(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(brokertest.RepoRoot(), ".ci", "run"))
	require.NoError(t, err)
	script := string(b)
	ci := strings.Index(script, "\nexport CI=true\n")
	tests := strings.Index(script, "\ngo test -race -count=1 -timeout 30m ./...\n")
	require.Positive(t, ci, "CI=true exported")
	require.Positive(t, tests, "the README's test command")
	assert.Less(t, ci, tests, "CI=true is exported before the tests run")
	assert.Regexp(t, `(?m)^if \[ ! -e /dev/fuse \]; then\n(.*\n)*?\s+exit 1`, script, "no /dev/fuse: exit 1")
	assert.Contains(t, script, "no fuzz tests to fuzz", "a fuzz target that is not there fails")
}

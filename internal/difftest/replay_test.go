package difftest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplay re-runs the comparison of the seed kept in
// $KAHAFS_DIFF_REPLAY (a directory TestDifferential printed as KEPT) with
// its kept broker answers, without the broker.
func TestReplay(t *testing.T) {
	dir := os.Getenv("KAHAFS_DIFF_REPLAY")
	if dir == "" {
		t.Skip("KAHAFS_DIFF_REPLAY is not set")
	}
	if IsKeptLayout(dir) {
		t.Skip("a kept layout seed: TestLayoutReplay replays it")
	}
	known, err := LoadKnown("known.json")
	require.NoError(t, err)
	r := Replay(context.Background(), dir, t.TempDir(), nil)
	judge(t, Config{ReplayDir: dir}, r, known[r.Seed])
}

// Fixture is testdata/kept/NAME/fixture.json: a kept seed whose
// store once disagreed with the broker.
type Fixture struct {
	// Found: when and how the disagreement was found.
	Found string `json:"found"`
	// Finding: what it was.
	Finding string `json:"finding"`
	// Why: what accounts for it (the fix, or the broker's evidence).
	Why string `json:"why"`
	// Expect: the findings a replay must give now (none: kahafs agrees).
	Expect []ExpectedFinding `json:"expect"`
}

// ExpectedFinding is a finding a fixture's replay must give.
type ExpectedFinding struct {
	Kind      Kind   `json:"kind"`
	View      string `json:"view"`
	Where     string `json:"where"`
	Kahafs    string `json:"kahafs"`
	Broker    string `json:"broker"`
	Explained bool   `json:"explained"`
}

func expected(fs []Finding) []ExpectedFinding {
	out := []ExpectedFinding{}
	for _, f := range fs {
		out = append(out, ExpectedFinding{f.Kind, f.View, f.Where, f.Kahafs, f.Broker, f.Explained != ""})
	}
	return out
}

// agreeingFixture is the first of dirs whose fixture expects no finding,
// explained or not (the tests that break or fake a seed start from one
// that agrees: Result.Agrees).
func agreeingFixture(t *testing.T, dirs []string) string {
	t.Helper()
	for _, d := range dirs {
		var fx Fixture
		require.NoError(t, readJSON(filepath.Join(d, "fixture.json"), &fx))
		if len(fx.Expect) == 0 {
			return d
		}
	}
	t.Fatal("no kept seed that agrees")
	return ""
}

// fixtureDirs are the kept seeds under testdata/kept.
func fixtureDirs(t *testing.T) []string {
	dirs, err := filepath.Glob(filepath.Join("testdata", "kept", "*", keptWorkload))
	require.NoError(t, err)
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Dir(d))
	}
	return out
}

// TestReplayFixtures replays every store that ever disagreed with the
// broker (testdata/kept) with the broker's kept answers: kahafs
// must give exactly the findings the fixture expects (none, once fixed).
func TestReplayFixtures(t *testing.T) {
	dirs := fixtureDirs(t)
	require.NotEmpty(t, dirs, "testdata/kept holds the stores that disagreed")
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var fx Fixture
			require.NoError(t, readJSON(filepath.Join(dir, "fixture.json"), &fx))
			require.NotEmpty(t, fx.Found, "fixture.json: found")
			require.NotEmpty(t, fx.Finding, "fixture.json: finding")
			require.NotEmpty(t, fx.Why, "fixture.json: why")
			for _, f := range []string{"workload/workload.json", "workload/store", "oracle/view-index.json", "oracle/view-noindex.json",
				"oracle/inspect-index.json", "oracle/inspect-noindex.json"} {
				assert.FileExists(t, filepath.Join(dir, f)+map[bool]string{true: "/db.data", false: ""}[strings.HasSuffix(f, "store")])
			}
			before := treeDigest(t, dir)
			r := Replay(context.Background(), dir, t.TempDir(), nil)
			require.NoError(t, r.Err)
			if fx.Expect == nil {
				fx.Expect = []ExpectedFinding{}
			}
			assert.Equal(t, fx.Expect, expected(r.Findings), "replay of %s:\n%s", dir, Report(r, ""))
			for _, n := range r.Notes {
				assert.NotContains(t, n, "REPLAY:", "the whole comparison is replayed")
			}
			assert.Equal(t, before, treeDigest(t, dir), "a replay does not write to the kept seed")

			// with the broker answers as found (oracle/*.found.json, where a
			// fixed oracle answered again), the replay finds what was found
			found, err := filepath.Glob(filepath.Join(dir, keptOracle, "*.found.json"))
			require.NoError(t, err)
			if len(found) == 0 {
				return
			}
			asFound := filepath.Join(t.TempDir(), "as-found")
			require.NoError(t, copyKept(asFound, dir))
			for _, f := range found {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				name := strings.TrimSuffix(filepath.Base(f), ".found.json") + ".json"
				require.NoError(t, os.WriteFile(filepath.Join(asFound, keptOracle, name), b, 0o644))
			}
			var orig []struct {
				Findings []struct {
					Kind      Kind   `json:"kind"`
					View      string `json:"view"`
					Where     string `json:"where"`
					Kahafs    string `json:"kahafs"`
					Broker    string `json:"broker"`
					Explained string `json:"explained"`
				} `json:"findings"`
			}
			require.NoError(t, readJSON(filepath.Join(dir, keptFindings), &orig))
			require.Len(t, orig, 1)
			want := []ExpectedFinding{}
			for _, f := range orig[0].Findings {
				want = append(want, ExpectedFinding{f.Kind, f.View, f.Where, f.Kahafs, f.Broker, f.Explained != ""})
			}
			require.NotEmpty(t, want, "findings.json has what was found")
			again := Replay(context.Background(), asFound, t.TempDir(), nil)
			require.NoError(t, again.Err)
			assert.Equal(t, want, expected(again.Findings), "the answers as found give the findings as found")
		})
	}
}

// treeDigest lists a directory's files with their sizes and modification
// times.
func treeDigest(t *testing.T, dir string) string {
	var b strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %v\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	}))
	return b.String()
}

// recorder is a reporter that records instead of failing.
type recorder struct {
	logs, errs []string
}

func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestKeepAndReplay breaks the comparison on purpose (a Fault that makes
// kahafs's cleanup delete one file more than it does) on a committed kept
// seed: the seed fails, it is kept (store, compacted store, workload log,
// both broker views, Inspect's answers, kahafs's answers, the report) under
// KAHAFS_DIFF_KEEP, the output names the directory, and a replay of that
// directory gives the same finding again (and none without the fault).
func TestKeepAndReplay(t *testing.T) {
	dirs := fixtureDirs(t)
	require.NotEmpty(t, dirs)
	src := agreeingFixture(t, dirs)
	root := t.TempDir()
	t.Setenv("KAHAFS_DIFF_KEEP", root)
	t.Setenv("KAHAFS_DIFF_KEEP_ALL", "")

	clean := Replay(context.Background(), src, t.TempDir(), nil)
	require.NoError(t, clean.Err)
	var fx Fixture
	require.NoError(t, readJSON(filepath.Join(src, "fixture.json"), &fx))
	require.Len(t, clean.Findings, len(fx.Expect), "the fixture replays as it expects")

	var extra int32
	fault := &Fault{Cleanup: func(view string, deletes []int32) []int32 {
		if view != ViewIndex {
			return deletes
		}
		// the store's newest file: no broker's cleanup deletes it
		files, err := filepath.Glob(filepath.Join(src, "workload", "store", "db-*.log"))
		if err != nil || len(files) == 0 {
			return deletes
		}
		for _, f := range files {
			var n int32
			if _, err := fmt.Sscanf(filepath.Base(f), "db-%d.log", &n); err == nil && n > extra {
				extra = n
			}
		}
		return append(append([]int32{}, deletes...), extra)
	}}
	broken := Replay(context.Background(), src, t.TempDir(), fault)
	require.NoError(t, broken.Err)
	require.Len(t, broken.Findings, len(fx.Expect)+1, Report(broken, ""))
	var injected Finding
	for _, f := range broken.Findings {
		if f.Kind == KindCleanup && f.View == ViewIndex {
			injected = f
		}
	}
	require.Equal(t, KindCleanup, injected.Kind, Report(broken, ""))
	assert.Empty(t, injected.Explained)
	assert.Contains(t, strings.Join(injected.Detail, "\n"), fmt.Sprintf("db-%d.log: kahafs deletes it, the broker kept it", extra))

	rec := &recorder{}
	kept := judge(rec, Config{ReplayDir: src}, broken, "")
	require.NotEmpty(t, kept, "a failing seed is kept")
	require.Len(t, rec.errs, 1, "and fails")
	assert.Contains(t, rec.errs[0], "kahafs disagrees with the broker (1 unexplained findings")
	assert.Contains(t, strings.Join(rec.logs, "\n"), "KEPT in "+kept, "the output names where")
	assert.Equal(t, root, filepath.Dir(kept))
	assert.True(t, strings.HasPrefix(filepath.Base(kept), fmt.Sprintf("seed-%d-", broken.Seed)), kept)
	for _, f := range []string{"workload/workload.json", "workload/store/db.data", "workload/logs", "oracle/view-index.json",
		"oracle/view-noindex.json", "oracle/inspect-index.json", "oracle/inspect-noindex.json", "compacted/store",
		"kahafs/with-index.json", "kahafs/without-index.json", "findings.json", "report.txt"} {
		assert.True(t, exists(filepath.Join(kept, f)), "kept %s", f)
	}
	a, err := ReadAnswer(kept, ViewIndex)
	require.NoError(t, err)
	assert.Contains(t, a.Cleanup, extra, "kahafs's (broken) answer is kept")
	var res []struct {
		Findings []struct {
			Kind   Kind   `json:"kind"`
			Kahafs string `json:"kahafs"`
		} `json:"findings"`
	}
	raw, err := os.ReadFile(filepath.Join(kept, keptFindings))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Len(t, res, 1)
	assert.Contains(t, fmt.Sprint(res[0].Findings), injected.Kahafs)

	again := Replay(context.Background(), kept, t.TempDir(), fault)
	require.NoError(t, again.Err)
	assert.Equal(t, expected(broken.Findings), expected(again.Findings), "the replay of the kept seed finds the same")
	assert.Equal(t, broken.Seed, again.Seed)
	fixed := Replay(context.Background(), kept, t.TempDir(), nil)
	require.NoError(t, fixed.Err)
	assert.Equal(t, expected(clean.Findings), expected(fixed.Findings), "without the fault the kept seed agrees as the original did")
}

// fakeBroker makes a repository whose brokerkit/run.sh answers BrokerView
// and Inspect with the kept seed src's answers after failing as often as
// fails says (by "BrokerView-index", "Inspect-noindex", ...), and a Config
// on it whose cache already holds src's workload and its view of the
// compacted store. calls counts the runs.
func fakeBroker(t *testing.T, src string, fails map[string]int) (Config, func(string) int) {
	repo := t.TempDir()
	state := t.TempDir()
	for k, n := range fails {
		require.NoError(t, os.WriteFile(filepath.Join(state, "fail-"+k), []byte(fmt.Sprint(n)), 0o644))
	}
	absSrc, err := filepath.Abs(src)
	require.NoError(t, err)
	script := `#!/bin/sh
cls=$1; store=$2; out=$3
if [ -f "$store/db.data" ]; then v=index; else v=noindex; fi
st=` + state + `
n=$(cat "$st/calls-$cls-$v" 2>/dev/null || echo 0)
echo $((n+1)) > "$st/calls-$cls-$v"
f=$(cat "$st/fail-$cls-$v" 2>/dev/null || echo 0)
if [ "$n" -lt "$f" ]; then echo "Exception in thread \"main\" java.lang.IllegalStateException: injected failure $((n+1)) of $cls $v"; echo "	at Fake.main(Fake.java:1)"; exit 1; fi
case $cls in
BrokerView) cp "` + absSrc + `/oracle/view-$v.json" "$out" ;;
Inspect) cp "` + absSrc + `/oracle/inspect-$v.json" "$out" ;;
*) exit 2 ;;
esac
`
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "brokerkit"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "brokerkit", "run.sh"), []byte(script), 0o755))
	c := Config{Repo: repo, Work: t.TempDir(), Ops: 40, Keys: Keys{Workload: "workload-x", Oracle: "oracle-x"}}
	seed, err := ReadSeed(src)
	require.NoError(t, err)
	require.NoError(t, copyKept(filepath.Join(c.SeedDir(seed), "workload"), filepath.Join(src, keptWorkload)))
	cached, err := filepath.Glob(filepath.Join(src, keptOracle, "compacted-*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, cached)
	require.NoError(t, os.MkdirAll(c.OracleDir(seed), 0o755))
	for _, f := range cached {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(c.OracleDir(seed), filepath.Base(f)), b, 0o644))
	}
	return c, func(k string) int {
		b, err := os.ReadFile(filepath.Join(state, "calls-"+k))
		if err != nil {
			return 0
		}
		var n int
		_, _ = fmt.Sscan(string(b), &n)
		return n
	}
}

// TestBrokerFailureFailsSeed: a broker tool that fails once is run again
// (noted); one that fails twice fails the seed, the view without the index
// too (it used to be a note, and the seed passed without that half).
func TestBrokerFailureFailsSeed(t *testing.T) {
	dirs := fixtureDirs(t)
	require.NotEmpty(t, dirs)
	src := agreeingFixture(t, dirs)
	seed, err := ReadSeed(src)
	require.NoError(t, err)

	all := map[string]int{"BrokerView-index": 1, "BrokerView-noindex": 1, "Inspect-index": 1, "Inspect-noindex": 1}
	c, calls := fakeBroker(t, src, all)
	r := RunSeed(context.Background(), c, seed)
	require.NoError(t, r.Err, Report(r, ""))
	assert.True(t, r.Agrees(), Report(r, ""))
	for k := range all {
		assert.Equal(t, 2, calls(k), k)
	}
	retried := 0
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "BROKER RETRY: ") {
			retried++
			assert.Contains(t, n, "injected failure 1 of")
		}
	}
	assert.Equal(t, 4, retried)

	for _, k := range []string{"BrokerView-noindex", "Inspect-noindex", "BrokerView-index", "Inspect-index"} {
		t.Run(k, func(t *testing.T) {
			c, calls := fakeBroker(t, src, map[string]int{k: 2})
			r := RunSeed(context.Background(), c, seed)
			require.Error(t, r.Err)
			assert.Contains(t, r.Err.Error(), "failed twice")
			assert.Contains(t, r.Err.Error(), "injected failure 2 of")
			assert.Equal(t, 2, calls(k))
			assert.False(t, r.Agrees())
			rec := &recorder{}
			t.Setenv("KAHAFS_DIFF_KEEP", t.TempDir())
			kept := judge(rec, c, r, "known, but a seed that could not be compared fails")
			assert.NotEmpty(t, kept)
			require.Len(t, rec.errs, 1)
			assert.Contains(t, rec.errs[0], "could not be compared")
		})
	}
}

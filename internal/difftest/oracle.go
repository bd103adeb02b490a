package difftest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/store"
)

// Time limits of the Java tools (each also bounds itself).
const (
	workloadTimeout = 10 * time.Minute
	viewTimeout     = 4 * time.Minute
	inspectTimeout  = 3 * time.Minute
)

// Config says where a differential run works.
type Config struct {
	// Repo is the repository root (brokerkit/ is there).
	Repo string
	// Cache keeps workloads and oracle outputs across runs ("" = none).
	Cache string
	// Work is scratch space, used for everything when Cache is "".
	Work string
	// Ops is the number of workload operations (brokerkit Workload --ops).
	Ops int
	// Keys identify brokerkit's sources (SourceKeys): cached outputs of
	// other sources are not used.
	Keys Keys
	// ReplayDir, when set, is a kept seed (Keep) whose store and broker
	// answers are used: no broker tool runs.
	ReplayDir string
	// Fault perturbs kahafs's answers (tests of the comparison itself).
	Fault *Fault
}

// broker is nil when the broker tools may run (not in a replay).
func (c Config) broker() error {
	if c.ReplayDir != "" {
		return errReplay
	}
	return nil
}

// scratch is where copies of the stores of the oracle directory dir go:
// in a replay, under Work (a kept seed is not written to).
func (c Config) scratch(dir string) string {
	if c.ReplayDir != "" {
		return scratchDir(filepath.Join(c.Work, "replay"))
	}
	return scratchDir(dir)
}

// Keys identify the brokerkit sources that made a cached output.
type Keys struct {
	// Workload hashes the sources the workload runs (all but the oracles).
	Workload string
	// Oracle hashes every source.
	Oracle string
}

// base is where the outputs go.
func (c Config) base() string {
	if c.Cache != "" {
		return c.Cache
	}
	return c.Work
}

// SeedDir is where a seed's workload (SeedDir/workload) is kept.
func (c Config) SeedDir(seed int64) string {
	if c.ReplayDir != "" {
		return c.ReplayDir
	}
	return filepath.Join(c.base(), c.Keys.Workload, fmt.Sprintf("seed-%d-ops%d", seed, c.Ops))
}

// OracleDir is where the oracle outputs for a seed's workload are kept.
func (c Config) OracleDir(seed int64) string {
	if c.ReplayDir != "" {
		return filepath.Join(c.ReplayDir, keptOracle)
	}
	return filepath.Join(c.SeedDir(seed), c.Keys.Oracle)
}

// oracleSources are the brokerkit classes that only the oracles run: a
// change to them does not make the workloads stale.
var oracleSources = map[string]bool{"BrokerView.java": true, "Inspect.java": true, "HoldStore.java": true, "RegenCheck.java": true}

// SourceKeys hashes the sources of brokerkit (src/*.java and the
// scripts): cached outputs are valid only for the sources that made them.
func SourceKeys(repo string) (Keys, error) {
	dir := filepath.Join(repo, "brokerkit")
	files, err := filepath.Glob(filepath.Join(dir, "src", "*.java"))
	if err != nil {
		return Keys{}, err
	}
	files = append(files, filepath.Join(dir, "build.sh"), filepath.Join(dir, "run.sh"))
	sort.Strings(files)
	w, o := sha256.New(), sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return Keys{}, err
		}
		for _, h := range []hash.Hash{w, o} {
			if h == w && oracleSources[filepath.Base(f)] {
				continue
			}
			fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
			h.Write(b)
		}
	}
	return Keys{Workload: "workload-" + hex.EncodeToString(w.Sum(nil))[:12], Oracle: "oracle-" + hex.EncodeToString(o.Sum(nil))[:12]}, nil
}

// runTool runs brokerkit/run.sh CLASS ARGS. At the deadline the whole
// process group (the JVM and any JVM it forked) is killed.
func runTool(ctx context.Context, repo string, timeout time.Duration, class string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "brokerkit", "run.sh"), append([]string{class}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return out.Bytes(), fmt.Errorf("brokerkit %s %s: killed after %v\n%s", class, strings.Join(args, " "), timeout, tail(out.Bytes()))
	}
	if err != nil {
		return out.Bytes(), fmt.Errorf("brokerkit %s %s: %w\n%s", class, strings.Join(args, " "), err, tail(out.Bytes()))
	}
	return out.Bytes(), nil
}

// tail is the end of a tool's output, for error messages.
func tail(b []byte) string {
	const n = 3000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// publish renames tmp to final (a cached output appears complete or not
// at all).
func publish(tmp, final string) error {
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}

// ensureWorkload runs brokerkit Workload for the seed unless its output
// is already in dir/workload.
func ensureWorkload(ctx context.Context, c Config, dir string, seed int64) (*Workload, bool, error) {
	final := filepath.Join(dir, "workload")
	var w Workload
	if err := readJSON(filepath.Join(final, "workload.json"), &w); err == nil && len(w.Errors) == 0 && exists(filepath.Join(final, "store")) {
		return &w, true, nil
	}
	if err := c.broker(); err != nil {
		return nil, false, fmt.Errorf("seed %d: workload: %w", seed, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	tmp := final + ".tmp"
	_ = os.RemoveAll(tmp)
	_, runErr := runTool(ctx, c.Repo, workloadTimeout, "Workload", tmp, "--seed", strconv.FormatInt(seed, 10), "--ops", strconv.Itoa(c.Ops))
	if err := readJSON(filepath.Join(tmp, "workload.json"), &w); err != nil {
		if runErr != nil {
			return nil, false, fmt.Errorf("seed %d: workload: %w", seed, runErr)
		}
		return nil, false, fmt.Errorf("seed %d: workload: %w", seed, err)
	}
	if runErr != nil || len(w.Errors) > 0 {
		failed := final + ".failed"
		_ = os.RemoveAll(failed)
		_ = os.Rename(tmp, failed)
		msg := strings.Join(w.Errors, "\n")
		if runErr != nil {
			msg = runErr.Error() + "\n" + msg
		}
		return nil, false, fmt.Errorf("seed %d: workload failed (output kept in %s):\n%s", seed, failed, msg)
	}
	if err := publish(tmp, final); err != nil {
		return nil, false, err
	}
	return &w, false, nil
}

// copyStore copies store to a fresh directory under scratch; without the
// index, db.data, db.redo and db.free are left out (the broker rebuilds
// its index from the journal).
func copyStore(scratch, store string, index bool) (string, error) {
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return "", err
	}
	d, err := os.MkdirTemp(scratch, "store-")
	if err != nil {
		return "", err
	}
	dst := filepath.Join(d, "store")
	if err := faults.CopyDir(dst, store); err != nil {
		return "", fmt.Errorf("copy %s: %w", store, err)
	}
	if !index {
		for _, n := range []string{"db.data", "db.redo", "db.free"} {
			if err := os.Remove(filepath.Join(dst, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
		}
	}
	return dst, nil
}

// viewName names the BrokerView outputs of a seed.
func viewName(index bool) string {
	if index {
		return "view-index"
	}
	return "view-noindex"
}

// runView runs BrokerView on a copy of store (the copy is removed) and
// writes out (and log next to it).
func runView(ctx context.Context, c Config, scratch, store, workloadJSON, out string, maxLen int64, index bool) (*View, error) {
	cp, err := copyStore(scratch, store, index)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Dir(cp))
	tmp := out + ".tmp"
	log := strings.TrimSuffix(out, ".json") + ".log"
	_, err = runTool(ctx, c.Repo, viewTimeout, "BrokerView", cp, tmp, "--policies", workloadJSON,
		"--max-file-length", strconv.FormatInt(maxLen, 10), "--log", log)
	if err != nil {
		return nil, err
	}
	var v View
	if err := readJSON(tmp, &v); err != nil {
		return nil, err
	}
	return &v, publish(tmp, out)
}

// ensureView is runView on the workload in wdir unless dir already has
// the output.
func ensureView(ctx context.Context, c Config, wdir, dir string, w *Workload, index bool) (*View, bool, error) {
	out := filepath.Join(dir, viewName(index)+".json")
	var v View
	if err := readJSON(out, &v); err == nil {
		return &v, true, nil
	}
	if err := c.broker(); err != nil {
		return nil, false, fmt.Errorf("%s: %w", out, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	r, err := runView(ctx, c, scratchDir(dir), filepath.Join(wdir, "store"),
		filepath.Join(wdir, "workload.json"), out, w.Config.JournalMaxFileLength, index)
	return r, false, err
}

// Inspected is what brokerkit Inspect reported, and how it was run.
type Inspected struct {
	*brokertest.Inspection
	// Log is the adapter's log (with its cleanup lines).
	Log string
	// Trace: MessageDatabase logged at TRACE, so Log has the candidate
	// lines of the cleanup. Without it (the default, see brokerkit
	// Logs.setup: 5.17.2's cleanup can throw while formatting a TRACE line)
	// Log has only the "Cleanup removing the data files" line.
	Trace bool
}

// ensureInspect runs Inspect on a copy of the store of the workload in
// wdir (with or without the index) unless dir already has its output.
// With trace the adapter logs its cleanup at TRACE; such a run fails when
// 5.17.2 throws while formatting a TRACE line (AMQ-9780).
func ensureInspect(ctx context.Context, c Config, wdir, dir string, w *Workload, index, trace bool) (*Inspected, bool, error) {
	name := "inspect-noindex"
	if index {
		name = "inspect-index"
	}
	if trace {
		name += "-trace"
	}
	out := filepath.Join(dir, name+".json")
	log := filepath.Join(dir, name+".log")
	var in brokertest.Inspection
	if err := readJSON(out, &in); err == nil {
		return &Inspected{Inspection: &in, Log: log, Trace: trace}, true, nil
	}
	failed := filepath.Join(dir, name+".failed")
	if b, err := os.ReadFile(failed); err == nil {
		return nil, true, errors.New(string(b))
	}
	if err := c.broker(); err != nil {
		return nil, false, fmt.Errorf("%s: %w", out, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	cp, err := copyStore(scratchDir(dir), filepath.Join(wdir, "store"), index)
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(filepath.Dir(cp))
	_ = os.Remove(log)
	args := []string{cp, out + ".tmp", "--max-file-length", strconv.FormatInt(w.Config.JournalMaxFileLength, 10), "--log", log}
	if !trace {
		args = append(args, "--no-gc-trace")
	}
	if _, err := runTool(ctx, c.Repo, inspectTimeout, "Inspect", args...); err != nil {
		if trace {
			_ = os.WriteFile(failed, []byte(err.Error()), 0o644) // do not try again
		}
		return nil, false, err
	}
	if err := readJSON(out+".tmp", &in); err != nil {
		return nil, false, err
	}
	if err := publish(out+".tmp", out); err != nil {
		return nil, false, err
	}
	return &Inspected{Inspection: &in, Log: log, Trace: trace}, false, nil
}

// journalHash hashes the names of a store's data files and their data up
// to its logical end (FileSummary.End: not a preallocated file's padding) (the
// key of a compacted store's cached view).
func journalHash(dir string) (string, error) {
	l, err := store.Locate(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range l.Journal.Files {
		// the data up to its logical end: a preallocated file's padding
		// and a closing EOF record say nothing a broker reads
		sum, err := codec.ScanFile(f, codec.ReadOptions{}, func(codec.Record, *codec.Command) error { return nil })
		if err != nil {
			return "", err
		}
		fh, err := os.Open(f.Path)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n", f.Name)
		_, err = io.Copy(h, io.LimitReader(fh, sum.End))
		fh.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// scratchDir is where this process copies stores under dir (an oracle
// directory of the shared cache): its own, so that two runs on one cache
// do not remove each other's copies.
func scratchDir(dir string) string {
	return filepath.Join(dir, "scratch-"+strconv.Itoa(os.Getpid()))
}

package difftest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/refgraph"
)

// A kept seed (Keep) is a directory that holds everything about one
// comparison, so that a disagreement found once is never lost:
//
//	workload/        brokerkit Workload's output: workload.json, store/ (the
//	                 store the broker left), logs/ (the broker's logs per run)
//	oracle/          the broker's answers: view-index.json, view-noindex.json,
//	                 inspect-index.json, inspect-noindex.json (and their
//	                 .log), inspect-*-trace.* when the cleanups disagreed,
//	                 compacted-H.json (its view of the compacted store)
//	compacted/store  the store kahafs compacted from workload/store
//	kahafs/          kahafs's answers, one JSON file per view (Answer)
//	findings.json    the findings (ResultsJSON)
//	report.txt       the report TestDifferential printed
//
// Replay re-runs the comparison on it with the kept broker answers and no
// broker. A kept seed moved under testdata/kept/ (with a
// fixture.json) is a fixture TestReplayFixtures replays in CI; where the
// broker's answer as found was the oracle's fault, the fixed oracle's
// answer replaces it and the one found stays as oracle/NAME.found.json
// (the replay with it must give findings.json's findings again).

// Kept-seed file names.
const (
	keptWorkload  = "workload"
	keptOracle    = "oracle"
	keptCompacted = "compacted"
	keptKahafs    = "kahafs"
	keptFindings  = "findings.json"
	keptReport    = "report.txt"
)

// errReplay: a replay asked for a broker answer the kept seed does not
// have.
var errReplay = errors.New("replay: the broker is not run and the kept seed has no such answer")

// Fault perturbs kahafs's answers before they are compared: how a test
// breaks the comparison on purpose (nil fields: unchanged).
type Fault struct {
	// Cleanup replaces the files kahafs's cleanup deletes.
	Cleanup func(view string, deletes []int32) []int32
	// Pending replaces the messages the tree lists for a queue.
	Pending func(view, queue string, pending []*refgraph.Message) []*refgraph.Message
}

// Answer is what kahafs answered for one view of a store: what was compared
// with the broker.
type Answer struct {
	View          string                  `json:"view"`
	Cleanup       []int32                 `json:"cleanup"`
	CleanupLog    []string                `json:"cleanupLog"`
	Destinations  []string                `json:"destinations"`
	Queues        map[string]AnswerQueue  `json:"queues"`
	Subscriptions map[string]AnswerSub    `json:"subscriptions"`
	Prepared      []brokertest.PreparedTx `json:"prepared"`
}

// AnswerQueue is a queue in an Answer.
type AnswerQueue struct {
	Count   int64    `json:"count"`
	Pending []string `json:"pending"`
}

// AnswerSub is a durable subscription in an Answer.
type AnswerSub struct {
	Count     int64    `json:"count"`
	Delivered []string `json:"delivered"`
}

// answerOf records what kahafs's graph g answers (cleanup: the files its
// cleanup deletes, as compared).
func answerOf(view string, g *refgraph.Graph, cleanup []int32, in *info) *Answer {
	a := &Answer{View: view, Cleanup: cleanup, CleanupLog: g.GCLog(), Destinations: kahafsDestinations(g),
		Queues: map[string]AnswerQueue{}, Subscriptions: map[string]AnswerSub{}}
	for _, d := range g.Destinations() {
		if d.Type != codec.Queue {
			continue
		}
		q := AnswerQueue{Count: d.Stats.Count, Pending: []string{}}
		for _, m := range in.queuePending(d) {
			q.Pending = append(q.Pending, m.ID())
		}
		a.Queues[d.Name] = q
	}
	for _, s := range g.Subscriptions() {
		listed := s.Pending()
		if in.delivered != nil {
			listed = in.delivered(s)
		}
		as := AnswerSub{Count: s.Count, Delivered: []string{}}
		for _, m := range listed {
			as.Delivered = append(as.Delivered, m.ID())
		}
		a.Subscriptions[subKey(s)] = as
	}
	for _, t := range g.PreparedTransactions() {
		p := brokertest.PreparedTx{XID: t.ID}
		for _, op := range t.Ops {
			if op.Add {
				p.Adds = append(p.Adds, op.MessageID)
			} else {
				p.Acks = append(p.Acks, op.MessageID)
			}
		}
		a.Prepared = append(a.Prepared, p)
	}
	return a
}

// KeepRoot is where failing seeds are kept: $KAHAFS_DIFF_KEEP, or
// kahafs-difftest-failures in the system's temporary directory (not a
// test's t.TempDir(), which is removed).
func KeepRoot() string {
	if d := os.Getenv("KAHAFS_DIFF_KEEP"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "kahafs-difftest-failures")
}

// Keep copies everything about r's seed (see above) to a new directory
// under root, named after the seed and the time, and returns it. report is
// the seed's report.
func Keep(root string, c Config, r *Result, report string) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	dst, err := os.MkdirTemp(root, fmt.Sprintf("seed-%d-%s-", r.Seed, time.Now().UTC().Format("20060102T150405Z")))
	if err != nil {
		return "", err
	}
	var errs []error
	wdir := filepath.Join(r.Dir, "workload")
	if c.ReplayDir != "" {
		wdir = filepath.Join(c.ReplayDir, keptWorkload)
	}
	if exists(wdir) {
		errs = append(errs, copyKept(filepath.Join(dst, keptWorkload), wdir))
	} else if exists(wdir + ".failed") {
		errs = append(errs, copyKept(filepath.Join(dst, keptWorkload), wdir+".failed"))
	}
	if odir := c.OracleDir(r.Seed); exists(odir) {
		errs = append(errs, copyKept(filepath.Join(dst, keptOracle), odir))
	}
	if r.Compacted != "" {
		errs = append(errs, faults.CopyDir(filepath.Join(dst, keptCompacted, "store"), r.Compacted))
	}
	for view, a := range r.Kahafs {
		raw, err := json.MarshalIndent(a, "", "  ")
		if err == nil {
			err = writeFile(filepath.Join(dst, keptKahafs, answerFile(view)), raw)
		}
		errs = append(errs, err)
	}
	raw, err := ResultsJSON([]*Result{r})
	if err == nil {
		err = os.WriteFile(filepath.Join(dst, keptFindings), raw, 0o644)
	}
	errs = append(errs, err, os.WriteFile(filepath.Join(dst, keptReport), []byte(report), 0o644))
	if err := errors.Join(errs...); err != nil {
		return dst, fmt.Errorf("keep seed %d in %s: %w", r.Seed, dst, err)
	}
	return dst, nil
}

// answerFile names a view's Answer in a kept seed.
func answerFile(view string) string {
	return strings.ReplaceAll(view, " ", "-") + ".json"
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// copyKept copies the directory src to dst without a process's scratch
// copies, unfinished outputs, lock files and .gitignore files.
func copyKept(dst, src string) error {
	return copyTree(dst, src, func(rel string, d os.DirEntry) bool {
		name := d.Name()
		if name == ".gitignore" && !d.IsDir() {
			return true // brokerkit's logs/.gitignore ignores the logs: kept, they are committed
		}
		return rel != "." && (strings.HasPrefix(name, "scratch-") || strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".lck"))
	})
}

// ReadSeed reads the seed of a kept seed's workload.
func ReadSeed(dir string) (int64, error) {
	var w Workload
	if err := readJSON(filepath.Join(dir, keptWorkload, "workload.json"), &w); err != nil {
		return 0, err
	}
	return w.Seed, nil
}

// Replay re-runs the comparison of the seed kept in dir (Keep) with the
// broker answers kept there, without a broker; kahafs's side (and the
// compaction) run again, under work, perturbed by fault (nil: none). A
// broker answer it lacks is an error, but for the broker's view of the
// compacted store: when kahafs's compaction no longer writes the journal
// it kept, that part is not compared (noted).
func Replay(ctx context.Context, dir, work string, fault *Fault) *Result {
	seed, err := ReadSeed(dir)
	if err != nil {
		return &Result{Dir: dir, Err: fmt.Errorf("replay %s: %w", dir, err)}
	}
	return RunSeed(ctx, Config{ReplayDir: dir, Work: work, Fault: fault}, seed)
}

// ReadAnswer reads the Answer kept for view in a kept seed.
func ReadAnswer(dir, view string) (*Answer, error) {
	var a Answer
	if err := readJSON(filepath.Join(dir, keptKahafs, answerFile(view)), &a); err != nil {
		return nil, err
	}
	return &a, nil
}

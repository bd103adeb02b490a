package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kahafs/kahafs/store"
)

// Step names, in the order they run.
const (
	stepCat           = "cat"
	stepHolders       = "holders"
	stepHoldersNoIdx  = "holders-no-index"
	stepHoldersCached = "holders-cached"
	stepMetricsCached = "metrics-cached"
	stepStats         = "stats"
	stepMount         = "mount"
	stepMountNoIdx    = "mount-no-index"
	stepMountCached   = "mount-cached"
	stepGrep          = "grep"
	stepLsPending     = "ls-pending"
	stepLsFPending    = "ls-f-pending"
	stepGrepPending   = "grep-pending"
	stepGrepLinked    = "grep-pending-linked"
	stepKahafsGrep    = "kahafs-grep"
	stepCompact       = "compact"
	stepCompactCached = "compact-cached"
	stepBroker        = "broker"
)

var allSteps = []string{stepCat, stepHolders, stepPlan, stepHoldersNoIdx, stepHoldersCached, stepMetricsCached, stepStats, stepMount,
	stepMountNoIdx, stepGrep, stepLsPending, stepGrepPending, stepGrepLinked, stepKahafsGrep, stepMountCached, stepCompact,
	stepCompactCached, stepBroker}

// mountSteps run on the mount of stepMount (stepLsPending also on a
// mount of its own, for its ls -f row).
var mountSteps = []string{stepGrep, stepLsPending, stepGrepPending}

// result is one row of the report.
type result struct {
	step    string
	command string        // as shown in the table (STORE, MNT for the paths)
	wall    time.Duration // 0 when skipped or failed
	rss     int64         // peak RSS of the child in bytes, 0 when unknown
	skipped string        // why the step did not run
	err     error
	notes   []string
	rate    float64 // compact: moved records per second of wall time
	rateW   float64 // compact: the same over its write phase (its own report)
	// mount: peak RSS when the first listing answered (0 when unknown)
	hwmReady int64
	// ls rows: the same listing of the same names on tmpfs, its CPU time,
	// and the mount's CPU time during the timed listing
	floor, floorCPU, serverCPU time.Duration
	// grep rows: files read per second
	filesPerSec float64
	limit       string // where the directory stands against the link limit
	// kahafs-grep: the time of grep -r over the mount it is held against
	// (wall: kahafs grep's, the cache warm); cold: kahafs grep
	// --no-cache's, and the mount's first answer plus grep -r
	baseline, coldWall, coldBaseline time.Duration
	// cpu: the child's user + system time (one run; 0 when unknown or
	// several runs, which the notes list)
	cpu time.Duration
	// walls: each run's wall time, in order, when the row ran several
	// (wall is their median)
	walls []time.Duration
}

func (r *result) note(format string, a ...any) { r.notes = append(r.notes, fmt.Sprintf(format, a...)) }

func (r *result) ok() bool { return r.skipped == "" && r.err == nil && r.wall > 0 }

// bench holds what the steps share.
type bench struct {
	root    string
	o       options
	cs      *cachedStore
	files   []string // data files, replay order
	bytes   int64
	bin     string // the kahafs binary
	work    string // scratch directory (copies, mount point)
	cmds    map[string]bool
	results []*result
	holders *holdersSummary
	log     io.Writer
	// the runs of the holders-no-index and mount-no-index rows, made by
	// the holders and mount rows one before each of their own (nil: the
	// rows run on their own)
	noIndexHolders, noIndexMount *pairedRuns
}

// pairedRuns are the runs of a -no-index row made alternately with those
// of its row (holders, mount): the machine's speed drifts by a third
// within minutes (BENCHMARKS.md), so the ratio issue 22 asks for (within
// 1.15×) is only read from runs made one after the other.
type pairedRuns struct {
	walls, cpus   []time.Duration
	rss, hwmReady int64
	err           error
}

// pairsWith reports whether the row of step is to run alternately with
// the one running now: both selected, and the store has an index.
func (b *bench) pairsWith(step string) bool { return b.wants(step) && b.cs.index != nil }

// fill makes r the result of the runs p holds, as repeat would; what
// names the runs (runs, mounts) and their CPU time in the notes.
func (p *pairedRuns) fill(r *result, what, cpuWhat, other string) {
	if r.err = p.err; r.err != nil {
		return
	}
	r.wall, r.rss, r.hwmReady, r.walls = median(p.walls), p.rss, p.hwmReady, p.walls
	if len(p.walls) > 1 {
		r.note("median of %d %s: %s (%s: %s)", len(p.walls), what, secondsList(p.walls), cpuWhat, secondsList(p.cpus))
	} else {
		r.cpu = p.cpus[0]
	}
	r.note("each run just before one of the %s row's", other)
}

func newBench(root string, cs *cachedStore, o options, log io.Writer) (*bench, error) {
	b := &bench{root: root, o: o, cs: cs, log: log}
	l, err := store.Locate(cs.store)
	if err != nil {
		return nil, err
	}
	for _, f := range l.Journal.Files {
		b.files = append(b.files, f.Path)
		b.bytes += f.Size
	}
	if b.work, err = os.MkdirTemp(o.cache, "work-"); err != nil {
		return nil, err
	}
	b.bin = filepath.Join(b.work, "kahafs")
	if err := b.build(); err != nil {
		b.close()
		return nil, err
	}
	b.cmds, err = kahafsCommands(b.bin)
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *bench) close() { os.RemoveAll(b.work) }

func (b *bench) logf(format string, a ...any) { fmt.Fprintf(b.log, "bench: "+format+"\n", a...) }

// build compiles kahafs from this checkout.
func (b *bench) build() error {
	cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/kahafs")
	cmd.Dir = b.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/kahafs: %v\n%s", err, out)
	}
	return nil
}

// kahafsCommands lists the subcommands `kahafs help` names.
func kahafsCommands(bin string) (map[string]bool, error) {
	out, err := exec.Command(bin, "help").Output()
	if err != nil {
		return nil, fmt.Errorf("kahafs help: %w", err)
	}
	cmds := map[string]bool{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Available Commands:"):
			in = true
		case in && strings.TrimSpace(line) == "":
			in = false
		case in:
			cmds[strings.Fields(line)[0]] = true
		}
	}
	return cmds, nil
}

func (b *bench) wants(step string) bool {
	return slices.ContainsFunc(strings.Split(b.o.steps, ","), func(s string) bool { return strings.TrimSpace(s) == step })
}

// runSteps runs the chosen steps in order; a failing step is reported in
// its row and the others still run.
func (b *bench) runSteps() {
	type stepFn struct {
		name string
		fn   func() []*result
	}
	if err := b.warm(); err != nil {
		b.logf("warming the page cache: %v", err)
	}
	for _, s := range []stepFn{
		{stepCat, b.cat}, {stepHolders, b.holdersStep}, {stepPlan, b.planStep}, {stepHoldersNoIdx, b.holdersNoIndexStep}, {stepHoldersCached, b.holdersCachedStep},
		{stepMetricsCached, b.metricsCachedStep}, {stepStats, b.statsStep}, {stepMount, b.mountAndGrep}, {stepMountNoIdx, b.mountNoIndexStep},
		{stepGrepLinked, b.grepLinkedStep}, {stepKahafsGrep, b.kahafsGrepStep},
		{stepMountCached, b.mountCachedStep}, {stepCompact, b.compactStep}, {stepCompactCached, b.compactCachedStep},
		{stepBroker, b.brokerStep},
	} {
		if !b.wants(s.name) && !(s.name == stepMount && slices.ContainsFunc(mountSteps, b.wants)) {
			continue
		}
		b.logf("step %s ...", s.name)
		for _, r := range s.fn() {
			if r.err != nil {
				b.logf("step %s failed: %v", r.step, r.err)
			}
			b.results = append(b.results, r)
		}
	}
	// The rows in allSteps' order (the mount's no-index row next to it,
	// the rows of its mount after both; ls-f-pending after ls-pending).
	order := slices.Insert(slices.Clone(allSteps), slices.Index(allSteps, stepLsPending)+1, stepLsFPending)
	slices.SortStableFunc(b.results, func(x, y *result) int {
		return slices.Index(order, x.step) - slices.Index(order, y.step)
	})
}

// needs returns a skipped result when kahafs has no such subcommand yet.
func (b *bench) needs(r *result, sub string) bool {
	if b.cmds[sub] {
		return true
	}
	r.skipped = fmt.Sprintf("`kahafs %s` does not exist yet (not in `kahafs help`)", sub)
	return false
}

// canMount: kahafs has a mount command and this machine /dev/fuse; if
// not, r says which is missing.
func (b *bench) canMount(r *result) bool {
	if !b.needs(r, "mount") {
		return false
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		r.skipped = "no /dev/fuse on this machine"
		return false
	}
	return true
}

// child is a finished child process.
type child struct {
	wall   time.Duration
	rss    int64         // bytes
	cpu    time.Duration // user + system time (0 when unknown)
	status int
	stderr string // the end of it
}

// runChild runs name args with stdout to out (nil: /dev/null), timing it
// and reading the child's peak RSS, through the spawner (spawnArg). A
// non-zero exit status is an error unless it is in okStatus.
func (b *bench) runChild(out io.Writer, env []string, name string, args []string, okStatus ...int) (child, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.o.timeout)
	defer cancel()
	c, err := spawnTimed(ctx, out, nil, env, name, args, okStatus...)
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s", b.o.timeout)
	}
	return c, err
}

// spawnTimed is runChild with the caller's context (the child is killed
// when it is done); errOut, when not nil, gets the child's standard error
// too.
func spawnTimed(ctx context.Context, out, errOut io.Writer, env []string, name string, args []string, okStatus ...int) (child, error) {
	cmd, report, err := spawned(ctx, name, args) // a timeout kills the spawner, and so the child
	if err != nil {
		return child{}, err
	}
	defer report.Close()
	cmd.Stdout = out
	tail := &tailBuffer{max: 4096}
	cmd.Stderr = tail
	if errOut != nil {
		cmd.Stderr = io.MultiWriter(tail, errOut)
	}
	cmd.Env = append(os.Environ(), env...)
	// once the spawner has exited, its output is not waited for long (a
	// process that kept it open would hold the run)
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Start()
	cmd.ExtraFiles[0].Close() // the spawner's end of the report
	if err == nil {
		err = cmd.Wait()
	}
	c := child{wall: time.Since(start), stderr: tail.String()}
	if ps := cmd.ProcessState; ps != nil && ps.Exited() { // not killed: it reported
		c.status = ps.ExitCode()
		if rep, ok := readSpawnReport(report); ok {
			c.wall, c.rss, c.cpu = rep.wall, rep.rss, rep.cpu
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && slices.Contains(okStatus, c.status) {
		err = nil
	}
	if err != nil {
		return c, fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, c.stderr)
	}
	return c, nil
}

// maxRSS is the peak resident set of a finished child (Linux reports KiB).
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }

func devNull() (*os.File, error) { return os.OpenFile(os.DevNull, os.O_WRONLY, 0) }

// warm reads the data files once so that every step finds them in the
// page cache.
func (b *bench) warm() error {
	null, err := devNull()
	if err != nil {
		return err
	}
	defer null.Close()
	files := b.files
	if idx := filepath.Join(b.cs.store, "db.data"); b.cs.index != nil {
		files = append(slices.Clone(files), idx) // kahafs reads the index too
	}
	if _, err = b.runChild(null, nil, "cat", files); err != nil {
		return err
	}
	// Writing back what the build and the store's generation left dirty
	// would otherwise run under the first steps (holders was 30-40 %
	// slower as the first step than later in the same run).
	syscall.Sync()
	return nil
}

// cat times reading the data files: the speed of reading the bytes at all.
func (b *bench) cat() []*result {
	r := &result{step: stepCat, command: "`cat STORE/db-*.log > /dev/null`"}
	null, err := devNull()
	if err != nil {
		r.err = err
		return []*result{r}
	}
	defer null.Close()
	b.repeat(r, func() (child, error) { return b.runChild(null, nil, "cat", b.files) })
	return []*result{r}
}

// repeat runs one of the quick steps b.o.runs times and keeps the median
// wall time and the largest peak RSS; the notes list every run. Single
// runs on a shared 2-core machine vary by a third.
func (b *bench) repeat(r *result, run func() (child, error)) {
	var walls, cpus []time.Duration
	for i := 0; i < max(b.o.runs, 1); i++ {
		c, err := run()
		if err != nil {
			r.err = err
			return
		}
		walls, cpus = append(walls, c.wall), append(cpus, c.cpu)
		r.rss = max(r.rss, c.rss)
	}
	r.wall, r.walls = median(walls), walls
	if len(walls) > 1 {
		r.note("median of %d runs: %s (CPU, user + system: %s)", len(walls), secondsList(walls), secondsList(cpus))
	} else {
		r.cpu = cpus[0]
	}
}

// pairRatios describes a[i]/b[i], runs timed in pairs (one of a just
// after one of b): each ratio and their median, which the machine's
// drift between pairs moves less than the ratio of the medians; "" when
// the runs are not pairs.
func pairRatios(a, b []time.Duration) string {
	if len(a) < 2 || len(a) != len(b) {
		return ""
	}
	rs := make([]float64, len(a))
	parts := make([]string, len(a))
	for i := range a {
		rs[i] = a[i].Seconds() / b[i].Seconds()
		parts[i] = fmt.Sprintf("%.2f", rs[i])
	}
	sorted := slices.Clone(rs)
	slices.Sort(sorted)
	m := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		m = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return fmt.Sprintf("; pair by pair %s×, their median %.2f×", strings.Join(parts, ", "), m)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func secondsList(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.2f", d.Seconds())
	}
	return strings.Join(parts, ", ") + " s"
}

func (b *bench) fileLengthArg() string { return strconv.Itoa(b.cs.man.Config.FileLength) }

// holdersStep times the full analysis with JSON output (no cache: a cold
// analysis).
func (b *bench) holdersStep() []*result {
	r := &result{step: stepHolders, command: "`kahafs holders STORE --json --no-cache`" + b.indexSays()}
	if !b.needs(r, "holders") {
		return []*result{r}
	}
	out := filepath.Join(b.work, "holders.json")
	if b.pairsWith(stepHoldersNoIdx) {
		p := &pairedRuns{}
		b.noIndexHolders = p
		noIndex := filepath.Join(b.work, "holders-no-index.json")
		b.repeat(r, func() (child, error) {
			if p.err == nil {
				c, err := b.holdersOnce(noIndex, "--no-index")
				p.walls, p.cpus, p.rss, p.err = append(p.walls, c.wall), append(p.cpus, c.cpu), max(p.rss, c.rss), err
			}
			return b.holdersOnce(out)
		})
		r.note("each run just after one of the holders-no-index row's")
	} else {
		b.timeHolders(r, out)
	}
	if err := r.err; err == nil {
		b.holders, err = readHolders(out)
		if err != nil {
			r.note("output not understood: %v", err)
		} else {
			r.note("%d of %d files pinned", b.holders.pinned, b.holders.files)
		}
	}
	return []*result{r}
}

// indexSays is what the command column adds about the store's index: the
// default rows adopt the broker's db.data.
func (b *bench) indexSays() string {
	if b.cs.index == nil {
		return " (no index: -bare)"
	}
	return " (index adopted)"
}

// timeHolders runs holders --json --no-cache b.o.runs times, its output to
// out, adding flags.
func (b *bench) timeHolders(r *result, out string, flags ...string) {
	b.repeat(r, func() (child, error) { return b.holdersOnce(out, flags...) })
}

// holdersOnce runs holders --json --no-cache once, its output to out.
func (b *bench) holdersOnce(out string, flags ...string) (child, error) {
	f, err := os.Create(out)
	if err != nil {
		return child{}, err
	}
	defer f.Close()
	args := append([]string{"holders", b.cs.store, "--json", "--max-file-length", b.fileLengthArg(), "--no-cache"}, flags...)
	return b.runChild(f, nil, b.bin, args)
}

// holdersNoIndexStep times holders on the same store told to ignore its
// index (--no-index: the journal alone, as a broker whose db.data was
// deleted), the row to hold the holders row against (issue 22: within
// 1.15×), and says whether the two answer the same.
func (b *bench) holdersNoIndexStep() []*result {
	r := &result{step: stepHoldersNoIdx, command: "`kahafs holders STORE --json --no-cache --no-index` (the same store, its index ignored)"}
	if b.cs.index == nil {
		r.skipped = "the store has no index (-bare): the holders row is this one"
		return []*result{r}
	}
	if !b.needs(r, "holders") {
		return []*result{r}
	}
	out := filepath.Join(b.work, "holders-no-index.json")
	if p := b.noIndexHolders; p != nil {
		p.fill(r, "runs", "CPU, user + system", "holders")
	} else {
		b.timeHolders(r, out, "--no-index")
	}
	if r.err != nil {
		return []*result{r}
	}
	r.note("%s", sameFile(out, filepath.Join(b.work, "holders.json"), "the holders row (index adopted)"))
	return []*result{r}
}

// sameFile says whether the files a and b hold the same bytes.
func sameFile(a, b, what string) string {
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	switch {
	case err1 != nil || err2 != nil:
		return "not compared with " + what + " (did not run)"
	case bytes.Equal(x, y):
		return "same output as " + what
	}
	return "OUTPUT DIFFERS from " + what
}

// holdersSummary is what the report uses of `holders --json`.
type holdersSummary struct {
	files, pinned int
	gc            []int32
}

func readHolders(path string) (*holdersSummary, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Files []struct {
			Pinned bool `json:"pinned"`
		} `json:"files"`
		GCCandidates []int32 `json:"gcCandidates"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	h := &holdersSummary{files: len(doc.Files), gc: doc.GCCandidates}
	for _, f := range doc.Files {
		if f.Pinned {
			h.pinned++
		}
	}
	return h, nil
}

// statsStep times `kahafs stats`.
func (b *bench) statsStep() []*result {
	r := &result{step: stepStats, command: "`kahafs stats STORE`"}
	if !b.needs(r, "stats") {
		return []*result{r}
	}
	b.repeat(r, func() (child, error) { return b.runChild(nil, nil, b.bin, []string{"stats", b.cs.store}) })
	return []*result{r}
}

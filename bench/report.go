package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Issue 7's targets, printed next to the measured ratios.
const (
	targetHoldersMBps   = 1500    // holders throughput
	targetBrokerRatio   = 10      // broker rebuild time / holders time
	targetMountRatio    = 1.2     // first mount answer / holders time
	targetCompactRate   = 100_000 // moved records per second
	targetCachedPercent = 10      // warm-cache run / cold run, in percent
	targetIndexRatio    = 1.15    // index adopted / --no-index, holders and the mount (issue 22)
	targetLsRatio       = 1.5     // ls of a big pending/ / the same names on tmpfs (issue 22)
	targetGrepRate      = 50_000  // grep -r files/s within the link limit (issue 22)
	targetGrepRatio     = 10      // grep -r over the mount / kahafs grep (issue 22)
	rssBase             = 64 << 20
	rssPerPending       = 100
)

// Markers of the generated section of BENCHMARKS.md.
const (
	resultsBegin = "<!-- bench:results:begin -->"
	resultsEnd   = "<!-- bench:results:end -->"
)

// report renders the run as markdown: context, table, ratios.
func (b *bench) report() string {
	var sb strings.Builder
	b.writeContext(&sb)
	sb.WriteString("\n| step | command | wall | MB/s | peak RSS | × cat | notes |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, r := range b.results {
		sb.WriteString(b.row(r))
	}
	sb.WriteString("\nRatios and targets (issues 7, 15, 22):\n\n")
	for _, line := range b.ratios() {
		sb.WriteString("- " + line + "\n")
	}
	return sb.String()
}

func (b *bench) writeContext(sb *strings.Builder) {
	m := b.cs.man
	fmt.Fprintf(sb, "Run of %s UTC: %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04"), machine())
	if m.Config.Shape == brokerShape {
		fmt.Fprintf(sb, "Store: %s in %d files of %s (`-size %s -file-length %s -seed %d -shape %s`), written by a real ActiveMQ 5.17 broker "+
			"outright, message by message (brokerkit BigStore, SCALE %.3g): %s messages sent (%s of bodies), %s pending at the end "+
			"(the DLQ %s, %s %s, the offline subscription %s); written in %.0f s.\n",
			mib(b.bytes), len(b.files), mib(int64(m.Config.FileLength)), b.o.size, b.o.fileLength, m.Config.Seed, brokerShape,
			float64(m.Config.Bytes)/brokerScaleBytes, thousands(m.Messages), mib(m.BodyBytes), thousands(m.Pending),
			thousands(m.PendingDLQ), slowQueue, thousands(m.PendingStuck), thousands(m.PendingSub), m.Seconds)
		fmt.Fprintf(sb, "Its %s. Every row runs on that store, index included, unless it says otherwise.\n", b.cs.index.describe())
		return
	}
	generated := ""
	if b.cs.index != nil {
		generated = fmt.Sprintf(" generated as %d files of %s,", m.Files, mib(m.Bytes))
	}
	fmt.Fprintf(sb, "Store: %s in %d files of %s (`-size %s -file-length %s -batch %s -seed %d -shape %q`),%s %s records, "+
		"%s messages (%s bytes of bodies), %s pending at the end; generated in %.0f s.\n",
		mib(b.bytes), len(b.files), mib(int64(m.Config.FileLength)), b.o.size, b.o.fileLength, b.o.batchSize,
		m.Config.Seed, m.Config.Shape, generated, thousands(m.Records), thousands(m.Messages), mib(m.BodyBytes), thousands(m.Pending), m.Seconds)
	if i := b.cs.index; i != nil {
		fmt.Fprintf(sb, "Its %s. Every row runs on that store, index included, unless it says otherwise.\n", i.describe())
	} else {
		sb.WriteString("The store has no index (`-bare`): every row runs on the generated journal alone.\n")
	}
}

func (b *bench) row(r *result) string {
	if r.skipped != "" {
		return fmt.Sprintf("| %s | %s | — | — | — | — | skipped: %s |\n", r.step, r.command, r.skipped)
	}
	if r.err != nil {
		return fmt.Sprintf("| %s | %s | — | — | — | — | FAILED: %s |\n", r.step, r.command, cell(r.err.Error()))
	}
	notes := r.notes
	if r.cpu > 0 {
		notes = append([]string{"CPU " + seconds(r.cpu) + " (user + system)"}, notes...)
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", r.step, r.command, seconds(r.wall),
		thousands(int64(b.mbps(r))), mibOrUnknown(r.rss), b.vsCat(r), cell(strings.Join(notes, "; ")))
}

func (b *bench) mbps(r *result) float64 { return float64(b.bytes) / 1e6 / r.wall.Seconds() }

func (b *bench) vsCat(r *result) string {
	c := b.result(stepCat)
	switch {
	case r.step == stepCat:
		return "1"
	case c == nil:
		return "—"
	}
	return fmt.Sprintf("%.1f", r.wall.Seconds()/c.wall.Seconds())
}

// result returns the successful result of a step, or nil.
func (b *bench) result(step string) *result {
	for _, r := range b.results {
		if r.step == step && r.ok() {
			return r
		}
	}
	return nil
}

// ratios compares the steps with each other and with the targets.
func (b *bench) ratios() []string {
	var out []string
	cat, h := b.result(stepCat), b.result(stepHolders)
	if h == nil {
		return []string{"`kahafs holders` did not run: no ratios."}
	}
	if cat != nil {
		out = append(out, fmt.Sprintf("`holders` takes %.1f× the time of `cat`: %s MB/s against %s MB/s (target ≥ %s MB/s).",
			h.wall.Seconds()/cat.wall.Seconds(), thousands(int64(b.mbps(h))), thousands(int64(b.mbps(cat))),
			thousands(targetHoldersMBps)))
	}
	if br := b.result(stepBroker); br != nil {
		out = append(out, fmt.Sprintf("The broker's index rebuild takes %.1f× the time of `holders` (target ≥ %d×).",
			br.wall.Seconds()/h.wall.Seconds(), targetBrokerRatio))
	}
	if m := b.result(stepMount); m != nil {
		out = append(out, fmt.Sprintf("The mount answers its first `ls` in %.2f× the time of `holders` (target ≤ %.1f×).",
			m.wall.Seconds()/h.wall.Seconds(), targetMountRatio))
	}
	if pl := b.result(stepPlan); pl != nil && pl.ok() {
		out = append(out, fmt.Sprintf("`plan` takes %.2f× the time of `holders` (target ≤ %.0f×).", pl.wall.Seconds()/h.wall.Seconds(), targetPlanRatio))
	}
	if hc := b.result(stepHoldersCached); hc != nil {
		out = append(out, fmt.Sprintf("`holders` with a warm analysis cache takes %.0f %% of the cold run (target ≤ %d %%).",
			100*hc.wall.Seconds()/h.wall.Seconds(), targetCachedPercent))
	}
	if mc := b.result(stepMetricsCached); mc != nil && mc.ok() {
		out = append(out, fmt.Sprintf("`metrics --output` with a warm analysis cache takes %.3f s (target < 0.2 s: cheap enough for every minute).", mc.wall.Seconds()))
	}
	if mc, m := b.result(stepMountCached), b.result(stepMount); mc != nil && m != nil {
		out = append(out, fmt.Sprintf("The mount with a warm analysis cache answers its first `ls` in %.0f %% of the cold mount's time and %.0f %% of cold `holders` (target ≤ %d %%).",
			100*mc.wall.Seconds()/m.wall.Seconds(), 100*mc.wall.Seconds()/h.wall.Seconds(), targetCachedPercent))
	}
	if hn := b.result(stepHoldersNoIdx); hn != nil {
		out = append(out, fmt.Sprintf("`holders` with the broker's index adopted takes %.2f× the time of `holders --no-index` on the same store (the medians' ratio%s), at %s against %s peak RSS (issue 22's target ≤ %.2f×).",
			h.wall.Seconds()/hn.wall.Seconds(), pairRatios(h.walls, hn.walls), mibOrUnknown(h.rss), mibOrUnknown(hn.rss), targetIndexRatio))
	}
	if m, mn := b.result(stepMount), b.result(stepMountNoIdx); m != nil && mn != nil {
		out = append(out, fmt.Sprintf("The mount answers first with the index adopted in %.2f× the time of `mount --no-index` on the same store (the medians' ratio%s), at %s against %s RSS at its first answer (target ≤ %.2f×).",
			m.wall.Seconds()/mn.wall.Seconds(), pairRatios(m.walls, mn.walls), mibOrUnknown(m.hwmReady), mibOrUnknown(mn.hwmReady), targetIndexRatio))
	}
	for _, step := range []string{stepLsPending, stepLsFPending} {
		if l := b.result(step); l != nil && l.floor > 0 {
			what := "`ls`"
			if step == stepLsFPending {
				what = "`ls -f`"
			}
			out = append(out, fmt.Sprintf("%s of the biggest pending/ through the mount takes %.2f× the same listing of the same names on tmpfs (%s against %s; target ≤ %.1f×); CPU: %s of ls and %s of the mount against %s of ls on tmpfs.",
				what, l.wall.Seconds()/l.floor.Seconds(), seconds(l.wall), seconds(l.floor), targetLsRatio,
				seconds(l.cpu), seconds(l.serverCPU), seconds(l.floorCPU)))
		}
	}
	for _, step := range []string{stepGrepPending, stepGrepLinked} {
		if g := b.result(step); g != nil && g.filesPerSec > 0 {
			out = append(out, fmt.Sprintf("`grep -r` through the mount (%s) reads %s files/s: %s (target ≥ %s files/s within the link limit).",
				step, thousands(int64(g.filesPerSec)), g.limit, thousands(targetGrepRate)))
		}
	}
	if k := b.result(stepKahafsGrep); k != nil && k.baseline > 0 {
		line := fmt.Sprintf("`kahafs grep` with its analysis cache warm takes %s, `grep -r` over a mount that has answered %s: %.1f× the time of kahafs grep (target ≥ %d×, warm against warm).",
			seconds(k.wall), seconds(k.baseline), k.baseline.Seconds()/k.wall.Seconds(), targetGrepRatio)
		if k.coldWall > 0 && k.coldBaseline > 0 {
			line += fmt.Sprintf(" Cold against cold: `kahafs grep --no-cache` %s, the mount's first answer + `grep -r` %s: %.1f×.",
				seconds(k.coldWall), seconds(k.coldBaseline), k.coldBaseline.Seconds()/k.coldWall.Seconds())
		}
		out = append(out, line)
	}
	p := b.cs.man.Pending
	out = append(out, fmt.Sprintf("Peak RSS of `holders` %s; budget 64 MiB + 100 B × %s pending messages = %s.",
		mibOrUnknown(h.rss), thousands(p), mib(rssBase+rssPerPending*p)))
	if m := b.result(stepMount); m != nil && m.hwmReady > 0 {
		out = append(out, fmt.Sprintf("Peak RSS of the mount at its first answer %s (same budget).", mib(m.hwmReady)))
	}
	if c := b.result(stepCompact); c != nil && c.rate > 0 {
		out = append(out, fmt.Sprintf("Compaction moves %s records/s over its whole run, %s/s in its write phase (target ≥ %s/s).",
			thousands(int64(c.rate)), thousands(int64(c.rateW)), thousands(targetCompactRate)))
	}
	if c := b.result(stepCompactCached); c != nil && c.rate > 0 {
		out = append(out, fmt.Sprintf("After `holders` has filled the analysis cache, compaction moves %s records/s over its whole run (verification by a full replay of the new journal included).",
			thousands(int64(c.rate))))
	}
	return out
}

// machine describes where the run happened.
func machine() string {
	parts := []string{fmt.Sprintf("%s × %d", cpuModel(), runtime.NumCPU()), memTotal() + " RAM"}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		parts = append(parts, "Linux "+unix.ByteSliceToString(u.Release[:]))
	}
	parts = append(parts, runtime.Version(), "kahafs "+gitRevision())
	return strings.Join(parts, ", ")
}

func cpuModel() string {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	raw, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(v), &kb)
			return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	return "? GiB"
}

func gitRevision() string {
	rev, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "(unknown revision)"
	}
	s := strings.TrimSpace(string(rev))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		s += "+changes"
	}
	return s
}

func seconds(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// thousands prints n with thin separators: 1,234,567.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// cell makes text safe inside a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
}

// writeResults replaces the generated section of BENCHMARKS.md.
func writeResults(path, report string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(raw)
	i, j := strings.Index(doc, resultsBegin), strings.Index(doc, resultsEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, resultsBegin, resultsEnd)
	}
	doc = doc[:i+len(resultsBegin)] + "\n" + report + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}

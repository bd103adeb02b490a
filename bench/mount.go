package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kahafs/kahafs/fsnode"
)

// mountAndGrep mounts the store in the background, times the first
// successful listing of the mount point, greps the whole tree for a pending
// message's id, and unmounts.
func (b *bench) mountAndGrep() []*result {
	m := &result{step: stepMount, command: "`kahafs mount --no-cache STORE MNT` until `ls MNT` answers" + b.indexSays()}
	g := &result{step: stepGrep, command: "`grep -r -F ID MNT`"}
	if !b.needs(m, "mount") {
		g.skipped = m.skipped
		return []*result{m, g}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		m.skipped = "no /dev/fuse on this machine"
		g.skipped = m.skipped
		return []*result{m, g}
	}
	mnt := filepath.Join(b.work, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		m.err = err
		return []*result{m, g}
	}
	// b.o.runs mounts, timed to their first answer (the median is
	// reported); the last one serves the grep.
	var (
		srv    *mountServer
		walls  []time.Duration
		cpus   []time.Duration
		runs   = max(b.o.runs, 1)
		broken = func(err error) []*result {
			m.err = err
			g.skipped = "the mount did not come up"
			return []*result{m, g}
		}
	)
	// with the mount-no-index row, a mount without the index just
	// before each (pairedRuns)
	var p *pairedRuns
	noIndexMnt := filepath.Join(b.work, "mnt-no-index")
	if b.pairsWith(stepMountNoIdx) {
		p = &pairedRuns{}
		b.noIndexMount = p
		p.err = os.MkdirAll(noIndexMnt, 0o755)
	}
	for i := range runs {
		if p != nil && p.err == nil {
			var s *mountServer
			if s, p.err = b.startMount(noIndexMnt, "--no-cache", "--no-index"); p.err == nil {
				p.walls, p.cpus, p.hwmReady = append(p.walls, s.ready), append(p.cpus, s.cpuAtReady), max(p.hwmReady, s.hwmAtReady)
				var rss int64
				rss, p.err = s.stop(noIndexMnt)
				p.rss = max(p.rss, rss)
			}
		}
		s, err := b.startMount(mnt, "--no-cache")
		if err != nil {
			return broken(err)
		}
		walls, cpus = append(walls, s.ready), append(cpus, s.cpuAtReady)
		m.hwmReady = max(m.hwmReady, s.hwmAtReady)
		if i == runs-1 {
			srv = s
			break
		}
		if _, err := s.stop(mnt); err != nil {
			return broken(err)
		}
	}
	m.wall, m.walls = median(walls), walls
	if len(walls) > 1 {
		m.note("median of %d mounts: %s (CPU to the first answer: %s)", len(walls), secondsList(walls), secondsList(cpus))
	} else {
		m.cpu = cpus[0]
	}
	m.note("RSS at first answer %s", mibOrUnknown(m.hwmReady))
	if p != nil {
		m.note("each mount just after one of the mount-no-index row's")
	}
	if b.wants(stepGrep) {
		b.grep(g, mnt)
	} else {
		g.skipped = "not selected"
	}
	ls := &result{step: stepLsPending, command: "`ls MNT/by-destination/queue/Q/pending` (Q: the queue with the most pending messages)"}
	lsf := &result{step: stepLsFPending, command: "`ls -f MNT/by-destination/queue/Q/pending` on a fresh mount"}
	gp := &result{step: stepGrepPending, command: "`grep -r -F TEXT MNT/by-destination/queue/Q/pending` (Q: the queue with the second most; TEXT in no file)"}
	out := []*result{m, g}
	if slices.ContainsFunc([]string{stepLsPending, stepGrepPending}, b.wants) {
		srv.settle()
	}
	if b.wants(stepLsPending) {
		b.lsPending(ls, lsf, srv, mnt)
		out = append(out, ls, lsf)
	}
	if b.wants(stepGrepPending) {
		b.grepPending(gp, srv, mnt)
		out = append(out, gp)
	}
	m.rss, m.err = srv.stop(mnt)
	m.note("peak RSS over the whole mount, grep included")
	return out
}

// busiestQueues are the generated queues by pending messages, most first.
func (b *bench) busiestQueues() []string {
	var qs []string
	for q := range b.cs.man.QueuePending {
		qs = append(qs, q)
	}
	slices.SortFunc(qs, func(x, y string) int {
		if c := cmp.Compare(b.cs.man.QueuePending[y], b.cs.man.QueuePending[x]); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	return qs
}

// lsPending lists the pending/ directory of the queue with the most
// pending messages (a DLQ nobody reads) as `ls` does (sorted) on the mount
// mnt, and unsorted (`ls -f`) on a fresh mount of its own (the kernel
// keeps a big directory's listing: a second one on mnt asks kahafs
// nothing), each against the same names on tmpfs (floorNames): issue 22's
// target is within 1.5× of tmpfs. A listing of a million names varies
// by a third from one run to the next on tmpfs too (ls's own sorting and
// memory), so with -runs N each is timed N times, each time on a fresh
// mount and right after on tmpfs, and the rows give the medians (every
// time in the notes).
func (b *bench) lsPending(r, rf *result, srv *mountServer, mnt string) {
	qs := b.busiestQueues()
	if len(qs) == 0 {
		r.skipped = "no queue has pending messages"
		rf.skipped = r.skipped
		return
	}
	rel := filepath.Join("by-destination", "queue", qs[0], "pending")
	dir := filepath.Join(mnt, rel)
	var lines countWriter
	before := srv.cpu()
	c, err := b.runChild(&lines, nil, "ls", []string{dir})
	sorted := lsSamples{}
	sorted.add(c, srv.cpu()-before)
	r.command = "`ls MNT/by-destination/queue/" + qs[0] + "/pending`"
	rf.command = "`ls -f MNT/by-destination/queue/" + qs[0] + "/pending` on a fresh mount"
	if err != nil {
		r.err = err
		rf.skipped = "the sorted listing failed"
		return
	}
	entries := lines.n
	// ls's own share: the same listing again, answered by the kernel's
	// cache of it (a big directory is kept from its second opening on,
	// which fills the cache: then no request reaches kahafs), sorted as
	// the timed one and unsorted (ls -f)
	fill, err0 := b.runChild(io.Discard, nil, "ls", []string{"-f", dir})
	again, err := b.runChild(io.Discard, nil, "ls", []string{dir})
	unsorted, err2 := b.runChild(io.Discard, nil, "ls", []string{"-f", dir})
	cacheNote := ""
	if err0 == nil && err == nil && err2 == nil {
		cacheNote = fmt.Sprintf("the second listing fills the kernel's cache: %s (ls -f); ls's own share — a later listing, from that cache: %s sorted, %s unsorted (ls -f)", seconds(fill.wall), seconds(again.wall), seconds(unsorted.wall))
	}
	floor, n, err := b.floorNames(dir)
	if err != nil {
		r.note("no floor listing: %v", err)
	}
	if floor != "" {
		defer os.RemoveAll(floor)
	}
	var sortedFloor, unsortedFloor, unsortedMount lsSamples
	for i := range max(b.o.runs, 1) {
		// a fresh mount for each further sorted listing
		if i > 0 {
			if r.err = sorted.fresh(b, rel, ""); r.err != nil {
				break
			}
		}
		if floor != "" {
			sortedFloor.floor(b, floor, "")
		}
		if rf.err = unsortedMount.fresh(b, rel, "-f"); rf.err != nil {
			break
		}
		if floor != "" {
			unsortedFloor.floor(b, floor, "-f")
		}
	}
	sorted.set(r)
	unsortedMount.set(rf)
	r.note("%s entries (%s pending messages, a .json and a .body each)", thousands(int64(entries)), thousands(b.cs.man.QueuePending[qs[0]]))
	rf.note("%s entries (with . and ..)", thousands(int64(entries)))
	if cacheNote != "" {
		r.note("%s", cacheNote)
	}
	sorted.notes(r, "the first listing of a mount")
	unsortedMount.notes(rf, "the first listing of a fresh mount")
	for _, x := range []struct {
		r     *result
		f     *lsSamples
		flags string
	}{{r, &sortedFloor, "ls"}, {rf, &unsortedFloor, "ls -f"}} {
		if len(x.f.walls) == 0 || !x.r.ok() {
			continue
		}
		x.r.floor, x.r.floorCPU = median(x.f.walls), median(x.f.cpus)
		x.r.note("the same %s names as empty files in %s: `%s` %s (CPU %s), this listing %.2f× that (target ≤ %.1f×)",
			thousands(int64(n)), filepath.Dir(floor), x.flags, seconds(x.r.floor), seconds(x.r.floorCPU),
			x.r.wall.Seconds()/x.r.floor.Seconds(), targetLsRatio)
		x.f.notes(x.r, "on tmpfs, each right after the mount's")
	}
}

// lsSamples are the times of one listing run again: its wall and CPU
// times, and the mount's CPU time meanwhile (none on tmpfs).
type lsSamples struct {
	walls, cpus, server []time.Duration
	rss                 int64
	err                 error
}

func (l *lsSamples) add(c child, server time.Duration) {
	l.walls, l.cpus, l.server = append(l.walls, c.wall), append(l.cpus, c.cpu), append(l.server, server)
	l.rss = max(l.rss, c.rss)
}

// fresh times ls (with flags) of rel on a fresh mount (lsFresh).
func (l *lsSamples) fresh(b *bench, rel, flags string) error {
	c, cpu, err := b.lsFresh(rel, flags)
	if err == nil {
		l.add(c, cpu)
	}
	return err
}

// floor times ls (with flags) of the floor directory.
func (l *lsSamples) floor(b *bench, dir, flags string) {
	args := []string{dir}
	if flags != "" {
		args = []string{flags, dir}
	}
	c, err := b.runChild(io.Discard, nil, "ls", args)
	if err != nil {
		l.err = err
		return
	}
	l.add(c, 0)
}

// set gives r the medians.
func (l *lsSamples) set(r *result) {
	if len(l.walls) == 0 {
		return
	}
	r.wall, r.cpu, r.serverCPU, r.rss = median(l.walls), median(l.cpus), median(l.server), l.rss
	r.note("the mount's CPU meanwhile %s", seconds(r.serverCPU))
}

// notes lists the samples, when there are several.
func (l *lsSamples) notes(r *result, what string) {
	if len(l.walls) > 1 {
		r.note("median of %d (%s): %s (CPU %s)", len(l.walls), what, secondsList(l.walls), secondsList(l.cpus))
	}
}

// lsFresh times `ls [flags] MNT/rel` on a fresh mount, and returns the
// mount's CPU time meanwhile.
func (b *bench) lsFresh(rel, flags string) (child, time.Duration, error) {
	mnt := filepath.Join(b.work, "mnt-ls")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return child{}, 0, err
	}
	srv, err := b.startMount(mnt, "--no-cache")
	if err != nil {
		return child{}, 0, err
	}
	srv.settle()
	args := []string{filepath.Join(mnt, rel)}
	if flags != "" {
		args = []string{flags, args[0]}
	}
	before := srv.cpu()
	c, err := b.runChild(io.Discard, nil, "ls", args)
	cpu := srv.cpu() - before
	if _, serr := srv.stop(mnt); serr != nil && err == nil {
		err = serr
	}
	return c, cpu, err
}

// floorNames makes the names of dir again in a directory of empty files
// on the machine's fastest file system (tmpfs, /dev/shm, where there is
// one): listed by ls, what ls itself takes for a directory of that size
// with no file system work to speak of, the floor under the timed
// listings. The names stream from an untimed listing (the bench holds
// none of them: see spawnArg). It returns the directory and how many
// names it holds.
func (b *bench) floorNames(dir string) (string, int, error) {
	floor, err := b.floorDir("kahafs-bench-ls-")
	if err != nil {
		return "", 0, err
	}
	n, err := copyNames(dir, floor)
	if err != nil {
		os.RemoveAll(floor)
		return "", 0, err
	}
	return floor, n, nil
}

// floorDir makes a new directory on tmpfs (/dev/shm, or the bench's work
// directory where there is none), for a floor's copy.
func (b *bench) floorDir(prefix string) (string, error) {
	parent := "/dev/shm"
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		parent = b.work
	}
	return os.MkdirTemp(parent, prefix)
}

// copyNames makes an empty file in to for every entry of from, and
// returns how many.
func copyNames(from, to string) (int, error) {
	return eachName(from, func(name string) error {
		fd, err := syscall.Open(filepath.Join(to, name), syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	})
}

// eachName calls fn with the name of every entry of dir, holding a few
// thousand names at a time (the bench holds no big listing: see
// spawnArg), and returns how many it passed.
func eachName(dir string, fn func(name string) error) (int, error) {
	d, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(4096)
		for _, name := range names {
			if err := fn(name); err != nil {
				return n, err
			}
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// grepPending reads every file of the pending/ directory of the queue
// with the second most pending messages; the rate is files per second,
// printed with the link limit beside it: a directory past it is listed by
// name only, and each file costs a LOOKUP (see fsnode's dirhandle.go).
func (b *bench) grepPending(r *result, srv *mountServer, mnt string) {
	qs := b.busiestQueues()
	if len(qs) < 2 {
		r.skipped = "fewer than two queues have pending messages"
		return
	}
	q := qs[1]
	r.command = "`grep -r -F TEXT MNT/by-destination/queue/" + q + "/pending` (TEXT in no file)"
	b.grepFiles(r, srv, filepath.Join(mnt, "by-destination", "queue", q, "pending"), fsnode.DefaultKernelCache)
}

// grepFiles greps dir for a text in no file (every file read to its end)
// and notes the files read, files/s and the link limit of a mount whose
// kernel cache is kcache.
func (b *bench) grepFiles(r *result, srv *mountServer, dir string, kcache int) {
	before := srv.cpu()
	c, err := b.grepNowhere(dir)
	r.wall, r.rss, r.cpu, r.err = c.wall, c.rss, c.cpu, err
	mountCPU := srv.cpu() - before
	if err != nil {
		return
	}
	files, err := eachName(dir, func(string) error { return nil }) // after: a listing before would be grep's cache
	if err != nil {
		r.err = err
		return
	}
	limit := linkLimit(kcache)
	within := "within"
	if files > limit {
		within = "PAST"
	}
	r.filesPerSec = float64(files) / r.wall.Seconds()
	r.limit = fmt.Sprintf("%s files, %s the link limit of %s entries (3/4 of the mount's kernel cache of %s nodes)",
		thousands(int64(files)), within, thousands(int64(limit)), thousands(int64(kcache)))
	r.note("%s files read, %s files/s; %s the link limit of %s entries (3/4 of the mount's kernel cache of %s nodes)",
		thousands(int64(files)), thousands(int64(r.filesPerSec)), within, thousands(int64(limit)), thousands(int64(kcache)))
	r.note("the mount's CPU meanwhile %s: %.0f µs a file, grep's %.0f µs", seconds(mountCPU),
		mountCPU.Seconds()*1e6/float64(max(files, 1)), r.cpu.Seconds()*1e6/float64(max(files, 1)))
}

// grepNowhere runs grep -r over dir for a text in no file, so that every
// file is read to its end (grep's status 1, nothing found, is success).
func (b *bench) grepNowhere(dir string) (child, error) {
	var lines countWriter
	return b.runChild(&lines, nil, "grep", []string{"-r", "-F", "-o", "-e", "kahafs-no-such-text", dir}, 1)
}

// linkLimit is how many entries of a directory a listing looks up on a
// mount whose kernel cache is kcache (fsnode's Snapshot.linkLimit).
func linkLimit(kcache int) int { return kcache / 4 * 3 }

// grepLinkedStep greps the grep-pending row's directory on a mount whose
// kernel cache (--kernel-cache) puts it within the link limit, when the
// default puts it past: the rate of a walk through a directory the
// listing looks up whole and whose content it pushes (issue 22's target
// ≥ 50 k files/s).
func (b *bench) grepLinkedStep() []*result {
	r := &result{step: stepGrepLinked, command: "`grep -r -F TEXT MNT/by-destination/queue/Q/pending` on a mount with `--kernel-cache K`, Q within the link limit"}
	qs := b.busiestQueues()
	if len(qs) < 2 {
		r.skipped = "fewer than two queues have pending messages"
		return []*result{r}
	}
	if !b.canMount(r) {
		return []*result{r}
	}
	q := qs[1]
	entries := int(2*b.cs.man.QueuePending[q]) + 2 // a .json and a .body each (an upper bound)
	if entries <= linkLimit(fsnode.DefaultKernelCache) {
		r.skipped = fmt.Sprintf("%s's pending/ (%s entries at most) is within the default link limit (%s): the grep-pending row is this one",
			q, thousands(int64(entries)), thousands(int64(linkLimit(fsnode.DefaultKernelCache))))
		return []*result{r}
	}
	kcache := (entries/3+1)*4 + 4096
	r.command = fmt.Sprintf("`grep -r -F TEXT MNT/by-destination/queue/%s/pending` on a mount with `--kernel-cache %d` (within the link limit)", q, kcache)
	mnt := filepath.Join(b.work, "mnt-linked")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		r.err = err
		return []*result{r}
	}
	srv, err := b.startMount(mnt, "--no-cache", "--kernel-cache", strconv.Itoa(kcache))
	if err != nil {
		r.err = err
		return []*result{r}
	}
	srv.settle()
	dir := filepath.Join(mnt, "by-destination", "queue", q, "pending")
	b.grepFiles(r, srv, dir, kcache)
	var cp floorCopy
	if r.err == nil {
		cp = b.copyFloor(r, dir)
		if cp.dir != "" {
			defer os.RemoveAll(cp.dir)
		}
	}
	// The floors are grepped with the mount stopped: a server left
	// running beside them (its kernel cache, its memory freed) slowed the
	// first walk after it by up to half.
	rss, err := srv.stop(mnt)
	if err == nil {
		r.note("the mount's peak RSS %s", mibOrUnknown(rss))
	} else if r.err == nil {
		r.err = err
	}
	if cp.dir != "" {
		b.grepFloor(r, cp)
	}
	return []*result{r}
}

// grepFloorRuns is how many times grepFloor greps the copy on tmpfs.
const grepFloorRuns = 3

// floorCopy is a copy on tmpfs of the files of a directory of the mount.
type floorCopy struct {
	dir  string // "" when there is none
	n    int
	size int64
}

// copyFloor copies the files of dir (read through the mount, untimed) to
// tmpfs, for grepFloor.
func (b *bench) copyFloor(r *result, dir string) floorCopy {
	floor, err := b.floorDir("kahafs-bench-grep-")
	if err != nil {
		r.note("no copy on tmpfs: %v", err)
		return floorCopy{}
	}
	var size int64
	n, err := eachName(dir, func(name string) error {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		size += int64(len(data))
		return os.WriteFile(filepath.Join(floor, name), data, 0o644)
	})
	if err != nil {
		os.RemoveAll(floor)
		r.note("no copy on tmpfs: %v", err)
		return floorCopy{}
	}
	return floorCopy{dir: floor, n: n, size: size}
}

// grepFloor greps the copy on tmpfs as r grepped the mount: the same walk
// with no FUSE under it, the floor under the rate of grep -r through the
// mount. It notes the median of grepFloorRuns runs and the mount's walk
// against it, then the FUSE floor (fuseFloor).
func (b *bench) grepFloor(r *result, cp floorCopy) {
	floor, n, size := cp.dir, cp.n, cp.size
	var walls []time.Duration
	for range grepFloorRuns {
		c, err := b.grepNowhere(floor)
		if err != nil {
			r.note("grep -r on tmpfs: %v", err)
			return
		}
		walls = append(walls, c.wall)
	}
	med := median(walls)
	r.note("the same %s files (%s) on tmpfs: grep -r %s, %s files/s (median of %d: %s); through the mount %.2f× that (issue 22's 50 k files/s is %.2f× of tmpfs here)",
		thousands(int64(n)), mib(size), seconds(med), thousands(int64(float64(n)/med.Seconds())), grepFloorRuns, secondsList(walls),
		r.wall.Seconds()/med.Seconds(), (float64(n)/50000)/med.Seconds())
	b.fuseFloor(r, floor, n)
}

// fuseFloor serves the copy on tmpfs through the kernel with
// bench/fusefloor (go-fuse's raw protocol, the content in memory, pushed
// as kahafs pushes it: a FUSE server with nothing to do) and greps it as
// r grepped the mount, on a fresh mount each time (median of
// grepFloorRuns): the floor under any go-fuse server of that directory on
// this machine, against which kahafs's walk and issue 22's 50 k files/s
// are noted.
func (b *bench) fuseFloor(r *result, floor string, n int) {
	bin := filepath.Join(b.work, "fusefloor")
	cmd := exec.Command("go", "build", "-o", bin, "./bench/fusefloor")
	cmd.Dir = b.root
	if out, err := cmd.CombinedOutput(); err != nil {
		r.note("no FUSE floor: go build ./bench/fusefloor: %v: %s", err, firstLine(string(out)))
		return
	}
	mnt := filepath.Join(b.work, "mnt-floor")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		r.note("no FUSE floor: %v", err)
		return
	}
	var walls, cpus []time.Duration
	for range grepFloorRuns {
		wall, cpu, err := b.grepFuseFloor(bin, floor, mnt)
		if err != nil {
			r.note("no FUSE floor: %v", err)
			return
		}
		walls, cpus = append(walls, wall), append(cpus, cpu)
	}
	med, cpu := median(walls), median(cpus)
	r.note("the same files served from memory by a FUSE server with nothing to do but answer and push them (bench/fusefloor, go-fuse's raw protocol): grep -r %s, %s files/s (median of %d fresh mounts: %s), the server's CPU %.0f µs a file; kahafs's walk %.2f× that; issue 22's 50 k files/s is %.2f× of it",
		seconds(med), thousands(int64(float64(n)/med.Seconds())), grepFloorRuns, secondsList(walls),
		cpu.Seconds()*1e6/float64(max(n, 1)), r.wall.Seconds()/med.Seconds(), (float64(n)/50000)/med.Seconds())
}

// grepFuseFloor mounts dir with the fusefloor binary bin at mnt, greps it
// as grepFiles does, and stops it: the walk's wall time and the server's
// CPU time meanwhile.
func (b *bench) grepFuseFloor(bin, dir, mnt string) (time.Duration, time.Duration, error) {
	srv := exec.Command(bin, "-push", dir, mnt)
	out := &signalWriter{prefix: []byte("serving "), ready: make(chan struct{})}
	stderr := newLockedTail(4096)
	srv.Stdout, srv.Stderr = out, stderr
	if err := srv.Start(); err != nil {
		return 0, 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Process.Kill()
			<-exited
			_ = exec.Command("fusermount", "-u", "-z", mnt).Run()
		}
	}()
	select {
	case <-out.ready:
	case err := <-exited:
		stopped = true
		return 0, 0, fmt.Errorf("fusefloor did not mount: %v: %s", err, stderr)
	case <-time.After(b.o.timeout):
		return 0, 0, fmt.Errorf("fusefloor did not mount within %s", b.o.timeout)
	}
	pid := srv.Process.Pid
	before := cpuTicks(pid)
	c, err := b.grepNowhere(mnt)
	cpu := time.Duration(cpuTicks(pid)-before) * time.Second / clockTicks
	if err != nil {
		return 0, 0, fmt.Errorf("grep -r over fusefloor: %v", err)
	}
	_ = srv.Process.Signal(syscall.SIGTERM)
	stopped = true
	if err := <-exited; err != nil {
		return 0, 0, fmt.Errorf("fusefloor: %v: %s", err, stderr)
	}
	return c.wall, cpu, nil
}

// signalWriter closes ready once what is written to it starts with
// prefix (a server's first line saying it serves).
type signalWriter struct {
	mu     sync.Mutex
	prefix []byte
	got    []byte
	ready  chan struct{}
	done   bool
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.got = append(w.got, p[:min(len(p), len(w.prefix)-len(w.got))]...)
		if len(w.got) == len(w.prefix) {
			w.done = true
			if bytes.Equal(w.got, w.prefix) {
				close(w.ready)
			}
		}
	}
	return len(p), nil
}

// mountServer is a running `kahafs mount`.
type mountServer struct {
	cmd        *exec.Cmd
	stderr     *lockedTail
	exited     chan struct{}
	waitErr    error
	ready      time.Duration
	hwmAtReady int64
	cpuAtReady time.Duration // user + system time until the first answer
}

func (b *bench) startMount(mnt string, flags ...string) (*mountServer, error) {
	s := &mountServer{stderr: newLockedTail(4096), exited: make(chan struct{})}
	args := append(append([]string{"mount", "--max-file-length", b.fileLengthArg()}, flags...), b.cs.store, mnt)
	s.cmd = exec.Command(b.bin, args...)
	s.cmd.Stderr = s.stderr
	start := time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	if err := s.waitListing(mnt, b.o.timeout); err != nil {
		s.kill(mnt)
		return nil, err
	}
	s.ready = time.Since(start)
	s.hwmAtReady = vmHWM(s.cmd.Process.Pid)
	s.cpuAtReady = s.cpu()
	return s, nil
}

// waitListing waits until a listing of the mount point shows entries
// (the mount point itself is an empty directory). It does not poll while
// the mount reads the store: on two cores a poller waking every
// millisecond slows the very reading it times (by 15-30 % here). It waits
// for the mount's "ready" line, then lists; the listing could have
// answered at most the few microseconds of printing that line earlier.
func (s *mountServer) waitListing(mnt string, timeout time.Duration) error {
	deadline := time.After(timeout)
	select {
	case <-s.stderr.ready:
	case <-s.exited:
		return fmt.Errorf("kahafs mount exited before answering: %v: %s", s.waitErr, s.stderr)
	case <-deadline:
		return fmt.Errorf("kahafs mount did not answer within %v: %s", timeout, s.stderr)
	}
	for {
		if ents, err := os.ReadDir(mnt); err == nil && len(ents) > 0 {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("kahafs mount exited before answering: %v: %s", s.waitErr, s.stderr)
		case <-deadline:
			return fmt.Errorf("kahafs mount said ready but did not list within %v: %s", timeout, s.stderr)
		case <-time.After(time.Millisecond):
		}
	}
}

// stop asks the server to unmount (SIGTERM) and returns its peak RSS:
// its VmHWM just before, since wait4's figure would count the bench's own
// peak (see spawnArg) and an unmount adds nothing to it.
func (s *mountServer) stop(mnt string) (int64, error) {
	rss := vmHWM(s.cmd.Process.Pid)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		s.kill(mnt)
		return 0, fmt.Errorf("kahafs mount did not exit within a minute of SIGTERM: %s", s.stderr)
	}
	var ee *exec.ExitError
	if s.waitErr != nil && !errors.As(s.waitErr, &ee) {
		return rss, s.waitErr
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		return rss, fmt.Errorf("kahafs mount exited with status %d: %s", code, s.stderr)
	}
	return rss, nil
}

// settle waits until the mount has done the work it starts after its
// first answer (the by-message-id index, built on a goroutine), so that a
// row timed on it measures its own requests: until its CPU time has not
// grown for 300 ms, at most 30 s. It returns how long it waited.
func (s *mountServer) settle() time.Duration {
	start := time.Now()
	last, still := int64(-1), 0
	for time.Since(start) < 30*time.Second && still < 3 {
		t := cpuTicks(s.cmd.Process.Pid)
		if t == last {
			still++
		} else {
			still = 0
		}
		last = t
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// cpu is the mount's user and system time so far.
func (s *mountServer) cpu() time.Duration {
	return time.Duration(max(cpuTicks(s.cmd.Process.Pid), 0)) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// cpuTicks is a process's user and system time in clock ticks (-1 if
// unknown).
func cpuTicks(pid int) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// the fields after the command name, which is in parentheses
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	k, err2 := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	if err1 != nil || err2 != nil {
		return -1
	}
	return u + k
}

// kill ends a server that does not answer and detaches its mount.
func (s *mountServer) kill(mnt string) {
	_ = s.cmd.Process.Kill()
	<-s.exited
	_ = exec.Command("fusermount", "-u", "-z", mnt).Run()
}

// grep reads the whole mounted tree looking for one pending message's id.
func (b *bench) grep(r *result, mnt string) {
	id := b.cs.man.SampleID
	if _, err := exec.LookPath("grep"); err != nil || id == "" {
		r.skipped = "no grep, or no pending message to look for"
		return
	}
	var lines countWriter
	c, err := b.runChild(&lines, nil, "grep", []string{"-r", "-F", "-o", "-e", id, mnt}, 1, 2)
	r.wall, r.rss, r.cpu, r.err = c.wall, c.rss, c.cpu, err
	r.note("%d matches of a pending message's id", lines.n)
	if c.status == 2 {
		r.note("grep reported errors: %s", firstLine(c.stderr))
	}
}

// countWriter counts lines.
type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) {
	w.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

type lockedTail struct {
	mu    sync.Mutex
	t     tailBuffer
	ready chan struct{} // closed once a line starting "ready: " was written
	seen  bool
}

func newLockedTail(max int) *lockedTail {
	return &lockedTail{t: tailBuffer{max: max}, ready: make(chan struct{})}
}

func (l *lockedTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.t.Write(p)
	if !l.seen {
		if out := l.t.String(); strings.HasPrefix(out, "ready: ") || strings.Contains(out, "\nready: ") {
			l.seen = true
			close(l.ready)
		}
	}
	return n, err
}

func (l *lockedTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.t.String()
}

// vmHWM is a running process's peak resident set so far (0 if unknown).
func vmHWM(pid int) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func mibOrUnknown(n int64) string {
	if n <= 0 {
		return "unknown"
	}
	return mib(n)
}

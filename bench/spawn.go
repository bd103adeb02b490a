package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Every timed child is started through a small copy of the bench
// (spawnArg), because a child's peak RSS as wait4 reports it (ru_maxrss)
// counts the address space it was exec'd from: Go starts a child with
// vfork (CLONE_VM), and at exec Linux takes the peak of the address space
// left, the bench's own, as the child's. A bench holding a listing of a
// million names made a compaction that peaked at 100 MiB read 196 MiB. The
// spawner is a fresh process of a few MiB: what the child's peak reads
// below that is the spawner's, and nothing measured is that small.
const spawnArg = "-kahafs-bench-spawn"

// spawnReportFD is the spawner's descriptor for its report: the child's
// wall time and peak RSS, in nanoseconds and bytes, on one line.
const spawnReportFD = 3

// spawnMain is the spawner: it runs args with the spawner's standard
// files and environment, passes on the signals that stop it, takes the
// child with it when it is killed, reports on spawnReportFD and exits
// with the child's status (128 + the signal that killed it).
func spawnMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "bench spawn: no command")
		return 2
	}
	syscall.CloseOnExec(spawnReportFD) // the report is the spawner's alone
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The child dies with the spawner (a timeout kills the spawner), which
	// Linux tells by the thread that started it: this one, kept.
	runtime.LockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "bench spawn:", err)
		return 127
	}
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	wall := time.Since(start)
	ps := cmd.ProcessState
	report := os.NewFile(spawnReportFD, "spawn report")
	fmt.Fprintf(report, "%d %d %d\n", wall.Nanoseconds(), maxRSS(ps), cpuTime(ps).Nanoseconds())
	report.Close()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// spawned makes the command that runs name args through the spawner,
// killed when ctx is done, and the reader of its report (to read once it
// has exited; close it then).
func spawned(ctx context.Context, name string, args []string) (*exec.Cmd, *os.File, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("the bench's own binary, to start children from: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{spawnArg, name}, args...)...)
	cmd.ExtraFiles = []*os.File{w} // descriptor 3: spawnReportFD
	return cmd, r, nil
}

// readSpawnReport reads the spawner's report (ok false when it wrote none:
// it was killed, or could not start the child).
func readSpawnReport(r *os.File) (rep spawnReport, ok bool) {
	line, _ := bufio.NewReader(r).ReadString('\n')
	f := strings.Fields(line)
	if len(f) != 3 {
		return rep, false
	}
	var n [3]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return rep, false
		}
		n[i] = v
	}
	return spawnReport{wall: time.Duration(n[0]), rss: n[1], cpu: time.Duration(n[2])}, true
}

// spawnReport is what the spawner measured of its child.
type spawnReport struct {
	wall time.Duration
	rss  int64         // peak RSS in bytes
	cpu  time.Duration // user + system time
}

// cpuTime is a finished child's user and system time.
func cpuTime(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }

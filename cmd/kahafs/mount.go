package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/replaycache"
	kstore "github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

type mountFlags struct {
	allowOther  bool
	nonempty    bool
	analysis    analysisFlags
	refresh     time.Duration
	debug       bool
	rw          bool
	profile     profileFlags
	kernelCache int // hidden: fsnode.Options.KernelCache
}

func newMountCmd() *cobra.Command {
	var f mountFlags
	cmd := &cobra.Command{
		Use:   "mount STORE MOUNTPOINT",
		Short: "Serve the store read-only as a tree of files (FUSE)",
		Long: `mount reads the KahaDB store in STORE and serves it at MOUNTPOINT as a
read-only tree: by-file/ (every command of every data file as JSON, holders),
by-destination/ (queues, topics, durable subscriptions and their pending
messages in delivery order), by-transaction/, pinned, free, summary.json and a
README that explains the tree and the escaping of names.

mount stays in the foreground: it prints "ready" on stderr once the tree can
be used, re-reads the store on SIGHUP (and every --refresh interval when the
data files changed), and unmounts on SIGINT or SIGTERM (a second signal
detaches a busy mount lazily). Nothing in STORE is written; a running broker's
store can be mounted (a half-written tail is the end of the data).

MOUNTPOINT must be an empty directory (--nonempty mounts over one that is not,
hiding its contents while mounted).

Only the mounting user can see the tree unless --allow-other is given (which
needs user_allow_other in /etc/fuse.conf for non-root users).

The analysis is kept in a cache outside STORE, as for holders (--cache-dir,
--no-cache): a second mount of an unchanged store reads no journal, a refresh
of a store that grew reads only what was appended.

With --rw a file "control" appears at the root: writing "compact" (or
"compact --dry-run") to it runs an offline compaction of STORE (see kahafs
compact; the broker must be stopped); reading it shows the progress and the
last result. After a compaction the tree shows the new store. Everything
else stays read-only.`,
		Args: withUsage(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMount(cmd, args[0], args[1], f)
		},
	}
	cmd.Flags().BoolVar(&f.allowOther, "allow-other", false, "let other users see the mount (FUSE allow_other)")
	cmd.Flags().BoolVar(&f.nonempty, "nonempty", false, "mount over a directory that is not empty (its contents are hidden while mounted)")
	cmd.Flags().DurationVar(&f.refresh, "refresh", 0, "re-read the store this often when its data files changed (0: only on SIGHUP)")
	f.analysis.add(cmd, replayFlags)
	cmd.Flags().BoolVar(&f.debug, "debug", false, "log every FUSE request")
	cmd.Flags().BoolVar(&f.rw, "rw", false, "add the control file that runs compactions")
	f.profile.add(cmd)
	cmd.Flags().IntVar(&f.kernelCache, "kernel-cache", 0, "nodes the kernel may keep below the root (0: default, -1: no bound)")
	_ = cmd.Flags().MarkHidden("kernel-cache")
	return cmd
}

func runMount(cmd *cobra.Command, store, mountpoint string, f mountFlags) error {
	stderr := cmd.ErrOrStderr()
	// Lines said while the bar is drawn go through it (it steps aside).
	bar := newProgressBar(stderr)
	logger := log.New(bar, "kahafs: ", log.LstdFlags)
	// Fail before reading a large store when the mount cannot work.
	if err := fsnode.CheckFUSE(); err != nil {
		return err
	}
	abs, err := fsnode.CheckMountpoint(mountpoint, store)
	if err != nil {
		return err
	}
	if !f.nonempty {
		if err := checkEmpty(abs); err != nil {
			return err
		}
	}
	// Signals are caught from here on, so that a signal sent as soon as
	// "ready" is printed is never the default (killing) action.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	stopProfiles, err := f.profile.start()
	if err != nil {
		return err
	}
	defer stopProfiles(logger)

	if _, live := f.analysis.checkLive(cmd, store); live != "" {
		fmt.Fprintln(stderr, live)
	}
	start := time.Now()
	var fsys *fsnode.FS
	opts := treeOptions(f.analysis, logger, bar)
	opts.AllowOther, opts.Debug, opts.KernelCache = f.allowOther, f.debug, f.kernelCache
	opts.Control = mountController(store, f, stderr)
	fsys, err = fsnode.Open(store, opts)
	bar.finish()
	if err != nil {
		return err
	}
	if err := fsys.Mount(mountpoint); err != nil {
		return err
	}
	s := fsys.Snapshot()
	warnMaxFileLength(stderr, s.MaxFileLength())
	fmt.Fprintf(stderr, "ready: %s mounted at %s (%d data files, %d commands, read in %s%s); to unmount: Ctrl-C, kill %d or fusermount3 -u %s\n",
		fsys.Dir(), fsys.Mountpoint(), s.Files(), s.Commands(), time.Since(start).Round(time.Millisecond), cacheNote(s),
		os.Getpid(), fsys.Mountpoint())

	servingHeap()
	gone := make(chan struct{})
	go func() {
		fsys.Wait()
		close(gone)
	}()
	var tick <-chan time.Time
	if f.refresh > 0 {
		t := time.NewTicker(f.refresh)
		defer t.Stop()
		tick = t.C
	}
	refresh := func(force bool) {
		took := time.Now()
		analysingHeap()
		changed, err := fsys.Refresh(force)
		servingHeap()
		bar.finish()
		switch {
		case err != nil:
			logger.Printf("refresh failed, still showing snapshot %d: %v", fsys.Snapshot().Gen, err)
		case changed:
			s := fsys.Snapshot()
			fmt.Fprintf(stderr, "refreshed: snapshot %d (%d data files, %d commands, read in %s%s)\n",
				s.Gen, s.Files(), s.Commands(), time.Since(took).Round(time.Millisecond), cacheNote(s))
		}
	}
	stopping := false
	mnt := fsys.Mountpoint()
	for {
		select {
		case <-gone:
			fmt.Fprintf(stderr, "unmounted %s\n", mnt)
			return nil
		case <-tick:
			refresh(false)
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				refresh(true)
				continue
			}
			if stopping {
				// Second signal: detach now, serve the processes still
				// inside until they leave.
				if err := lazyUnmount(mnt); err != nil {
					logger.Printf("lazy unmount: %v", err)
					continue
				}
				fmt.Fprintf(stderr, "detached %s; exiting once no process uses it\n", mnt)
				continue
			}
			stopping = true
			if err := fsys.Unmount(); err != nil {
				logger.Printf("%v; send the signal again to detach lazily", err)
				continue
			}
		}
	}
}

// checkEmpty refuses a mountpoint with entries: the mount would hide them
// until it is unmounted.
func checkEmpty(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: mountpoint %s: %v", fsnode.ErrMountpoint, dir, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(3)
	if len(names) == 0 {
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: mountpoint %s: %v", fsnode.ErrMountpoint, dir, err)
		}
		return nil
	}
	more := ""
	if len(names) > 2 {
		names, more = names[:2], ", …"
	}
	return fmt.Errorf("%w: mountpoint %s is not empty (%s%s): the mount would hide its contents; use an empty directory, or --nonempty to mount over them", fsnode.ErrMountpoint, dir, strings.Join(names, ", "), more)
}

// lazyUnmount detaches a busy mount (fusermount3 -u -z).
func lazyUnmount(mnt string) error {
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		if bin, err = exec.LookPath("fusermount"); err != nil {
			return errors.New("fusermount3 not found in PATH")
		}
	}
	out, err := exec.Command(bin, "-u", "-z", mnt).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s -u -z %s: %v: %s", bin, mnt, err, out)
	}
	return nil
}

// treeOptions are the options of the tree a mount (and ls, cat, find)
// serves, as the analysis flags say; logger and the progress bar are the
// command's.
func treeOptions(a analysisFlags, logger *log.Logger, bar *progressBar) fsnode.Options {
	ao := a.options(bar)
	ao.Progress = bar.reading
	ao.IndexProblem = nil // the tree logs them to logger
	return fsnode.Options{Options: ao, Logger: logger}
}

// cacheNote tells in the ready and refreshed lines how the snapshot used
// the analysis cache.
func cacheNote(s *fsnode.Snapshot) string {
	switch o := s.Cache(); o {
	case replaycache.Hit, replaycache.Tail, replaycache.Miss:
		return ", cache " + string(o)
	}
	return ""
}

// mountController wires the control file of a --rw mount to compaction.
func mountController(store string, f mountFlags, stderr io.Writer) fsnode.Controller {
	if !f.rw {
		return nil
	}
	return func(args []string, progress func(string)) (string, bool, error) {
		dry := len(args) > 1 && args[1] == "--dry-run"
		ao := f.analysis.options(stderr)
		opts := compact.Options{DryRun: dry, MaxFileLength: ao.MaxFileLength, Progress: progress, Cache: ao.Cache}
		var b strings.Builder
		if l, err := kstore.Locate(store); err == nil && l.Multi() {
			lr, err := compact.CompactLayout(store, opts)
			if lr != nil {
				writeLayoutCompactText(&b, stderr, lr)
			}
			if err != nil {
				return "", lr != nil && len(lr.Stores) > 0 && !dry, fmt.Errorf("%s%w", b.String(), err)
			}
			return b.String(), !dry, nil
		}
		rep, err := compact.Compact(store, opts)
		if err != nil {
			return "", false, err
		}
		writeCompactReport(&b, rep)
		return b.String(), !dry, nil
	}
}

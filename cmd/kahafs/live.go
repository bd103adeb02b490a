package main

import (
	"fmt"

	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

// liveBroker is the pid of the process that holds the broker's lock on the
// store at dir (a running broker), 0 when none does or it cannot be told.
func liveBroker(dir string) int32 {
	l, err := store.Locate(dir)
	if err != nil {
		return 0
	}
	pid, err := compact.LockHolder(l.Dir())
	if err != nil {
		return 0
	}
	return pid
}

// checkLive looks for a running broker on the store at dir before it is
// analysed. With one, the analysis predicts its next periodic cleanup
// (--running) unless --running was given either way. It returns the
// broker's pid (0: none) and the line that says so ("" without one).
func (a *analysisFlags) checkLive(cmd *cobra.Command, dir string) (int32, string) {
	pid := liveBroker(dir)
	if pid == 0 {
		return 0, ""
	}
	f := cmd.Flags().Lookup("running")
	if f == nil {
		return pid, liveLine(pid, "")
	}
	if !f.Changed {
		a.running = true
	}
	if a.running {
		return pid, liveLine(pid, "the prediction is its next periodic cleanup (--running; --running=false: a broker started on the store as it is)")
	}
	return pid, liveLine(pid, "the prediction is the first cleanup of a broker started on the store as it is (--running=false; without it: the running broker's next periodic cleanup)")
}

// liveLine says that a broker holds the store's lock.
func liveLine(pid int32, then string) string {
	s := fmt.Sprintf("broker running: process %d holds the store's lock (it is writing to the store)", pid)
	if then != "" {
		s += "; " + then
	}
	return s
}

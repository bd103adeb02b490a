// Command kahafs reads ActiveMQ KahaDB stores: dump and statistics of the
// journal, why each data file is pinned, a read-only FUSE view, compaction.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	analysingHeap()
	if os.Getenv("GOMEMLIMIT") == "" {
		boundHeap()
	}
	os.Exit(run(os.Args[1:]))
}

// Exit statuses.
const (
	exitOK      = 0
	exitError   = 1 // the command could not do its work
	exitDamaged = 2 // the work was done, the store has damage
)

// errDamaged is returned by commands that completed on a damaged store.
var errDamaged = errors.New("store is damaged")

func run(args []string) int {
	cmd := newRootCmd()
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil && !errors.Is(err, errNoMatch) { // grep's "nothing matched" is silent
		fmt.Fprintln(os.Stderr, "kahafs:", err)
	}
	return exitStatus(err)
}

// exitStatus is the exit status of a command that returned err.
func exitStatus(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errNoMatch): // grep's "nothing matched"
		return exitError
	case errors.As(err, new(grepTrouble)): // grep's "trouble"
		return exitDamaged
	case errors.Is(err, errDamaged):
		return exitDamaged
	default:
		return exitError
	}
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// usageError is a mistake in how a command was called (a wrong number of
// arguments, an unknown flag, a flag value that does not parse). Its text
// ends with the command's usage line, so that every such mistake says how
// to call the command.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%v\nusage: %s (see '%s --help')", e.err, e.cmd.UseLine(), e.cmd.CommandPath())
}

func (e *usageError) Unwrap() error { return e.err }

// withUsage turns an argument check's error into a usageError.
func withUsage(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{cmd: cmd, err: err}
		}
		return nil
	}
}

// flagUsageError is the flag error function of every command.
func flagUsageError(cmd *cobra.Command, err error) error { return &usageError{cmd: cmd, err: err} }

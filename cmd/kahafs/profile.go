package main

import (
	"log"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"
)

// profileFlags are the hidden --cpuprofile, --memprofile and --trace
// flags of the commands that read a whole store, for measuring them
// (BENCHMARKS.md), not for users.
type profileFlags struct {
	cpu, mem, trace string
}

func (p *profileFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile (pprof) of the run to this file")
	cmd.Flags().StringVar(&p.mem, "memprofile", "", "write a heap profile (pprof) to this file at the end of the run")
	cmd.Flags().StringVar(&p.trace, "trace", "", "write an execution trace (go tool trace) of the run to this file")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	_ = cmd.Flags().MarkHidden("memprofile")
	_ = cmd.Flags().MarkHidden("trace")
}

func (p *profileFlags) start() (func(*log.Logger), error) {
	return startProfiles(p.cpu, p.mem, p.trace)
}

// around runs run between the start and the end of the profiles, which
// report their own errors on cmd's stderr.
func (p *profileFlags) around(cmd *cobra.Command, run func() error) error {
	stop, err := p.start()
	if err != nil {
		return err
	}
	defer stop(log.New(cmd.ErrOrStderr(), "kahafs: ", 0))
	return run()
}

// startProfiles starts the CPU profile and the execution trace and returns
// the function that ends them and writes the heap profile (the hidden
// --cpuprofile, --memprofile and --trace flags, for measuring the
// server). In the trace, the index's adoption and the graph's building
// are user-defined regions (refgraph), for go tool trace.
func startProfiles(cpu, mem, traceTo string) (func(*log.Logger), error) {
	var cpuFile, traceFile *os.File
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		cpuFile = f
	}
	if traceTo != "" {
		f, err := os.Create(traceTo)
		if err == nil {
			if err = trace.Start(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			if cpuFile != nil {
				pprof.StopCPUProfile()
				cpuFile.Close()
			}
			return nil, err
		}
		traceFile = f
	}
	return func(logger *log.Logger) {
		if traceFile != nil {
			trace.Stop()
			if err := traceFile.Close(); err != nil {
				logger.Printf("trace: %v", err)
			}
		}
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				logger.Printf("cpu profile: %v", err)
			}
		}
		if mem != "" {
			f, err := os.Create(mem)
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				logger.Printf("heap profile: %v", err)
			}
		}
	}, nil
}

package main

import (
	"log"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// profileFlags are the hidden --cpuprofile and --memprofile flags of the
// commands that read a whole store, for measuring them (BENCHMARKS.md),
// not for users.
type profileFlags struct {
	cpu, mem string
}

func (p *profileFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile (pprof) of the run to this file")
	cmd.Flags().StringVar(&p.mem, "memprofile", "", "write a heap profile (pprof) to this file at the end of the run")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	_ = cmd.Flags().MarkHidden("memprofile")
}

func (p *profileFlags) start() (func(*log.Logger), error) { return startProfiles(p.cpu, p.mem) }

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

// startProfiles starts the CPU profile and returns the function that ends
// it and writes the heap profile (the hidden --cpuprofile and --memprofile
// flags, for measuring the server).
func startProfiles(cpu, mem string) (func(*log.Logger), error) {
	var cpuFile *os.File
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
	return func(logger *log.Logger) {
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

// Command bench builds a large, realistic KahaDB store out of real-broker
// records and measures kahafs on it side by side with cat (the physical
// limit) and with the real broker's full index rebuild. See BENCHMARKS.md.
//
//	go run ./bench [-size 2GiB] [-cache DIR] [-write]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// options are the command-line flags.
type options struct {
	size, fileLength, batchSize string
	seed                        uint64
	cache                       string
	regen                       bool
	steps                       string
	javaOpts                    string
	timeout                     time.Duration
	runs                        int
	write                       bool
	genOnly                     bool
	shape                       string
	curve                       string
	bare                        bool   // the generated journal alone, no broker's index
	indexJavaOpts               string // JVM options of the broker that indexes the store ("" auto)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == spawnArg {
		os.Exit(spawnMain(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, cfg, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	if err := benchmark(o, cfg, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, genConfig, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.size, "size", "2GiB", "journal bytes of the generated store (e.g. 256MiB, 2GiB)")
	fs.StringVar(&o.fileLength, "file-length", "32MiB", "journalMaxFileLength of the generated store")
	fs.StringVar(&o.batchSize, "batch", "64KiB", "largest write batch of the generated store")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated workload")
	fs.StringVar(&o.cache, "cache", defaultCache(), "directory where generated stores are kept between runs")
	fs.BoolVar(&o.regen, "regen", false, "generate the store again even when it is cached")
	fs.StringVar(&o.steps, "steps", strings.Join(allSteps, ","), "steps to run")
	fs.StringVar(&o.javaOpts, "java-opts", "-Xmx1g", "JVM options of the broker rebuild (BROKERKIT_JAVA_OPTS)")
	fs.DurationVar(&o.timeout, "timeout", time.Hour, "longest a single step may run")
	fs.IntVar(&o.runs, "runs", 3, "runs of cat, holders, stats and the mount's first answer; the median is reported")
	fs.BoolVar(&o.write, "write", false, "replace the results section of BENCHMARKS.md with this run's")
	fs.StringVar(&o.shape, "shape", "", "workload shape: \"\" (the default mix), big-pending (a DLQ, a slow queue and an offline subscription holding most messages) or "+brokerShape+" (big-pending written by a real broker outright, brokerkit BigStore)")
	fs.BoolVar(&o.genOnly, "generate-only", false, "only generate (or find) the store and print its manifest")
	fs.BoolVar(&o.bare, "bare", false, "time the generated journal alone, without the index a real broker writes for it (db.data)")
	fs.StringVar(&o.indexJavaOpts, "index-java-opts", "", "JVM options of the broker that writes the store's index once (default: -Xmx1g up to 1 GB of journal, about 1.2 GiB per GB above)")
	fs.StringVar(&o.curve, "curve", "", "comma-separated sizes (e.g. 32MiB,1GiB,6GB): instead of the steps, the memory curve — peak RSS of holders and of the mount against pending messages, a store of each size")
	if err := fs.Parse(args); err != nil {
		return o, genConfig{}, err
	}
	for _, s := range strings.Split(o.steps, ",") {
		if !slices.Contains(allSteps, strings.TrimSpace(s)) {
			return o, genConfig{}, fmt.Errorf("unknown step %q in -steps (want some of %s)", s, strings.Join(allSteps, ","))
		}
	}
	cfg, err := o.genConfig()
	return o, cfg, err
}

func (o options) genConfig() (genConfig, error) {
	size, err := parseSize(o.size)
	if err != nil {
		return genConfig{}, err
	}
	fl, err := parseSize(o.fileLength)
	if err != nil {
		return genConfig{}, err
	}
	bs, err := parseSize(o.batchSize)
	if err != nil {
		return genConfig{}, err
	}
	if fl < 1<<20 || fl > 1<<30 || bs < 4<<10 || size < fl {
		return genConfig{}, fmt.Errorf("want -file-length in 1MiB..1GiB, -batch ≥ 4KiB, -size ≥ -file-length")
	}
	if _, ok := shapes[o.shape]; !ok {
		return genConfig{}, fmt.Errorf("unknown -shape %q (want \"\", big-pending or %s)", o.shape, brokerShape)
	}
	return genConfig{Bytes: size, FileLength: int(fl), BatchSize: int(bs), Seed: o.seed, Shape: o.shape}, nil
}

// parseSize reads 123, 4KiB, 256MiB, 2GiB (also KB/MB/GB, powers of 1000).
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseFloat(num, 64)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("bad size %q", s)
			}
			return int64(n * float64(u.mult)), nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n, nil
}

func defaultCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "kahafs-bench")
	}
	return filepath.Join(os.TempDir(), "kahafs-bench")
}

// benchmark finds or generates the store, builds kahafs, runs the steps
// and prints the report.
func benchmark(o options, cfg genConfig, stdout, stderr io.Writer) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if o.curve != "" {
		return memoryCurve(root, o, stdout, stderr)
	}
	store, err := ensureStore(root, o.cache, cfg, o.regen, stderr)
	if err != nil {
		return err
	}
	if err := o.indexed(root, store, stderr); err != nil {
		return err
	}
	if o.genOnly {
		return printManifest(stdout, store)
	}
	b, err := newBench(root, store, o, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	b.runSteps()
	report := b.report()
	fmt.Fprint(stdout, report)
	if o.write {
		return writeResults(filepath.Join(root, "BENCHMARKS.md"), report)
	}
	return nil
}

// indexed points cs at the broker-indexed copy of its journal, made when
// missing, unless -bare.
func (o options) indexed(root string, cs *cachedStore, log io.Writer) error {
	if cs.man.Config.Shape == brokerShape {
		if o.bare {
			return fmt.Errorf("-bare: the store of -shape %s is a broker's, index and all", brokerShape)
		}
		info, err := brokerIndex(cs)
		if err != nil {
			return err
		}
		cs.index = info
		return nil
	}
	if o.bare {
		return nil
	}
	is, err := ensureIndexed(root, o.cache, cs, o.indexJavaOpts, o.regen, log)
	if err != nil {
		return err
	}
	cs.store, cs.index = is.store, is.info
	return nil
}

// repoRoot is the module root: the nearest directory up from the working
// directory holding go.mod and testdata/stores.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "testdata", "stores")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run bench inside the kahafs repository (no go.mod with testdata/stores above the working directory)")
		}
		dir = parent
	}
}

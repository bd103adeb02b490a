package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The bench's other shapes are journals the Go generator writes, indexed
// afterwards by a broker that replays them (indexed.go). Shape
// brokerShape is the big-pending workload written by a real ActiveMQ 5.17
// broker outright, message by message (brokerkit BigStore): its journal
// is a broker's own — its batches, its acks, its recovery position at the
// journal's end, since the broker stops cleanly — and so is its db.data.
// That is the store an admin brings (issue 22: "measure on the shape
// users bring"). BigStore's SCALE is -size over brokerScaleBytes; the
// manifest's pending counts are BigStore's (what it sent less what its
// consumers took), its records are not counted.
const brokerShape = "broker-big-pending"

// brokerScaleBytes is about the journal of BigStore's SCALE 1 (3.09 GB:
// 1.05 M messages of 1.5 to 3.5 KB and the acks of 210 k).
const brokerScaleBytes = 3e9

// brokerJavaOpts is BigStore's JVM heap unless BROKERKIT_JAVA_OPTS is set.
const brokerJavaOpts = "-Xmx2g"

// brokerKitJavaOpts are the JVM options BigStore runs with.
func brokerKitJavaOpts() string {
	if o := os.Getenv("BROKERKIT_JAVA_OPTS"); o != "" {
		return o
	}
	return brokerJavaOpts
}

// bigStoreReport is BigStore's JSON line.
type bigStoreReport struct {
	DLQ          int64   `json:"dlq"`
	Reports      int64   `json:"reports"`
	ReportsTaken int64   `json:"reportsTaken"`
	Events       int64   `json:"events"`
	Work         int64   `json:"work"`
	WorkTaken    int64   `json:"workTaken"`
	BodyBytes    int64   `json:"bodyBytes"`
	FirstDLQ     string  `json:"firstDLQ"`
	Seconds      float64 `json:"seconds"`
}

// brokerManifest is the manifest of a store BigStore wrote (files: its
// data files' sizes).
func brokerManifest(cfg genConfig, r bigStoreReport, files []int64, seconds float64) *manifest {
	m := &manifest{Version: genVersion, Config: cfg, Files: len(files), Records: -1, Seconds: seconds}
	for _, n := range files {
		m.Bytes += n
	}
	m.Messages = r.DLQ + r.Reports + r.Events + r.Work
	m.PendingDLQ = r.DLQ
	m.PendingStuck = r.Reports - r.ReportsTaken
	m.PendingSub = r.Events
	m.PendingFlight = r.Work - r.WorkTaken
	m.Pending = m.PendingDLQ + m.PendingStuck + m.PendingSub + m.PendingFlight
	m.QueuePending = map[string]int64{"ActiveMQ.DLQ": r.DLQ, slowQueue: m.PendingStuck, "WORK": m.PendingFlight}
	m.SubPending = map[string]int64{"topic://EVENTS|reporting:archive": r.Events}
	m.Destinations, m.Subscriptions = 4, 1
	m.SampleID, m.BodyBytes = r.FirstDLQ, r.BodyBytes
	return m
}

// brokerGenerateInto has BigStore write the store of cfg in dir.tmp/store
// and renames dir.tmp to dir once its manifest is written.
func brokerGenerateInto(root, dir string, cfg genConfig, log io.Writer) (*manifest, error) {
	if why := brokerMissing(root); why != "" {
		return nil, fmt.Errorf("-shape %s needs the real broker (%s)", brokerShape, why)
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := buildBrokerKit(root); err != nil {
		return nil, err
	}
	scale := strconv.FormatFloat(float64(cfg.Bytes)/brokerScaleBytes, 'f', -1, 64)
	args := []string{"BigStore", filepath.Join(tmp, "store"), scale, strconv.FormatUint(cfg.Seed, 10), strconv.Itoa(cfg.FileLength)}
	cmd := exec.Command(filepath.Join(root, "brokerkit", "run.sh"), args...)
	cmd.Env = append(os.Environ(), "BROKERKIT_JAVA_OPTS="+brokerKitJavaOpts())
	logFile, err := os.Create(filepath.Join(tmp, "bigstore.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, logFile
	fmt.Fprintf(log, "bench: a real broker writes the store: brokerkit/run.sh %s ...\n", strings.Join(args, " "))
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("brokerkit BigStore: %v (its log: %s)", err, logFile.Name())
	}
	r, err := parseBigStore(out.Bytes())
	if err != nil {
		return nil, err
	}
	// the broker's own scratch directory, next to the store
	if err := os.RemoveAll(filepath.Join(tmp, "broker-data")); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(tmp, "store", "db-*.log"))
	if err != nil {
		return nil, err
	}
	sizes := make([]int64, 0, len(files))
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return nil, err
		}
		sizes = append(sizes, st.Size())
	}
	man := brokerManifest(cfg, r, sizes, time.Since(start).Seconds())
	man.JavaOpts = brokerKitJavaOpts()
	fmt.Fprintf(log, "bench: the broker wrote %d files, %s, %d messages, %d pending in %.1f s\n", man.Files, mib(man.Bytes), man.Messages, man.Pending, man.Seconds)
	if err := writeManifest(tmp, man); err != nil {
		return nil, err
	}
	return man, os.Rename(tmp, dir)
}

// parseBigStore reads BigStore's JSON line off its standard output.
func parseBigStore(out []byte) (bigStoreReport, error) {
	var r bigStoreReport
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "{") {
			last = l
		}
	}
	if last == "" {
		return r, fmt.Errorf("brokerkit BigStore printed no report: %q", out)
	}
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		return r, fmt.Errorf("brokerkit BigStore's report %q: %v", last, err)
	}
	if r.DLQ <= 0 || r.FirstDLQ == "" {
		return r, fmt.Errorf("brokerkit BigStore's report %q: no message sent", last)
	}
	return r, nil
}

// brokerIndex is the indexInfo of a store BigStore wrote: its db.data is
// the broker's own, not a rebuild's.
func brokerIndex(cs *cachedStore) (*indexInfo, error) {
	st, err := os.Stat(filepath.Join(cs.store, "db.data"))
	if err != nil {
		return nil, fmt.Errorf("the broker left no index: %v", err)
	}
	m := cs.man
	return &indexInfo{Version: indexVersion, GenVersion: m.Version, Config: m.Config, Records: m.Records, Bytes: m.Bytes,
		Command: "brokerkit/run.sh BigStore", JavaOpts: m.JavaOpts, Seconds: m.Seconds, IndexBytes: st.Size(), FilesAfter: m.Files, Outright: true,
		Made: st.ModTime().UTC().Format(time.RFC3339)}, nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A generated store has no index: the generator writes only the journal.
// Every store an admin brings has the db.data its broker wrote, and kahafs
// adopts it as a restarted broker does, so the timed rows run on a store
// whose index a real ActiveMQ 5.17 broker wrote for it (issue 22): after
// generating, the bench copies the journal, lets brokerkit's Inspect open
// the copy (a KahaDBPersistenceAdapter finds no index, replays the journal
// to build one and stops cleanly: stop-time checkpoint and cleanup, which
// deletes the files nothing pins) and keeps what the broker left next to
// the generated store:
//
//	CACHE/store-v<gen>-...[-shape]/           the generated journal (manifest.json)
//	CACHE/store-v<gen>-...[-shape]-indexed-v<idx>/
//	    store/                                 what the broker left: db-N.log, db.data, db.redo, lock
//	    inspect.json                           the broker's report (brokerkit Inspect)
//	    inspect.log                            its log
//	    index.json                             indexInfo: how and when, how long the broker took
//
// The key holds the generator's version (storeKey) and indexVersion, so
// either changing makes a new index; -regen makes both again.

// indexVersion changes whenever the bench has a broker index a store
// differently; it is part of the cache key.
const indexVersion = 1

// indexedStore is the broker-indexed copy of a generated store.
type indexedStore struct {
	dir, store string
	info       *indexInfo
}

// indexInfo is index.json: what the broker did to the generated store.
type indexInfo struct {
	Version    int       `json:"version"`    // indexVersion
	GenVersion int       `json:"genVersion"` // the generated store's
	Config     genConfig `json:"config"`
	// Records and Bytes of the generated store (its manifest), so that an
	// index of another store of the same key is not taken for this one's.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// How the broker ran: brokerkit Inspect with these JVM options.
	Command  string  `json:"command"`
	JavaOpts string  `json:"javaOpts"`
	Seconds  float64 `json:"seconds"` // the broker's wall time, JVM start-up included
	PeakRSS  int64   `json:"peakRSS"` // the broker's peak RSS in bytes (0: unknown)
	Made     string  `json:"made"`    // when (UTC, RFC 3339)
	// What it left: the index's size, the data files its stop-time
	// cleanup deleted and how many remain.
	IndexBytes int64   `json:"indexBytes"`
	Deleted    []int32 `json:"deleted"`
	FilesAfter int     `json:"filesAfter"`
	// Its recovery against the generator's pending counts ("same" or the
	// differences).
	Queues        string `json:"queues"`
	Subscriptions string `json:"subscriptions"`
	Prepared      string `json:"prepared"`
	// Outright: the broker wrote the whole store (brokerShape), not only
	// its index.
	Outright bool `json:"outright,omitempty"`
}

// indexKey names the indexed copy of a configuration in the cache.
func indexKey(cfg genConfig) string {
	return fmt.Sprintf("%s-indexed-v%d", storeKey(cfg), indexVersion)
}

// autoJavaOpts is the broker's heap for indexing a journal of n bytes: its
// own default (1 GiB) up to 1 GB, then about 1.2 GiB per GB (3 GiB for the
// 2.5 GB big-pending store, whose rebuild peaks at 1.35 GiB RSS), at most
// 16 GiB.
func autoJavaOpts(n int64) string {
	g := int64(math.Ceil(float64(n) * 1.2 / 1e9))
	return fmt.Sprintf("-Xmx%dg", min(max(g, 1), 16))
}

// ensureIndexed returns the broker-indexed copy of cs, making it first
// when it is missing, stale or regen. Like a generated store it is made
// in DIR.tmp and renamed when complete. javaOpts "" picks autoJavaOpts.
func ensureIndexed(root, cache string, cs *cachedStore, javaOpts string, regen bool, log io.Writer) (*indexedStore, error) {
	cfg := cs.man.Config
	is := &indexedStore{dir: filepath.Join(cache, indexKey(cfg))}
	is.store = filepath.Join(is.dir, "store")
	if !regen {
		if info, err := readIndexInfo(is.dir); err == nil && info.matches(cs.man) {
			is.info = info
			fmt.Fprintf(log, "bench: using cached broker index %s (db.data %s, the broker took %.1f s)\n",
				is.store, mib(info.IndexBytes), info.Seconds)
			return is, nil
		}
	}
	if why := brokerMissing(root); why != "" {
		return nil, fmt.Errorf("a store with a broker's index needs the real broker (%s); use -bare for the journal alone", why)
	}
	if err := os.RemoveAll(is.dir); err != nil {
		return nil, err
	}
	if javaOpts == "" {
		javaOpts = autoJavaOpts(cs.man.Bytes)
	}
	info, err := indexInto(root, is.dir, cs, javaOpts, log)
	if err != nil {
		return nil, err
	}
	is.info = info
	return is, nil
}

func (i *indexInfo) matches(m *manifest) bool {
	ic, mc := i.Config, m.Config
	ic.NoSync, mc.NoSync = false, false // not in the cache key (tests only)
	return i.Version == indexVersion && i.GenVersion == m.Version && ic == mc &&
		i.Records == m.Records && i.Bytes == m.Bytes
}

// indexInto copies the journal of cs into dir.tmp/store, has the broker
// index it (brokerkit Inspect), checks its recovery against the manifest
// and renames dir.tmp to dir.
func indexInto(root, dir string, cs *cachedStore, javaOpts string, log io.Writer) (*indexInfo, error) {
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(cs.store, "db-*.log"))
	if err != nil {
		return nil, err
	}
	cp := filepath.Join(tmp, "store")
	fmt.Fprintf(log, "bench: copying %d data files to %s for the broker to index ...\n", len(files), cp)
	if err := copyStore(files, cp); err != nil {
		return nil, err
	}
	if err := buildBrokerKit(root); err != nil {
		return nil, err
	}
	report := filepath.Join(tmp, "inspect.json")
	args := []string{"Inspect", cp, report, "--max-file-length", fmt.Sprint(cs.man.Config.FileLength), "--no-gc-trace"}
	logFile, err := os.Create(filepath.Join(tmp, "inspect.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(log, "bench: the broker (ActiveMQ, brokerkit Inspect, JVM %s) indexes %s: a few minutes for GBs ...\n", javaOpts, mib(cs.man.Bytes))
	c, err := spawnTimed(context.Background(), logFile, logFile, []string{"BROKERKIT_JAVA_OPTS=" + javaOpts},
		filepath.Join(root, "brokerkit", "run.sh"), args)
	if err != nil {
		return nil, fmt.Errorf("the broker indexing %s: %w (its log: %s)", cp, err, logFile.Name())
	}
	info := &indexInfo{
		Version: indexVersion, GenVersion: cs.man.Version, Config: cs.man.Config, Records: cs.man.Records, Bytes: cs.man.Bytes,
		Command:  "brokerkit/run.sh " + strings.Join(args[:1], " ") + " COPY OUT.json --max-file-length N --no-gc-trace",
		JavaOpts: javaOpts, Seconds: c.wall.Seconds(), PeakRSS: c.rss, Made: time.Now().UTC().Format(time.RFC3339),
	}
	st, err := os.Stat(filepath.Join(cp, "db.data"))
	if err != nil {
		return nil, fmt.Errorf("the broker left no index in %s: %w", cp, err)
	}
	info.IndexBytes = st.Size()
	if err := info.compare(report, cs.man); err != nil {
		return nil, err
	}
	left, _ := filepath.Glob(filepath.Join(cp, "db-*.log"))
	info.FilesAfter = len(left)
	fmt.Fprintf(log, "bench: the broker indexed the store in %.1f s (peak RSS %s): db.data %s, its cleanup deleted %d files; recovered as generated: queues %s, subscriptions %s, prepared %s\n",
		info.Seconds, mibOrUnknown(info.PeakRSS), mib(info.IndexBytes), len(info.Deleted), info.Queues, info.Subscriptions, info.Prepared)
	if err := writeIndexInfo(tmp, info); err != nil {
		return nil, err
	}
	return info, os.Rename(tmp, dir)
}

// compare reads the broker's report: what its cleanup deleted, and its
// recovery against the generator's pending counts.
func (i *indexInfo) compare(report string, m *manifest) error {
	in, err := readInspection(report)
	if err != nil {
		return err
	}
	i.Deleted = slices.Clone(in.Deleted)
	slices.Sort(i.Deleted)
	i.Queues, i.Subscriptions, i.Prepared = recoveredAsGenerated(in, m)
	return nil
}

// recoveredAsGenerated compares a broker's recovery with the generator's
// pending counts: queues, subscriptions, prepared transactions ("same" or
// the differences).
func recoveredAsGenerated(in *inspection, m *manifest) (queues, subs, prepared string) {
	sub := map[string]int64{}
	for k, s := range in.Subscriptions {
		sub[k] = s.Count
	}
	prepared = "same"
	if len(in.Prepared) != m.PreparedTx {
		prepared = fmt.Sprintf("DIFFER (broker %d, generator %d)", len(in.Prepared), m.PreparedTx)
	}
	return agree(in.QueueCounts, m.QueuePending), agree(sub, m.SubPending), prepared
}

func readInspection(path string) (*inspection, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var in inspection
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("%s: the broker's report not understood: %w", path, err)
	}
	return &in, nil
}

func readIndexInfo(dir string) (*indexInfo, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, err
	}
	var i indexInfo
	if err := json.Unmarshal(raw, &i); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "index.json"), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "store", "db.data")); err != nil {
		return nil, err
	}
	return &i, nil
}

func writeIndexInfo(dir string, i *indexInfo) error {
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.json"), append(b, '\n'), 0o644)
}

// describe is the index in a sentence, for the report.
func (i *indexInfo) describe() string {
	if i.Outright {
		jvm := ""
		if i.JavaOpts != "" {
			jvm = ", JVM " + i.JavaOpts
		}
		return fmt.Sprintf("index: db.data of %s, written by the ActiveMQ 5.17 broker that wrote the whole store (%s%s, %.0f s), stopped cleanly: its recovery position is the journal's end", mib(i.IndexBytes), i.Command, jvm, i.Seconds)
	}
	s := fmt.Sprintf("index: db.data of %s written for it by ActiveMQ 5.17 (brokerkit Inspect, JVM %s), which took %.0f s", mib(i.IndexBytes), i.JavaOpts, i.Seconds)
	if i.PeakRSS > 0 {
		s += fmt.Sprintf(" at %s peak RSS", mib(i.PeakRSS))
	}
	s += fmt.Sprintf(" to rebuild it from the journal and stop; its stop-time cleanup deleted %d data files, %d remain", len(i.Deleted), i.FilesAfter)
	s += fmt.Sprintf("; it recovered the generator's pending counts: queues %s, subscriptions %s, prepared transactions %s", i.Queues, i.Subscriptions, i.Prepared)
	return s
}

// buildBrokerKit builds brokerkit's classes (build.sh: nothing to do when
// they are up to date).
func buildBrokerKit(root string) error {
	if out, err := exec.Command(filepath.Join(root, "brokerkit", "build.sh")).CombinedOutput(); err != nil {
		return fmt.Errorf("brokerkit/build.sh: %v: %s", err, out)
	}
	return nil
}

// brokerMissing tells why the real broker cannot run here ("" when it can).
func brokerMissing(root string) string {
	if _, err := exec.LookPath("java"); err != nil {
		return "Java is not installed"
	}
	if _, err := os.Stat("/usr/share/activemq/lib"); err != nil {
		return "ActiveMQ is not installed in /usr/share/activemq"
	}
	if _, err := os.Stat(filepath.Join(root, "brokerkit", "run.sh")); err != nil {
		return "brokerkit/run.sh is missing"
	}
	return ""
}

// errNoIndex: the store of the run has no broker's index (-bare).
var errNoIndex = errors.New("the store has no index (-bare)")

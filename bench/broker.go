package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// brokerAvailable tells why the real broker cannot run here ("" when it can).
func (b *bench) brokerAvailable() string { return brokerMissing(b.root) }

// brokerStep times the real broker rebuilding its index from the journal
// of a copy of the store (there is no db.data): brokerkit's Inspect starts
// a KahaDBPersistenceAdapter on it, recovers every destination and stops.
func (b *bench) brokerStep() []*result {
	r := &result{step: stepBroker, command: "`brokerkit/run.sh Inspect COPY OUT.json` (no index)"}
	if why := b.brokerAvailable(); why != "" {
		r.skipped = why
		return []*result{r}
	}
	if err := buildBrokerKit(b.root); err != nil {
		r.err = err
		return []*result{r}
	}
	dir := filepath.Join(b.work, "broker")
	defer os.RemoveAll(dir)
	cp := filepath.Join(dir, "store")
	if err := copyStore(b.files, cp); err != nil {
		r.err = err
		return []*result{r}
	}
	out := filepath.Join(dir, "inspect.json")
	c, err := b.runChild(nil, []string{"BROKERKIT_JAVA_OPTS=" + b.o.javaOpts}, filepath.Join(b.root, "brokerkit", "run.sh"),
		[]string{"Inspect", cp, out, "--max-file-length", b.fileLengthArg()})
	r.wall, r.rss, r.cpu, r.err = c.wall, c.rss, c.cpu, err
	r.note("JVM %s, start-up included", b.o.javaOpts)
	if b.cs.index != nil {
		r.note("the journal of the timed store (the %d data files the indexing broker's cleanup kept), its db.data left out", len(b.files))
	}
	if err == nil {
		b.compareBroker(r, out)
	}
	return []*result{r}
}

// inspection is the part of Inspect's output the report compares.
type inspection struct {
	Deleted       []int32          `json:"deleted"`
	QueueCounts   map[string]int64 `json:"queueCounts"`
	Subscriptions map[string]struct {
		Count int64 `json:"count"`
	} `json:"subscriptions"`
	Prepared []json.RawMessage `json:"prepared"`
}

// compareBroker checks what the broker recovered against what the
// generator left pending, and its cleanup against holders' prediction.
func (b *bench) compareBroker(r *result, path string) {
	raw, err := os.ReadFile(path)
	var in inspection
	if err == nil {
		err = json.Unmarshal(raw, &in)
	}
	if err != nil {
		r.note("Inspect output not understood: %v", err)
		return
	}
	subs := map[string]int64{}
	for k, s := range in.Subscriptions {
		subs[k] = s.Count
	}
	man := b.cs.man
	prepared := "same"
	if len(in.Prepared) != man.PreparedTx {
		prepared = fmt.Sprintf("DIFFER (broker %d, generator %d)", len(in.Prepared), man.PreparedTx)
	}
	r.note("pending as generated: queues %s, subscriptions %s, prepared transactions %s",
		agree(in.QueueCounts, man.QueuePending), agree(subs, man.SubPending), prepared)
	if b.holders != nil {
		r.note("cleanup deleted %d files; holders predicted %d: %s", len(in.Deleted), len(b.holders.gc),
			sameIDs(in.Deleted, b.holders.gc))
	}
}

// agree compares pending counts by name ("same" or the differences).
func agree(broker, gen map[string]int64) string {
	var diff []string
	for k, v := range gen {
		if broker[k] != v {
			diff = append(diff, fmt.Sprintf("%s broker %d generator %d", k, broker[k], v))
		}
	}
	for k, v := range broker {
		if _, ok := gen[k]; !ok && v != 0 {
			diff = append(diff, fmt.Sprintf("%s broker %d generator 0", k, v))
		}
	}
	if len(diff) == 0 {
		return "same"
	}
	sort.Strings(diff)
	return "DIFFER (" + strings.Join(diff, "; ") + ")"
}

func sameIDs(a, b []int32) string {
	x := append([]int32(nil), a...)
	y := append([]int32(nil), b...)
	sort.Slice(x, func(i, j int) bool { return x[i] < x[j] })
	sort.Slice(y, func(i, j int) bool { return y[i] < y[j] })
	if fmt.Sprint(x) == fmt.Sprint(y) {
		return "same files"
	}
	return fmt.Sprintf("DIFFER (broker %v, holders %v)", x, y)
}

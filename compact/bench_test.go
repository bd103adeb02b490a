package compact

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
)

// benchStore writes a store of n pending queue messages (256-byte bodies),
// n/2 acked ones and a topic with two durable subscriptions that each got
// half of n/4 messages.
func benchStore(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "store")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	w := codec.NewJournalWriter(dir, codec.WriterOptions{NoSync: true})
	body := make([]byte, 256)
	q := codec.NewDestination(codec.Queue, []byte("ORDERS"))
	tp := codec.NewDestination(codec.Topic, []byte("EVENTS"))
	app := func(c *codec.Command) {
		if _, err := w.AppendCommand(c); err != nil {
			b.Fatal(err)
		}
	}
	for _, sub := range []string{"c1:s1", "c2:s2"} {
		c := &codec.Command{Type: codec.SubscriptionCommand, Dest: tp, SubscriptionKey: []byte(sub), SubscriptionInfo: []byte{0, 0, 0, 1, 55}}
		c.Set(codec.FieldSubscriptionDestination, codec.FieldSubscriptionKey, codec.FieldSubscriptionRetroactive, codec.FieldSubscriptionInfo)
		app(c)
	}
	for i := 0; i < n+n/2; i++ {
		id := []byte(fmt.Sprintf("ID:bench-1:1:1:1:%d", i))
		c := &codec.Command{Type: codec.AddMessageCommand, Dest: q, MessageID: id, Message: body, Priority: 4}
		c.Set(codec.FieldAddDestination, codec.FieldAddMessageID, codec.FieldAddMessage, codec.FieldAddPriority, codec.FieldAddPrioritySupported)
		app(c)
		if i%3 == 2 {
			r := &codec.Command{Type: codec.RemoveMessageCommand, Dest: q, MessageID: id, Ack: body[:64]}
			r.Set(codec.FieldRemoveDestination, codec.FieldRemoveMessageID, codec.FieldRemoveAck)
			app(r)
		}
	}
	for i := 0; i < n/4; i++ {
		id := []byte(fmt.Sprintf("ID:bench-2:1:1:1:%d", i))
		c := &codec.Command{Type: codec.AddMessageCommand, Dest: tp, MessageID: id, Message: body, Priority: 4}
		c.Set(codec.FieldAddDestination, codec.FieldAddMessageID, codec.FieldAddMessage, codec.FieldAddPriority, codec.FieldAddPrioritySupported)
		app(c)
		r := &codec.Command{Type: codec.RemoveMessageCommand, Dest: tp, MessageID: id, Ack: []byte{}, SubscriptionKey: []byte([]string{"c1:s1", "c2:s2"}[i%2])}
		r.Set(codec.FieldRemoveDestination, codec.FieldRemoveMessageID, codec.FieldRemoveAck, codec.FieldRemoveSubscriptionKey)
		app(r)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkCompact reports moved records per second for the whole
// compaction (analysis, write with fsync per file, verification, swap).
func BenchmarkCompact(b *testing.B) {
	const n = 300000
	src := benchStore(b, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "store")
		if err := os.Rename(src, dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := Compact(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(rep.Moved.Records)/rep.Seconds, "records/s")
		b.ReportMetric(rep.RecordsPerSecond, "write-records/s")
		b.ReportMetric(float64(rep.Moved.Records), "records")
		src = rep.Backup
		os.RemoveAll(dir)
		b.StartTimer()
	}
}

// BenchmarkCompactStore compacts a copy of the store named by
// KAHAFS_BENCH_STORE (skipped without it), for profiles of a real
// store's compaction (go test -bench CompactStore -cpuprofile ...). The
// copy goes in KAHAFS_BENCH_TMP (default the test's temporary directory).
func BenchmarkCompactStore(b *testing.B) {
	src := os.Getenv("KAHAFS_BENCH_STORE")
	if src == "" {
		b.Skip("KAHAFS_BENCH_STORE not set")
	}
	tmp := os.Getenv("KAHAFS_BENCH_TMP")
	if tmp == "" {
		tmp = b.TempDir()
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir, err := os.MkdirTemp(tmp, "compact-bench-")
		if err != nil {
			b.Fatal(err)
		}
		store := filepath.Join(dir, "store")
		if out, err := exec.Command("cp", "-a", src, store).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v: %s", err, out)
		}
		b.StartTimer()
		rep, err := Compact(store, Options{})
		b.StopTimer()
		if err != nil {
			os.RemoveAll(dir)
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Moved.Records)/rep.Seconds, "records/s")
		for _, p := range rep.Phases {
			b.ReportMetric(p.Seconds, p.Name+"-s")
		}
		os.RemoveAll(dir)
		b.StartTimer()
	}
}

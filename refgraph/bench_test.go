package refgraph

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
)

// benchStore writes a synthetic journal of about total bytes: queue and
// durable-topic traffic where a consumer lags a window of messages behind
// the producers, every 100th send in a local transaction, and `live`
// messages per destination left pending at the end. Bodies are 2 KiB, so
// the store's size grows with the traffic while the live state stays the
// same.
func benchStore(b *testing.B, total int64, live int) (dir string, messages int) {
	b.Helper()
	dir = filepath.Join(b.TempDir(), "store")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	w := codec.NewJournalWriter(dir, codec.WriterOptions{NoSync: true})
	body := make([]byte, 2048)
	for i := range body {
		body[i] = byte(i * 7)
	}
	var c codec.Command
	put := func() {
		if _, err := w.AppendCommand(&c); err != nil {
			b.Fatal(err)
		}
	}
	const queues, window = 8, 500
	dests := make([]codec.Destination, queues+1)
	for i := 0; i < queues; i++ {
		dests[i] = codec.NewDestination(codec.Queue, []byte(fmt.Sprintf("BENCH.Q.%d", i)))
	}
	dests[queues] = codec.NewDestination(codec.Topic, []byte("BENCH.T"))
	subs := [][]byte{[]byte("c1:s1"), []byte("c2:s2")}
	for _, s := range subs {
		c = codec.Command{Type: codec.SubscriptionCommand, Dest: dests[queues], SubscriptionKey: s,
			SubscriptionInfo: subscriptionInfo(string(s[:2]), string(s[3:]), "BENCH.T", "")}
		c.Set(codec.FieldSubscriptionDestination, codec.FieldSubscriptionKey, codec.FieldSubscriptionRetroactive, codec.FieldSubscriptionInfo)
		put()
	}
	id := func(d, n int) []byte { return []byte(fmt.Sprintf("ID:bench-%d-1:1:1:%d", d, n)) }
	perDest := int(total / int64(len(body)+120) / int64(len(dests)))
	for n := 1; n <= perDest; n++ {
		for d := range dests {
			c = codec.Command{Type: codec.AddMessageCommand, Dest: dests[d], MessageID: id(d, n), Message: body, Priority: 4}
			var tx codec.TxID
			if n%100 == 0 {
				tx = codec.NewLocalTx([]byte(fmt.Sprintf("ID:bench-tx-%d", d)), int64(n))
				c.Tx = tx
				c.Set(codec.FieldAddTransaction)
			}
			c.Set(codec.FieldAddDestination, codec.FieldAddMessageID, codec.FieldAddMessage, codec.FieldAddPriority)
			put()
			if n%100 == 0 {
				c = codec.Command{Type: codec.CommitCommand, Tx: tx}
				c.Set(codec.FieldTransaction)
				put()
			}
			if k := n - window; k >= 1 && k <= perDest-live {
				keys := [][]byte{nil}
				if d == queues {
					keys = subs
				}
				for _, sk := range keys {
					c = codec.Command{Type: codec.RemoveMessageCommand, Dest: dests[d], MessageID: id(d, k), Ack: acked, SubscriptionKey: sk}
					c.Set(codec.FieldRemoveDestination, codec.FieldRemoveMessageID, codec.FieldRemoveAck)
					if sk != nil {
						c.Set(codec.FieldRemoveSubscriptionKey)
					}
					put()
				}
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return dir, perDest * len(dests)
}

// peakHeap samples the heap while fn runs.
func peakHeap(fn func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// BenchmarkReplay replays large synthetic stores. Peak and retained heap
// follow the number of live messages, not the store's size: compare
// 200MB/live=1000 with 400MB/live=1000 (same), and with live=5000.
func BenchmarkReplay(b *testing.B) {
	for _, bc := range []struct {
		size int64
		live int
	}{
		{200 << 20, 1000},
		{400 << 20, 1000},
		{200 << 20, 5000},
	} {
		b.Run(fmt.Sprintf("%dMB/live=%d", bc.size>>20, bc.live), func(b *testing.B) {
			dir, n := benchStore(b, bc.size, bc.live)
			st, err := codec.OpenStore(dir)
			if err != nil {
				b.Fatal(err)
			}
			var bytes int64
			for _, f := range st.Files {
				bytes += f.Size
			}
			b.SetBytes(bytes)
			b.ReportAllocs()
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			var peak uint64
			var g *Graph
			for i := 0; i < b.N; i++ {
				p := peakHeap(func() {
					bl := NewBuilder(Options{Files: st.Files})
					if err := codec.ReadStore(st, codec.ReadOptions{}, 0, bl); err != nil {
						b.Fatal(err)
					}
					if g, err = bl.Build(); err != nil {
						b.Fatal(err)
					}
				})
				peak = max(peak, p)
			}
			b.StopTimer()
			runtime.GC()
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if got := g.Summary().Messages; got != int64(bc.live*9) {
				b.Fatalf("live messages %d, want %d", got, bc.live*9)
			}
			b.ReportMetric(float64(peak-min(peak, before.HeapAlloc))/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc))/(1<<20), "retained-MB")
			b.ReportMetric(float64(n), "messages")
			b.ReportMetric(float64(len(st.Files)), "files")
			runtime.KeepAlive(g)
		})
	}
}

package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// Memory: kahafs's heap is mostly the replay's state and then the graph
// made of it, both long-lived. The collector's target (gcPercent) lets the
// heap grow to one and a half times what is live, and a burst — the graph
// taking the place of the replay's indexes at the end of a replay, a
// destination's messages in one allocation while the collector is still
// marking — past that. boundHeap bounds both: every tick it sets the
// runtime's soft memory limit a margin above the heap that the last
// collection found live, so the collector runs (and returns memory to the
// system) before a burst lands on top of the live heap. The limit follows
// the live heap up and down, so it never starves a heap that has grown:
// it costs collections, not failures. On a store with 812 k pending
// messages: peak RSS of holders 120 → 91 MiB, the same CPU time.
const (
	heapTick        = 10 * time.Millisecond
	heapMarginShift = 2        // the limit is live + live>>2 ...
	heapMarginMin   = 16 << 20 // ... + 16 MiB
)

// Serving: a mount that has made its snapshot keeps little of what it
// allocates (the nodes the kernel holds, bounded by --kernel-cache) and
// throws away much (each file a walk reads is rendered, a message
// decoded for it), so under the analysis's bound a walk's renders set the
// collector off every few tens of MB, each time marking the whole
// snapshot. Once serving, the margin is a quarter of the live heap and
// at least 64 MiB, at the collector's default target: the mount's CPU
// during grep -r over 216 k files of a pending/ within the link limit
// (bench row grep-pending-linked, alternated runs) fell from 5.7–5.9 s to
// 4.6–5.3 s, its peak RSS rose from 231 to 262 MB (292 k nodes kept). A
// refresh analyses under the analysis's bound again.
const (
	servingGCPercent   = 100
	servingMarginShift = 2        // live + live>>2 ...
	servingMarginMin   = 64 << 20 // ... + 64 MiB
)

// heapMargin is the margin boundHeap keeps above the live heap: shift
// and minimum, set by analysingHeap and servingHeap.
var heapMargin struct {
	shift atomic.Uint32
	min   atomic.Int64
}

func init() { setHeap(heapMarginShift, heapMarginMin, -1) }

// analysingHeap bounds the heap tightly, for an analysis (main's
// default).
func analysingHeap() { setHeap(heapMarginShift, heapMarginMin, gcPercent) }

// servingHeap gives a mount's serving the looser bound described above.
func servingHeap() { setHeap(servingMarginShift, servingMarginMin, servingGCPercent) }

// setHeap sets the margin, and the collector's target unless the
// environment sets one (percent < 0: leave it).
func setHeap(shift uint32, min int64, percent int) {
	heapMargin.shift.Store(shift)
	heapMargin.min.Store(min)
	if percent >= 0 && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}

// gcPercent is the collector's target (GOGC) unless the environment sets
// one (peak RSS of holders on a store with 350 k pending messages: 90 MB
// at 100, 80 MB at 50, the same CPU time).
const gcPercent = 50

// boundHeap starts the memory limit's ticker, until stop is called (main
// never does). The environment's GOMEMLIMIT, when set, is left to the
// runtime (main does not call it then).
func boundHeap() (stop func()) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(heapTick)
	done := make(chan struct{})
	go func() {
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(s)
			if s[0].Value.Kind() != metrics.KindUint64 {
				return // not this runtime's metric: leave the limit alone
			}
			live := s[0].Value.Uint64()
			debug.SetMemoryLimit(int64(live+live>>heapMargin.shift.Load()) + heapMargin.min.Load())
		}
	}()
	return func() { close(done) }
}

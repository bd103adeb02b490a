package main

import (
	"runtime/debug"
	"runtime/metrics"
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
			debug.SetMemoryLimit(int64(live + live>>heapMarginShift + heapMarginMin))
		}
	}()
	return func() { close(done) }
}

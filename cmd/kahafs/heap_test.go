package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestBoundHeapFollowsLiveHeap: once started, the soft memory limit is set
// a margin above the live heap, and follows it when the live heap grows.
func TestBoundHeapFollowsLiveHeap(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	stop := boundHeap()
	defer func() { stop(); time.Sleep(2 * heapTick); debug.SetMemoryLimit(old) }()
	limit := func() int64 {
		time.Sleep(5 * heapTick)
		return debug.SetMemoryLimit(-1)
	}
	runtime.GC()
	first := limit()
	if first == math.MaxInt64 || first < heapMarginMin {
		t.Fatalf("memory limit %d: want live heap + margin (≥ %d)", first, heapMarginMin)
	}
	keep := make([][]byte, 64)
	for i := range keep {
		keep[i] = make([]byte, 1<<20) // 64 MiB more live
	}
	runtime.GC()
	if second := limit(); second < first+64<<20 {
		t.Fatalf("memory limit %d after 64 MiB more became live (was %d): it does not follow the live heap", second, first)
	}
	runtime.KeepAlive(keep)
}

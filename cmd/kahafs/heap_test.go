package main

import (
	"math"
	"os"
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

// TestServingHeapLoosensBound: a mount that serves gets the looser
// margin (at least servingMarginMin above the live heap) and the
// collector's serving target; an analysis (a refresh) gets the tight ones
// back.
func TestServingHeapLoosensBound(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: the targets are the environment's")
	}
	oldLimit := debug.SetMemoryLimit(-1)
	oldPercent := debug.SetGCPercent(gcPercent)
	stop := boundHeap()
	defer func() {
		stop()
		time.Sleep(2 * heapTick)
		analysingHeap()
		debug.SetMemoryLimit(oldLimit)
		debug.SetGCPercent(oldPercent)
	}()
	limit := func() int64 {
		runtime.GC()
		time.Sleep(5 * heapTick)
		return debug.SetMemoryLimit(-1)
	}
	analysingHeap()
	tight := limit()
	servingHeap()
	loose := limit()
	if loose < tight+servingMarginMin-heapMarginMin-8<<20 {
		t.Fatalf("serving: memory limit %d, analysing %d: want at least %d MiB more", loose, tight, (servingMarginMin-heapMarginMin)>>20)
	}
	if p := debug.SetGCPercent(servingGCPercent); p != servingGCPercent {
		t.Fatalf("serving: GOGC %d, want %d", p, servingGCPercent)
	}
	analysingHeap()
	if again := limit(); again > tight+8<<20 {
		t.Fatalf("analysing again: memory limit %d, want about %d", again, tight)
	}
	if p := debug.SetGCPercent(gcPercent); p != gcPercent {
		t.Fatalf("analysing: GOGC %d, want %d", p, gcPercent)
	}
}

package openwire

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

// TestAppendMillis: the timestamps spelled by hand are AppendFormat's,
// around every edge of the calendar and at random over the whole range.
func TestAppendMillis(t *testing.T) {
	ref := func(ms int64) string {
		return string(time.UnixMilli(ms).UTC().AppendFormat(nil, "2006-01-02T15:04:05.000Z07:00"))
	}
	check := func(ms int64) {
		t.Helper()
		if got, want := string(AppendMillis([]byte("x"), ms)), "x"+ref(ms); got != want {
			t.Fatalf("%d: %s, want %s", ms, got, want)
		}
	}
	const day = 86400000
	for _, at := range []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 2, 29, 23, 59, 59, 0, time.UTC),
		time.Date(1900, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 2, 28, 0, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC),
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 31, 12, 0, 0, 0, time.UTC),
	} {
		for d := int64(-3); d <= 3; d++ {
			for _, off := range []int64{-1, 0, 1, 999, 1000, 59999, 3600000} {
				check(at.UnixMilli() + d*day + off)
			}
		}
	}
	// every day of four centuries (all leap-year rules), from 1600
	for ms := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(); ms < time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(); ms += day + 1 {
		check(ms)
	}
	rng := rand.New(rand.NewSource(7))
	for range 200000 {
		check(rng.Int63n(2*253402300800000) - 253402300800000) // years -6000 .. 9999
	}
	for _, ms := range []int64{-1, 1, -62167219200001, 253402300800000, math.MaxInt64 / 2, math.MinInt64 / 2, math.MaxInt64, math.MinInt64} {
		check(ms)
	}
}

func BenchmarkAppendMillis(b *testing.B) {
	buf := make([]byte, 0, 64)
	for i := range b.N {
		buf = AppendMillis(buf[:0], 1796326534821+int64(i))
	}
}

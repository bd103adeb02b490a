package main

import (
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary be the spawner, as the bench's is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == spawnArg {
		os.Exit(spawnMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestChildRSSIsItsOwn: a child's peak RSS does not count the bench's
// memory (256 MiB resident here), and the spawner passes on the child's
// output, environment and exit status.
func TestChildRSSIsItsOwn(t *testing.T) {
	ballast := make([]byte, 256<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1 // resident: a page at a time
	}
	b := &bench{o: options{timeout: time.Minute}}
	var out strings.Builder
	c, err := b.runChild(&out, []string{"KAHAFS_SPAWN_TEST=seen"}, "sh", []string{"-c", "echo $KAHAFS_SPAWN_TEST"})
	require.NoError(t, err)
	require.Equal(t, "seen\n", out.String())
	require.Positive(t, c.rss)
	require.Less(t, c.rss, int64(64<<20), "the child's peak RSS counts the bench's 256 MiB")
	require.Positive(t, c.wall)
	runtime.KeepAlive(ballast)

	c, err = b.runChild(io.Discard, nil, "sh", []string{"-c", "echo oops >&2; exit 3"}, 3)
	require.NoError(t, err, "status 3 is allowed")
	require.Equal(t, 3, c.status)
	require.Equal(t, "oops", c.stderr)
	_, err = b.runChild(io.Discard, nil, "sh", []string{"-c", "exit 4"})
	require.ErrorContains(t, err, "exit status 4")
}

// TestChildTimeout: a child past the timeout is killed with its spawner.
func TestChildTimeout(t *testing.T) {
	b := &bench{o: options{timeout: 300 * time.Millisecond}}
	var out strings.Builder
	_, err := b.runChild(&out, nil, "sh", []string{"-c", "echo $$; exec sleep 30"})
	require.ErrorContains(t, err, "timed out")
	pid := strings.TrimSpace(out.String())
	require.NotEmpty(t, pid)
	require.Eventually(t, func() bool {
		_, err := os.Stat("/proc/" + pid)
		return os.IsNotExist(err)
	}, 10*time.Second, 10*time.Millisecond, "the child %s outlived its spawner", pid)
}

// TestPairRatios: runs timed in pairs are compared pair by pair, with
// the median of the ratios; runs that are not pairs are not.
func TestPairRatios(t *testing.T) {
	s := func(v ...float64) []time.Duration {
		var ds []time.Duration
		for _, x := range v {
			ds = append(ds, time.Duration(x*float64(time.Second)))
		}
		return ds
	}
	if got, want := pairRatios(s(1.2, 1.1, 2.6), s(1, 1, 2)), "; pair by pair 1.20, 1.10, 1.30×, their median 1.20×"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := pairRatios(s(1.2, 1.1), s(1, 1)), "; pair by pair 1.20, 1.10×, their median 1.15×"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, c := range [][2][]time.Duration{{s(1.2), s(1)}, {s(1, 2), s(1)}, {nil, nil}} {
		if got := pairRatios(c[0], c[1]); got != "" {
			t.Errorf("%v / %v: %q, want nothing", c[0], c[1], got)
		}
	}
}

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSignalWriter(t *testing.T) {
	closed := func(w *signalWriter) bool {
		select {
		case <-w.ready:
			return true
		default:
			return false
		}
	}
	w := &signalWriter{prefix: []byte("serving "), ready: make(chan struct{})}
	for _, p := range []string{"ser", "v", "ing 180000 files at /mnt\nlookups 0\n"} {
		require.False(t, closed(w), "ready before the prefix was whole")
		n, err := w.Write([]byte(p))
		require.NoError(t, err)
		require.Equal(t, len(p), n)
	}
	require.True(t, closed(w), "the prefix, written in three parts, did not close ready")
	_, _ = w.Write([]byte("serving again\n")) // once only: no second close

	w = &signalWriter{prefix: []byte("serving "), ready: make(chan struct{})}
	_, _ = w.Write([]byte("fusefloor: no such directory\nserving "))
	require.False(t, closed(w), "a first line that is not the prefix closed ready")
}

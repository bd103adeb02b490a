package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/kahafs/kahafs/replaycache"
)

// TestMain points the analysis cache at a temporary directory: the tests
// (and the kahafs processes they start) never touch the user's cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kahafs-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(replaycache.EnvDir, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Package need is the one way a test says it cannot run here: FUSE, root, a
// mount it needs, the real broker, a fixture. Outside CI such a test
// skips, naming what is missing; under CI=true it fails with that reason,
// because a CI that skips what it cannot run proves less than it claims.
//
// Skips that are a choice (-short, a benchmark's store not given, a child
// process's own run) do not go through need.
package need

import (
	"fmt"
	"os"
	"testing"
)

// CI reports whether the tests run in CI (CI=true): then every missing
// dependency is a failure.
func CI() bool { return os.Getenv("CI") == "true" }

// Skip skips t, saying why (a missing dependency); under CI=true it fails
// t instead.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("cannot run in CI (CI=true), which must run every test: %s", why)
	}
	t.Skipf("skipping: %s", why)
}

// FUSE skips t (fails it under CI=true) when err, the answer of a check
// such as fsnode.CheckFUSE, says FUSE cannot be used here.
func FUSE(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		Skip(t, "kernel-level test needs FUSE: %v", err)
	}
}

// Root skips t (fails it under CI=true) unless the test runs as root;
// what says what root is needed for.
func Root(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root to %s (running as uid %d)", what, os.Geteuid())
	}
}

package compact

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// readOnlyView bind-mounts dir read-only at a new path (even root gets
// EROFS there) and returns that path; it skips the test where mounting is
// not allowed (fails it under CI=true: need.Skip).
func readOnlyView(t *testing.T, dir string) string {
	t.Helper()
	ro := filepath.Join(t.TempDir(), "ro-store")
	require.NoError(t, os.Mkdir(ro, 0o755))
	if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
		need.Skip(t, "bind mount needs privileges: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(ro, unix.MNT_DETACH) })
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		need.Skip(t, "read-only remount: %v", err)
	}
	err := os.WriteFile(filepath.Join(ro, "probe"), nil, 0o644)
	require.ErrorIs(t, err, syscall.EROFS, "the view is read-only")
	return ro
}

// TestCompactDryRunReadOnly: a dry run needs only read access to the
// store (it opens nothing for writing, not even the lock file) and reports
// what it reports on a writable copy; a compaction says it needs write
// access.
func TestCompactDryRunReadOnly(t *testing.T) {
	for _, name := range []string{"tx", "queues"} {
		t.Run(name, func(t *testing.T) {
			fx := brokertest.Named(t, name)
			dir := brokertest.CopyStore(t, fx.StoreDir)
			want, err := Compact(dir, Options{DryRun: true, Now: fixedNow})
			require.NoError(t, err)
			ro := readOnlyView(t, dir)
			got, err := Compact(ro, Options{DryRun: true, Now: fixedNow})
			require.NoError(t, err)
			assert.True(t, got.DryRun)
			assert.Equal(t, want.Moved, got.Moved)
			assert.Equal(t, want.Before, got.Before)
			assert.Equal(t, want.After, got.After)
			assert.Equal(t, want.MaxFileLength, got.MaxFileLength)

			_, err = Compact(ro, Options{Now: fixedNow})
			require.ErrorIs(t, err, syscall.EROFS)
			assert.Contains(t, err.Error(), "--dry-run needs only read access")
		})
	}
}

// TestCompactDryRunBesideRunningBroker: a dry run reads only, so it
// works beside a running broker (real: HoldStore) and names it; the
// compaction itself still refuses the store.
func TestCompactDryRunBesideRunningBroker(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir)
	free, err := Compact(dir, Options{DryRun: true})
	require.NoError(t, err)
	assert.Zero(t, free.BrokerPID)
	pid, release := brokertest.HoldStore(t, dir)
	rep, err := Compact(dir, Options{DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, int32(pid), rep.BrokerPID)
	assert.Equal(t, free.Moved, rep.Moved)
	_, err = Compact(dir, Options{})
	var le *LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, int32(pid), le.PID)
	release()
}

// TestCompactDryRunIsTheResult: on every fixture, and with a file length
// that makes many files, the dry run reports exactly the files and bytes
// the compaction then writes, and what it moves.
func TestCompactDryRunIsTheResult(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		for _, mfl := range []int64{0, 4096} {
			t.Run(fx.Name+"/"+strconv.FormatInt(mfl, 10), func(t *testing.T) {
				dir := brokertest.CopyStore(t, fx.StoreDir)
				dry, err := Compact(dir, Options{DryRun: true, MaxFileLength: mfl, Now: fixedNow})
				require.NoError(t, err)
				rep, err := Compact(dir, Options{MaxFileLength: mfl, Now: fixedNow})
				require.NoError(t, err)
				require.True(t, rep.Verified)
				assert.Equal(t, rep.After, dry.After)
				assert.Equal(t, rep.Moved, dry.Moved)
				assert.Equal(t, rep.MaxFileLength, dry.MaxFileLength)
				if rep.Moved.Records > 0 {
					assert.Positive(t, dry.After.Files)
				}
			})
		}
	}
}

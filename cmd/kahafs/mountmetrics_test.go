package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMountMetricsIsMetricsOutput: the mount's metrics file, read through
// the kernel, and `kahafs cat STORE metrics` are byte for byte what
// `kahafs metrics STORE` prints, on a store and on a layout of several
// (labelled store_dir).
func TestMountMetricsIsMetricsOutput(t *testing.T) {
	requireFUSE(t)
	type store struct{ name, dir string }
	var stores []store
	for _, n := range []string{"queues", "topics", "tx"} {
		fx := brokertest.Named(t, n)
		stores = append(stores, store{n, fx.StoreDir})
	}
	for _, fx := range brokertest.LayoutFixtures(t) {
		stores = append(stores, store{fx.Name, fx.DataDir})
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			mfl := "16384"
			var opts fsnode.Options
			opts.MaxFileLength = 16384
			fsys, err := fsnode.Open(s.dir, opts)
			require.NoError(t, err)
			mnt := t.TempDir()
			require.NoError(t, fsys.Mount(mnt))
			defer func() { assert.NoError(t, fsys.Unmount()) }()

			got, err := os.ReadFile(filepath.Join(mnt, "metrics"))
			require.NoError(t, err)
			want, stderr, code := runCLI(t, "metrics", "--no-cache", "--max-file-length", mfl, s.dir)
			require.Equal(t, exitOK, code, stderr)
			require.Contains(t, want, "kahafs_pinned_bytes")
			assert.Equal(t, want, string(got), "the mount's metrics file")
			cat, stderr, code := runCLI(t, "cat", "--no-cache", "--max-file-length", mfl, s.dir, "metrics")
			require.Equal(t, exitOK, code, stderr)
			assert.Equal(t, want, cat, "kahafs cat STORE metrics")
			parseMetrics(t, string(got))
		})
	}
}

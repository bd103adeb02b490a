package metrics

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/store"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	require.NoError(t, err, "%s", b)
	return mfs
}

func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	require.Contains(t, mfs, name)
	ms := mfs[name].GetMetric()
	require.Len(t, ms, 1, name)
	return ms[0].GetGauge().GetValue()
}

// TestFixtures: the output of every fixture parses, its totals add up,
// and every metric help names is made by some fixture.
func TestFixtures(t *testing.T) {
	seen := map[string]bool{}
	for _, fx := range brokertest.Fixtures(t) {
		a, err := store.Open(fx.StoreDir, store.Options{})
		require.NoError(t, err, fx.StoreDir)
		snap, err := Take(a)
		require.NoError(t, err)
		require.NoError(t, snap.stores[0].addCompaction(a, store.Options{}))
		var b bytes.Buffer
		require.NoError(t, snap.Write(&b, Options{Labels: map[string]string{"store": "x"}}))
		mfs := parse(t, b.Bytes())
		for name, mf := range mfs {
			seen[name] = true
			assert.True(t, strings.HasPrefix(name, "kahafs_"))
			assert.Equal(t, dto.MetricType_GAUGE, mf.GetType())
		}
		// pinned + free = all
		assert.Equal(t, value(t, mfs, "kahafs_journal_files"), value(t, mfs, "kahafs_pinned_files")+value(t, mfs, "kahafs_next_cleanup_free_files"), fx.StoreDir)
		assert.Equal(t, float64(len(a.Graph.GCCandidates())), value(t, mfs, "kahafs_next_cleanup_free_files"), fx.StoreDir)
	}
	// layouts of several stores: a job scheduler store among them
	for _, fx := range brokertest.LayoutFixtures(t) {
		a, err := store.Open(fx.DataDir, store.Options{})
		require.NoError(t, err, fx.DataDir)
		var b bytes.Buffer
		require.NoError(t, Write(&b, a, Options{}))
		for name := range parse(t, b.Bytes()) {
			seen[name] = true
		}
	}
	for name := range help {
		assert.True(t, seen[name], "no fixture makes %s", name)
	}
}

func TestDamage(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir)
	a, err := store.Open(dir, store.Options{})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, Write(&b, a, Options{}))
	mfs := parse(t, b.Bytes())
	assert.Equal(t, 0.0, value(t, mfs, "kahafs_damage_found"))
	assert.Equal(t, 0.0, value(t, mfs, "kahafs_damaged_files"))

	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	require.NoError(t, faults.EditFile(st.Files[0].Path, func(b []byte) []byte { return faults.FlipByte(b, 40) }))
	a, err = store.Open(dir, store.Options{})
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, Write(&b, a, Options{}))
	mfs = parse(t, b.Bytes())
	assert.Equal(t, 1.0, value(t, mfs, "kahafs_damage_found"))
	assert.Equal(t, 1.0, value(t, mfs, "kahafs_damaged_files"))
}

func TestCheckLabel(t *testing.T) {
	for _, ok := range []string{"store", "env", "_x", "a1"} {
		assert.NoError(t, CheckLabel(ok), ok)
	}
	for _, bad := range []string{"", "1a", "a-b", "__name__", "__x", LabelStoreDir, "kind", "destination", "subscription"} {
		assert.Error(t, CheckLabel(bad), bad)
	}
	a, err := store.Open(brokertest.Fixtures(t)[0].StoreDir, store.Options{})
	require.NoError(t, err)
	_, err = Gather(a, Options{Labels: map[string]string{"destination": "x"}})
	assert.Error(t, err)
}

func TestWriteFile(t *testing.T) {
	a, err := store.Open(brokertest.Fixtures(t)[0].StoreDir, store.Options{})
	require.NoError(t, err)
	dir := t.TempDir()
	p := filepath.Join(dir, "k.prom")
	require.NoError(t, WriteFile(p, a, Options{}))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	var want bytes.Buffer
	require.NoError(t, Write(&want, a, Options{}))
	assert.Equal(t, want.String(), string(got))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
	// a directory where the file should be: an error, nothing left behind
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d.prom"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.prom", "x"), nil, 0o644))
	assert.Error(t, WriteFile(filepath.Join(dir, "d.prom"), a, Options{}))
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2)
}

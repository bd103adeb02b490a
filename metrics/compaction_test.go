package metrics

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// journalLength is the length of the data files of the store in dir.
func journalLength(t *testing.T, dir string) int64 {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	var n int64
	for _, f := range st.Files {
		n += f.Size
	}
	return n
}

// TestCompactionReclaimable: on every fixture, the compaction's figure is
// what a real compaction of a copy gives back (the data files' length
// before minus after), and it is absent exactly where the compaction
// refuses the store.
func TestCompactionReclaimable(t *testing.T) {
	present := 0
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			dir := brokertest.AgedCopy(t, fx.StoreDir)
			out, _ := render(t, dir, t.TempDir(), 0, true)
			mfs := parse(t, []byte(out))
			before := journalLength(t, dir)
			rep, err := compact.Compact(dir, compact.Options{})
			mf, ok := mfs[nameCompaction]
			if err != nil {
				assert.False(t, ok, "a figure for a store the compaction refuses: %v", err)
				assert.True(t, errors.Is(err, compact.ErrDamaged), "%v", err)
				return
			}
			require.True(t, ok, "no figure for a store the compaction compacts")
			require.Len(t, mf.GetMetric(), 1)
			got := mf.GetMetric()[0].GetGauge().GetValue()
			after := journalLength(t, dir)
			assert.Equal(t, float64(before-after), got, "freed by the compaction")
			assert.Equal(t, rep.Before.Bytes-rep.After.Bytes, before-after)
			present++
		})
	}
	assert.Greater(t, present, 5)
}

// TestCompactionOptions: the figure is worked out only when asked, and
// only from the analysis a compaction makes (not --running, --no-index,
// --no-verify).
func TestCompactionOptions(t *testing.T) {
	dir := brokertest.AgedCopy(t, brokertest.Named(t, "queues").StoreDir)
	out, _ := render(t, dir, "", 0, true)
	assert.Contains(t, out, nameCompaction)
	out, _ = render(t, dir, "", 0, false)
	assert.NotContains(t, out, nameCompaction)
	l, err := store.Locate(dir)
	require.NoError(t, err)
	for _, ao := range []store.Options{{Running: true}, {NoIndex: true}, {SkipChecksums: true}} {
		snap, err := Load(l, LoadOptions{Analysis: ao, Compaction: true})
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, snap.Write(&b, Options{}))
		assert.NotContains(t, b.String(), nameCompaction, "%+v", ao)
	}
}

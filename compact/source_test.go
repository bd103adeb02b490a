package compact

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sourceStore writes n trace records of varied sizes (some larger than a
// prefetch buffer) over several files and returns their locations and
// payloads.
func sourceStore(t *testing.T, n int) (*codec.Store, []codec.Location, [][]byte) {
	t.Helper()
	dir := t.TempDir()
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: 256 << 10, MaxBatchSize: 32 << 10, NoSync: true})
	rng := rand.New(rand.NewSource(7))
	var locs []codec.Location
	var pls [][]byte
	for i := range n {
		size := 1 + rng.Intn(3000)
		if i%97 == 5 {
			size = prefetchBufBytes + rng.Intn(prefetchBufBytes) // a buffer of its own
		}
		c := codec.NewTraceCommand(bytes.Repeat([]byte{byte(i), byte(i >> 8)}, size/2+1))
		loc, err := w.AppendCommand(c)
		require.NoError(t, err)
		locs = append(locs, loc)
		pls = append(pls, codec.AppendCommand(nil, c))
	}
	require.NoError(t, w.Close())
	require.Greater(t, len(w.Files()), 2)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	return st, locs, pls
}

// TestPrefetchOrder: the payloads come back in the order asked for, whatever
// it is: runs of neighbours (read together), jumps back and forth, across
// files, the same record twice, records larger than a buffer.
func TestPrefetchOrder(t *testing.T) {
	st, locs, pls := sourceStore(t, 3000)
	rng := rand.New(rand.NewSource(1))
	var order []int
	for len(order) < 6000 {
		start, n := rng.Intn(len(locs)), 1+rng.Intn(40)
		step := 1
		if rng.Intn(4) == 0 {
			step = 2 // gaps of one record
		}
		for k := 0; k < n && start+k*step < len(locs); k++ {
			order = append(order, start+k*step)
		}
		if rng.Intn(10) == 0 {
			order = append(order, order[len(order)-1]) // the same record again
		}
	}
	want := make([]codec.Location, len(order))
	for i, k := range order {
		want[i] = locs[k]
	}
	pf := prefetch(newRecordSource(st), listOf(want))
	defer pf.close()
	for i, k := range order {
		f, err := pf.next()
		require.NoError(t, err, "record %d", i)
		require.True(t, bytes.Equal(pls[k], f.pl), "record %d (%v) has the wrong bytes", i, locs[k])
		// decoded, and where from
		var c codec.Command
		require.NoError(t, codec.DecodeCommand(pls[k], &c))
		require.NoError(t, f.derr)
		require.Equal(t, locs[k], f.loc, "record %d", i)
		require.Equal(t, c.Type, f.c.Type, "record %d", i)
		require.Equal(t, c.MessageID, f.c.MessageID, "record %d", i)
		require.Equal(t, c.Type == codec.AddMessageCommand || c.Type == codec.UpdateMessageCommand, f.message, "record %d", i)
	}
	_, err := pf.next()
	assert.Error(t, err, "more records than planned")
}

// TestPrefetchErrors: the records before a bad one are returned, then an
// error naming the bad one's file and offset.
func TestPrefetchErrors(t *testing.T) {
	st, locs, pls := sourceStore(t, 400)
	fi, _ := st.File(locs[len(locs)-1].File)
	lastOfFile := func(id int32) int {
		k := -1
		for i, l := range locs {
			if l.File == id {
				k = i
			}
		}
		return k
	}
	for _, tc := range []struct {
		name string
		bad  func(l []codec.Location) (int, error) // changes l, returns the index of the bad record
	}{
		{"size changed", func(l []codec.Location) (int, error) { l[150].Size++; return 150, codec.ErrBadSize }},
		{"not at a record", func(l []codec.Location) (int, error) {
			l[151].Offset += 3
			return 151, codec.ErrBadSize
		}},
		{"negative offset", func(l []codec.Location) (int, error) { l[10].Offset = -1; return 10, codec.ErrBadSize }},
		{"past the end", func(l []codec.Location) (int, error) {
			k := lastOfFile(fi.ID)
			l[k].Offset = int32(fi.Size) + 100
			return k, codec.ErrTruncated
		}},
		{"missing file", func(l []codec.Location) (int, error) { l[20].File = 999; return 20, codec.ErrMissingFile }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := append([]codec.Location(nil), locs...)
			bad, want := tc.bad(l)
			pf := prefetch(newRecordSource(st), listOf(l))
			defer pf.close()
			for i := 0; i < bad; i++ {
				f, err := pf.next()
				require.NoError(t, err, "record %d", i)
				require.True(t, bytes.Equal(pls[i], f.pl), "record %d", i)
			}
			_, err := pf.next()
			require.ErrorIs(t, err, want)
			var ce *codec.CorruptionError
			if errors.As(err, &ce) {
				assert.Equal(t, int64(l[bad].Offset), ce.Offset)
				assert.Equal(t, l[bad].File, ce.FileID)
				assert.NotEmpty(t, ce.File)
			}
			_, err = pf.next()
			assert.Error(t, err, "the error stays")
		})
	}
	t.Run("file truncated", func(t *testing.T) {
		k := lastOfFile(fi.ID)
		require.NoError(t, os.Truncate(fi.Path, int64(locs[k].Offset)+2))
		pf := prefetch(newRecordSource(st), listOf(locs))
		defer pf.close()
		for i := 0; i < k; i++ {
			_, err := pf.next()
			require.NoError(t, err, "record %d", i)
		}
		_, err := pf.next()
		require.ErrorIs(t, err, codec.ErrTruncated)
		var ce *codec.CorruptionError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, int64(locs[k].Offset), ce.Offset)
	})
}

// listOf is l as a chunked list of small chunks (runs of records are cut
// at their ends).
func listOf(l []codec.Location) *chunked[codec.Location] {
	c := &chunked[codec.Location]{size: 37}
	for _, loc := range l {
		c.push(loc)
	}
	return c
}

package compact

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChunked reads back what was pushed, in order, by next and by each,
// and frees the chunks read.
func TestChunked(t *testing.T) {
	for _, n := range []int{0, 1, 6, 7, 8, 50} {
		var a, b chunked[int]
		a.size, b.size = 7, 7
		for i := range n {
			a.push(i)
			b.push(i)
		}
		require.Equal(t, n, a.len())
		for i := range n {
			v, ok := a.next()
			require.True(t, ok)
			require.Equal(t, i, v)
		}
		_, ok := a.next()
		require.False(t, ok)
		for _, c := range a.chunks {
			require.Nil(t, c, "a chunk read is freed")
		}
		var got []int
		b.each(func(c []int) bool { got = append(got, c...); return true })
		require.Len(t, got, n)
		for i, v := range got {
			require.Equal(t, i, v)
		}
		for _, c := range b.chunks {
			require.Nil(t, c)
		}
	}
}

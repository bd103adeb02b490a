package compact

import (
	"strconv"
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

// TestListerDigests: lists are equal exactly when their elements are,
// however the bytes are split between them, long ones included, and
// across the lister's buffer.
func TestListerDigests(t *testing.T) {
	l := newLister()
	long := string(make([]byte, 1<<14+3))
	many := make([]string, 5000)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	lists := [][]string{{}, {""}, {"", ""}, {"ab", "c"}, {"a", "bc"}, {"abc"}, {long}, {long[1:], "x"}, {long, ""}, many, append(many[:4999:4999], "x")}
	seen := map[idList]int{}
	for i, ss := range lists {
		d := l.strings(ss...)
		require.Equal(t, len(ss), d.n)
		require.Equal(t, d, l.strings(ss...), "the same list again")
		if j, ok := seen[d]; ok {
			t.Fatalf("lists %d and %d have the same digest", j, i)
		}
		seen[d] = i
	}
}

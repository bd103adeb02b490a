package refgraph

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSeqSetAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for round := 0; round < 200; round++ {
		var s seqSet
		model := map[int64]bool{}
		for op := 0; op < 200; op++ {
			v := int64(rng.Intn(60))
			switch rng.Intn(4) {
			case 0, 1:
				s.addRange(v, v+1)
				model[v], model[v+1] = true, true
			case 2:
				assert.Equal(t, model[v], s.remove(v))
				delete(model, v)
			case 3:
				s.add(v)
				model[v] = true
			}
			// invariants: ascending, non-adjacent ranges equal to the model
			var vals []int64
			for i, r := range s.r {
				require.LessOrEqual(t, r.first, r.last)
				if i > 0 {
					require.Less(t, s.r[i-1].last+1, r.first, "ranges %v not merged", s.r)
				}
			}
			s.each(func(v int64) { vals = append(vals, v) })
			var want []int64
			for k := range model {
				want = append(want, k)
			}
			sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
			require.Equal(t, want, vals)
			require.Equal(t, int64(len(want)), s.count())
			for k := int64(0); k < 62; k++ {
				require.Equal(t, model[k], s.contains(k))
			}
		}
	}
}

func TestSeqSetBrokerShapes(t *testing.T) {
	var s seqSet
	s.addRange(0, 1) // message 0 and its marker
	s.addRange(1, 2)
	s.addRange(2, 3)
	assert.Equal(t, []seqRange{{0, 3}}, s.r)
	assert.True(t, s.remove(1))
	assert.Equal(t, []seqRange{{0, 0}, {2, 3}}, s.r)
	assert.Equal(t, 2, s.ranges())
	assert.False(t, s.remove(1))
	s.remove(0)
	s.remove(2)
	assert.Equal(t, []seqRange{{3, 3}}, s.r, "only the marker is left")
}

func TestSplitMessageID(t *testing.T) {
	for _, tc := range []struct {
		id     string
		prefix string
		seq    int64
	}{
		{"ID:host-1-2-3:1:1:1:26", "ID:host-1-2-3:1:1:1", 26},
		{"ID:a:0", "ID:a", 0},
		{"ID:a:007", "ID:a:007", -1}, // not canonical: kept whole
		{"plain", "plain", -1},
		{"x:", "x:", -1},
		{"12345", "12345", -1},
		{"a:1234567890123456789", "a:1234567890123456789", -1}, // too long
	} {
		p, s := split([]byte(tc.id))
		assert.Equal(t, tc.prefix, string(p), tc.id)
		assert.Equal(t, tc.seq, s, tc.id)
	}
}

func TestIDTableRefcounts(t *testing.T) {
	tb := newIDTable()
	a := tb.intern([]byte("ID:p:1:1:1:1"))
	b := tb.intern([]byte("ID:p:1:1:1:2"))
	assert.Equal(t, a.prefix, b.prefix)
	assert.Equal(t, "ID:p:1:1:1:2", tb.String(b))
	k, ok := tb.lookup([]byte("ID:p:1:1:1:3"))
	assert.True(t, ok)
	assert.Equal(t, int64(3), k.seq)
	tb.release(a)
	_, ok = tb.lookup([]byte("ID:p:1:1:1:1"))
	assert.True(t, ok, "still referenced by b")
	tb.release(b)
	_, ok = tb.lookup([]byte("ID:p:1:1:1:1"))
	assert.False(t, ok, "no live reference: forgotten")
	c := tb.intern([]byte("other"))
	assert.Equal(t, a.prefix, c.prefix, "slot reused")
	assert.Equal(t, "other", tb.String(c))
	assert.Len(t, tb.byName, 1)
}

func TestJavaStringHash(t *testing.T) {
	// values of java.lang.String.hashCode()
	assert.Equal(t, int32(99162322), javaStringHash("hello"))
	assert.Equal(t, int32(0), javaStringHash(""))
	assert.Equal(t, int32(-1356320451), javaStringHash("0:ORDERS.IN.PROCESSING"))
	// supplementary characters hash as two UTF-16 units (Java: 1772899)
	assert.Equal(t, int32(1772899), javaStringHash("😀"))
}

func TestJavaHashMapOrder(t *testing.T) {
	// §6.5, verified with 5.17.2: buckets 10, 10, 14, 15
	for k, b := range map[string]int{"1:T.G": 10, "1:T.EMPTY2": 10, "0:Q.H": 14, "0:Q.G": 15} {
		assert.Equal(t, b, javaBucket(k, 16), k)
	}
	m := newJavaHashMap()
	for _, k := range []string{"0:Q.G", "1:T.EMPTY2", "0:Q.H", "1:T.G"} {
		m.put(k)
	}
	assert.Equal(t, []string{"1:T.EMPTY2", "1:T.G", "0:Q.H", "0:Q.G"}, m.keys(), "bucket order, insertion order within a bucket")
	m.remove("1:T.EMPTY2")
	m.put("1:T.EMPTY2")
	assert.Equal(t, []string{"1:T.G", "1:T.EMPTY2", "0:Q.H", "0:Q.G"}, m.keys(), "re-insertion goes to the end of its bucket")
	// growth: 13 keys exceed 12 = 3/4 of 16
	m = newJavaHashMap()
	for i := 0; i < 13; i++ {
		m.put(string(rune('a' + i)))
	}
	assert.Equal(t, 32, m.capacity)
	for i := 0; i < 13; i++ {
		m.remove(string(rune('a' + i)))
	}
	assert.Equal(t, 32, m.capacity, "a HashMap never shrinks")
}

func TestJavaLess(t *testing.T) {
	assert.True(t, javaLess("0:A", "0:B"))
	assert.True(t, javaLess("0:A", "0:AB"))
	assert.False(t, javaLess("1:A", "0:B"))
	// U+FF5E sorts after U+1F600 in UTF-16 (surrogates are D800..DFFF)
	assert.True(t, javaLess("😀", "～"))
	assert.False(t, "😀" < "～", "Go's byte order differs")
}

// TestCompactionSources: the sources of the compaction files, each once,
// in file order.
func TestCompactionSources(t *testing.T) {
	g := &Graph{files: []*File{{ID: 5, Compaction: true, Source: 3}, {ID: 6}, {ID: 7, Compaction: true, Source: 3},
		{ID: 8, Compaction: true, Source: 4}}}
	assert.Equal(t, []int32{3, 4}, g.CompactionSources())
	assert.Empty(t, (&Graph{files: []*File{{ID: 1}}}).CompactionSources())
}

package refgraph

import (
	"sort"
	"unicode/utf16"
)

// javaStringHash is java.lang.String.hashCode: 31*h + c over UTF-16 code
// units, in int32 arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			a, b := utf16.EncodeRune(r)
			h = 31*h + int32(a)
			h = 31*h + int32(b)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// javaBucket is java.util.HashMap's bucket of a key for a table of
// capacity n (a power of two): (h ^ (h >>> 16)) & (n-1).
func javaBucket(s string, n int) int {
	h := uint32(javaStringHash(s))
	return int((h ^ (h >> 16)) & uint32(n-1))
}

// javaLess is String.compareTo < 0: UTF-16 code unit order.
func javaLess(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// javaHashMap emulates the iteration order of a java.util.HashMap<String,V>
// under puts and removes: buckets in ascending order, insertion order
// within a bucket (resizes keep the relative order), the table doubling
// when the size exceeds 3/4 of the capacity and never shrinking.
// Treeified buckets (8+ collisions in a table of 64+) are not modelled.
type javaHashMap struct {
	capacity int
	ins      map[string]int64 // key -> insertion stamp
	stamp    int64
}

func newJavaHashMap() *javaHashMap { return &javaHashMap{ins: map[string]int64{}} }

func (m *javaHashMap) put(k string) {
	if _, ok := m.ins[k]; ok {
		return
	}
	if m.capacity == 0 {
		m.capacity = 16
	}
	m.stamp++
	m.ins[k] = m.stamp
	if len(m.ins) > m.capacity*3/4 {
		m.capacity *= 2
	}
}

func (m *javaHashMap) remove(k string) { delete(m.ins, k) }

func (m *javaHashMap) has(k string) bool { _, ok := m.ins[k]; return ok }

// keys returns the keys in iteration order.
func (m *javaHashMap) keys() []string {
	out := make([]string, 0, len(m.ins))
	for k := range m.ins {
		out = append(out, k)
	}
	c := m.capacity
	sort.Slice(out, func(i, j int) bool {
		bi, bj := javaBucket(out[i], c), javaBucket(out[j], c)
		if bi != bj {
			return bi < bj
		}
		return m.ins[out[i]] < m.ins[out[j]]
	})
	return out
}

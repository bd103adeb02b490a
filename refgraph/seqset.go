package refgraph

import "sort"

// seqRange is an inclusive range of sequence ids.
type seqRange struct{ first, last int64 }

// seqSet is the broker's SequenceSet: ascending, non-adjacent inclusive
// ranges. The broker's "size" is the number of ranges, its "rangeSize" the
// number of values.
type seqSet struct{ r []seqRange }

func (s *seqSet) empty() bool { return len(s.r) == 0 }

// ranges is SequenceSet.size().
func (s *seqSet) ranges() int { return len(s.r) }

// count is SequenceSet.rangeSize().
func (s *seqSet) count() int64 {
	var n int64
	for _, x := range s.r {
		n += x.last - x.first + 1
	}
	return n
}

// head is the first value; the set must not be empty.
func (s *seqSet) head() int64 { return s.r[0].first }

// find returns the index of the first range whose last >= v.
func (s *seqSet) find(v int64) int {
	n := len(s.r)
	// fast path: appends and lookups near the end
	if n > 0 && s.r[n-1].last < v {
		return n
	}
	return sort.Search(n, func(i int) bool { return s.r[i].last >= v })
}

func (s *seqSet) contains(v int64) bool {
	i := s.find(v)
	return i < len(s.r) && s.r[i].first <= v
}

// addRange adds [a, b] (a <= b), merging adjacent and overlapping ranges.
func (s *seqSet) addRange(a, b int64) {
	n := len(s.r)
	if n == 0 || s.r[n-1].last+1 < a {
		s.r = append(s.r, seqRange{a, b})
		return
	}
	if a >= s.r[n-1].first {
		// starts inside or right after the last range (the usual case:
		// the next message and its marker)
		if b > s.r[n-1].last {
			s.r[n-1].last = b
		}
		return
	}
	// general case: first range that could touch [a,b]
	i := sort.Search(n, func(i int) bool { return s.r[i].last+1 >= a })
	j := i
	lo, hi := a, b
	for j < n && s.r[j].first <= b+1 {
		if s.r[j].first < lo {
			lo = s.r[j].first
		}
		if s.r[j].last > hi {
			hi = s.r[j].last
		}
		j++
	}
	if i == j {
		s.r = append(s.r, seqRange{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = seqRange{lo, hi}
		return
	}
	s.r[i] = seqRange{lo, hi}
	s.r = append(s.r[:i+1], s.r[j:]...)
}

// add adds one value.
func (s *seqSet) add(v int64) { s.addRange(v, v) }

// remove removes v and reports whether it was present.
func (s *seqSet) remove(v int64) bool {
	i := s.find(v)
	if i >= len(s.r) || s.r[i].first > v {
		return false
	}
	x := s.r[i]
	switch {
	case x.first == x.last:
		s.r = append(s.r[:i], s.r[i+1:]...)
	case v == x.first:
		s.r[i].first++
	case v == x.last:
		s.r[i].last--
	default:
		s.r = append(s.r, seqRange{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = seqRange{x.first, v - 1}
		s.r[i+1] = seqRange{v + 1, x.last}
	}
	return true
}

// each calls fn for every value in ascending order.
func (s *seqSet) each(fn func(int64)) {
	for _, x := range s.r {
		for v := x.first; v <= x.last; v++ {
			fn(v)
		}
	}
}

func (s *seqSet) clone() seqSet { return seqSet{r: append([]seqRange(nil), s.r...)} }

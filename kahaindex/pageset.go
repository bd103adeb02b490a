package kahaindex

// pageSet is a set of page ids, for the cycle guards of page streams and
// B-tree walks. Most hold a few pages (a stream of one page, a descent
// of three levels): a short array holds them without hashing. A walk
// along the leaves of a big tree holds thousands: a bitmap over the
// file's pages holds them (a map there grew and hashed for a tenth of a
// stream's time on the bench store's 240 MB db.data). Ids outside the
// file (whose reads fail) go to a map.
type pageSet struct {
	few   [pageSetFew]int64
	count int      // ids added
	big   bool     // past pageSetFew ids: in bits and other
	bits  []uint64 // by page id, ids below pages
	pages int64
	other map[int64]struct{}
}

const pageSetFew = 8

// reset empties s, for ids of a file of pages pages; s keeps its room.
func (s *pageSet) reset(pages int64) {
	if s.big {
		clear(s.bits)
		clear(s.other)
	}
	s.count, s.big, s.pages = 0, false, max(pages, 0)
}

// add adds id and reports whether s held it already.
func (s *pageSet) add(id int64) (had bool) {
	if !s.big {
		for _, p := range s.few[:s.count] {
			if p == id {
				return true
			}
		}
		if s.count < pageSetFew {
			s.few[s.count] = id
			s.count++
			return false
		}
		s.grow()
	}
	if id >= 0 && id < s.pages {
		w, b := id/64, uint64(1)<<(uint64(id)%64)
		if s.bits[w]&b != 0 {
			return true
		}
		s.bits[w] |= b
	} else {
		if _, ok := s.other[id]; ok {
			return true
		}
		if s.other == nil {
			s.other = map[int64]struct{}{}
		}
		s.other[id] = struct{}{}
	}
	s.count++
	return false
}

// grow moves the few ids to the bitmap (and the map).
func (s *pageSet) grow() {
	words := int((s.pages + 63) / 64)
	if cap(s.bits) < words {
		s.bits = make([]uint64, words)
	}
	s.bits = s.bits[:words]
	s.big = true
	n := s.count
	s.count = 0
	for _, p := range s.few[:n] {
		s.add(p)
	}
}

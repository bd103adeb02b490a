package refgraph

import "strconv"

// msgKey is a message id without a string per message: a producer key is
// "<producer id>:<producer sequence>", so the producer id is interned
// (reference counted) and the sequence kept as a number. Ids that do not
// end in a canonical decimal number keep the whole id as prefix and
// seq == -1.
type msgKey struct {
	prefix uint32
	seq    int64
}

// idTable interns producer-id prefixes. Entries are reference counted by
// the messages and transaction operations that use them, so the table
// holds only what live state needs.
type idTable struct {
	byName map[string]uint32
	names  []string
	refs   []int32
	free   []uint32
	// recent: prefixes found before, by recentSlot of the name (a
	// cache, checked against the names: producers interleave, and their
	// ids differ at the end)
	recent [64]uint32
}

// recentSlot picks the recent slot of a prefix.
func recentSlot(p []byte) int { return prefixHash(p) & 63 }

// prefixHash hashes a prefix from its length and last bytes (where the
// connection, session and producer numbers are), for the direct-mapped
// tables of prefixes (idTable.recent, feedPrefixes).
func prefixHash(p []byte) int {
	h := uint(len(p)) * 0x9e3779b1
	for _, c := range p[max(len(p)-8, 0):] {
		h = h*31 + uint(c)
	}
	return int(h ^ h>>11)
}

// find returns the index of a live prefix.
func (t *idTable) find(p []byte) (uint32, bool) {
	slot := &t.recent[recentSlot(p)]
	if ix := *slot; int(ix) < len(t.names) && t.refs[ix] > 0 && t.names[ix] == string(p) {
		return ix, true
	}
	ix, ok := t.byName[string(p)]
	if ok {
		*slot = ix
	}
	return ix, ok
}

func newIDTable() *idTable { return &idTable{byName: map[string]uint32{}} }

// split cuts id into prefix and numeric suffix.
func split(id []byte) (prefix []byte, seq int64) {
	i := len(id) - 1
	for i >= 0 && id[i] >= '0' && id[i] <= '9' {
		i--
	}
	digits := len(id) - 1 - i
	if i < 0 || id[i] != ':' || digits == 0 || digits > 18 || (digits > 1 && id[i+1] == '0') {
		return id, -1
	}
	var n int64
	for _, c := range id[i+1:] {
		n = n*10 + int64(c-'0')
	}
	return id[:i], n
}

// lookup finds the key of id without interning; ok false when no live
// message or operation uses its prefix (so no such message exists).
func (t *idTable) lookup(id []byte) (msgKey, bool) {
	p, seq := split(id)
	ix, ok := t.find(p)
	return msgKey{ix, seq}, ok
}

// intern returns the key of id and takes a reference on its prefix.
func (t *idTable) intern(id []byte) msgKey {
	p, seq := split(id)
	ix, ok := t.find(p)
	if !ok {
		s := string(p)
		if n := len(t.free); n > 0 {
			ix = t.free[n-1]
			t.free = t.free[:n-1]
			t.names[ix] = s
			t.refs[ix] = 0
		} else {
			ix = uint32(len(t.names))
			t.names = append(t.names, s)
			t.refs = append(t.refs, 0)
		}
		t.byName[s] = ix
		t.recent[recentSlot(p)] = ix
	}
	t.refs[ix]++
	return msgKey{ix, seq}
}

// ref takes another reference on k's prefix.
func (t *idTable) ref(k msgKey) { t.refs[k.prefix]++ }

// release drops a reference taken by intern or ref.
func (t *idTable) release(k msgKey) {
	t.refs[k.prefix]--
	if t.refs[k.prefix] == 0 {
		delete(t.byName, t.names[k.prefix])
		t.names[k.prefix] = ""
		t.free = append(t.free, k.prefix)
	}
}

// String rebuilds the message id.
func (t *idTable) String(k msgKey) string {
	if k.seq < 0 {
		return t.names[k.prefix]
	}
	return t.names[k.prefix] + ":" + strconv.FormatInt(k.seq, 10)
}

// strTable interns strings that repeat across records (destination names,
// subscription keys).
type strTable map[string]string

func (t strTable) get(b []byte) string {
	if s, ok := t[string(b)]; ok {
		return s
	}
	s := string(b)
	t[s] = s
	return s
}

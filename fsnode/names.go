package fsnode

import (
	"sort"
	"strconv"
	"strings"
)

// nameIndex names the entries of a directory whose entries carry raw
// names from the journal (destinations, subscriptions, transactions): each
// gets EscapeName of its raw name, and the rare entries whose raw name
// repeats one before it get "%~2", "%~3", ... appended ("%~" never occurs
// in an escaped name; such names are shortened at dupLimit bytes to leave
// room for the suffix). It finds an entry by name with a binary search over
// the entries sorted by raw name: no map, no name kept in memory.
type nameIndex struct {
	raw   func(i int) string // raw name of entry i
	order []int32            // entries sorted by raw name; ties keep entry order
}

const dupMarker = "%~"

// dupLimit leaves room for a duplicate suffix in MaxNameLen.
const dupLimit = MaxNameLen - 12

func newNameIndex(n int, raw func(i int) string) *nameIndex {
	x := &nameIndex{raw: raw, order: make([]int32, n)}
	for i := range x.order {
		x.order[i] = int32(i)
	}
	sort.SliceStable(x.order, func(a, b int) bool { return raw(int(x.order[a])) < raw(int(x.order[b])) })
	return x
}

func (x *nameIndex) len() int { return len(x.order) }

// entry returns the entry listed k-th (sorted order) and its name.
func (x *nameIndex) entry(k int) (int, string) {
	i := int(x.order[k])
	r := x.raw(i)
	dup := 0
	for j := k - 1; j >= 0 && x.raw(int(x.order[j])) == r; j-- {
		dup++
	}
	return i, entryName(r, dup)
}

func entryName(raw string, dup int) string {
	if dup == 0 {
		return EscapeName(raw)
	}
	return escapeName(raw, dupLimit) + dupMarker + strconv.Itoa(dup+1)
}

// lookup returns the entry called name.
func (x *nameIndex) lookup(name string) (int, bool) {
	k, ok := x.find(name)
	if !ok {
		return 0, false
	}
	return int(x.order[k]), true
}

// find returns the position (in listing order) of the entry called name.
func (x *nameIndex) find(name string) (int, bool) {
	base, dup := name, 0
	if i := strings.LastIndex(name, dupMarker); i >= 0 {
		n, err := strconv.Atoi(name[i+len(dupMarker):])
		if err != nil || n < 2 || name[i+len(dupMarker):] != strconv.Itoa(n) {
			return 0, false
		}
		base, dup = name[:i], n-1
	}
	raw, full, err := UnescapeName(base)
	if err != nil {
		return 0, false
	}
	// First entry whose raw name is >= raw (the prefix, when shortened).
	k := sort.Search(len(x.order), func(k int) bool { return x.raw(int(x.order[k])) >= raw })
	if full {
		k += dup
		if k < len(x.order) && x.raw(int(x.order[k])) == raw {
			if _, n := x.entry(k); n == name {
				return k, true
			}
		}
		return 0, false
	}
	for ; k < len(x.order) && strings.HasPrefix(x.raw(int(x.order[k])), raw); k++ {
		if _, n := x.entry(k); n == name {
			return k, true
		}
	}
	return 0, false
}

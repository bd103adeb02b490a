package kahaindex

// listIndex reads a ListIndex (disk/index/ListIndex, ListNode): a chain of
// nodes from a fixed head page, each one page stream:
//
//	int64 next node page (-1: last)
//	int16 count (a negative count reads as no entries)
//	count × (key, value)
//
// A free head page is an empty list (ListIndex.load initialises it). The
// broker loads every node of the chain when it loads the list.
type listIndex[K, V any] struct {
	pf    *pageFile
	head  int64
	what  string
	kind  objectKind
	key   func(dataInput) (K, error)
	value func(dataInput) (V, error)
}

type listEntry[K, V any] struct {
	key   K
	value V
	node  int // the ordinal of its node in the chain (0: the head)
}

// load is ListIndex.load followed by an iteration: every entry in chain
// order. Any error fails (the broker's load propagates them, and its list
// iterators turn them into runtime exceptions). A free head page makes an
// empty list (the broker takes it for a new one), and load reports it.
func (l *listIndex[K, V]) load() (_ []listEntry[K, V], freeHead bool, err error) {
	typ, err := l.pf.pageType(l.head, l.what)
	if err != nil {
		return nil, false, err
	}
	if typ == pageFree {
		l.pf.cacheAs(l.head, l.kind, true, true)
		return nil, true, nil
	}
	var out []listEntry[K, V]
	seen := map[int64]struct{}{}
	for id, node := l.head, 0; ; node++ {
		if _, ok := seen[id]; ok {
			return nil, false, l.pf.pageErr(id, l.pf.toOffset(id), l.what, ErrCycle,
				"the list's node chain comes back to this page", false)
		}
		seen[id] = struct{}{}
		from := len(out)
		next, err := l.loadNode(id, &out)
		if err != nil {
			return nil, false, err
		}
		for i := from; i < len(out); i++ {
			out[i].node = node
		}
		if next == -1 { // ListIndex.NOT_SET; any other negative id fails to load
			return out, false, nil
		}
		id = next
	}
}

func (l *listIndex[K, V]) loadNode(id int64, out *[]listEntry[K, V]) (int64, error) {
	if err := l.pf.claim(id, l.kind, l.what); err != nil {
		return 0, err
	}
	if e, ok := l.pf.cache.get(id); ok && e.initialized {
		return -1, nil
	}
	before := len(*out)
	next, err := l.decodeNode(id, out)
	if err != nil {
		return 0, err
	}
	l.pf.cacheAs(id, l.kind, len(*out) == before, false)
	return next, nil
}

func (l *listIndex[K, V]) decodeNode(id int64, out *[]listEntry[K, V]) (int64, error) {
	s, err := l.pf.openStream(id, l.what)
	if err != nil {
		return 0, err
	}
	next, err := readI64(s)
	if err != nil {
		return 0, err
	}
	count, err := readI16(s)
	if err != nil {
		return 0, err
	}
	for i := int16(0); i < count; i++ {
		k, err := l.key(s)
		if err != nil {
			return 0, err
		}
		v, err := l.value(s)
		if err != nil {
			return 0, err
		}
		*out = append(*out, listEntry[K, V]{key: k, value: v})
	}
	return next, nil
}

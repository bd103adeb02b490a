package kahaindex

import (
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// A test index written the way the broker writes one, small enough to edit
// field by field. testIndex() is a sound index with a queue and a topic;
// tests change its pages and check what Read makes of them.
type tIndex struct {
	pageSize int
	header   [2]string        // the two header copies (properties text)
	pages    map[int64][]byte // page id -> whole page
	redo     []byte           // nil: no db.redo
	free     []byte           // nil: no db.free
}

func props(clean bool, txid int, extra string) string {
	return fmt.Sprintf("#\n#Sun Nov 29 22:13:32 UTC 2026\nfileTypeVersion=1\nlastTxId=7\nfreePages=0\npageSize=4096\n"+
		"cleanShutdown=%v\nfileType=org.apache.activemq.store.kahadb.disk.page.PageFile\nmetaDataTxId=%d\n%s\n", clean, txid, extra)
}

func (x *tIndex) bytes() []byte {
	n := int64(0)
	for id := range x.pages {
		n = max(n, id+1)
	}
	b := make([]byte, 4096+n*int64(x.pageSize))
	for i, h := range x.header {
		copy(b[i*2048:(i+1)*2048], h)
		for j := i*2048 + len(h); j < (i+1)*2048; j++ {
			b[j] = ' '
		}
	}
	for id, p := range x.pages {
		copy(b[4096+id*int64(x.pageSize):], p)
	}
	return b
}

func (x *tIndex) parse() (*Index, error) { return Parse(x.bytes(), x.redo, x.free) }

// page makes one page: type, next field, payload.
func (x *tIndex) page(typ byte, next int64, payload []byte) []byte {
	p := make([]byte, x.pageSize)
	p[0] = typ
	binary.BigEndian.PutUint64(p[9:], uint64(next))
	copy(p[pageHeaderSize:], payload)
	return p
}

// put stores payload as a page stream over ids (one page each, part pages
// then an end page), as Transaction.openOutputStream writes it.
func (x *tIndex) put(payload []byte, ids ...int64) {
	room := x.pageSize - pageHeaderSize
	for i, id := range ids {
		if i == len(ids)-1 {
			if len(payload) > room {
				panic("payload does not fit the pages given")
			}
			x.pages[id] = x.page(pageEnd, int64(pageHeaderSize+len(payload)), payload)
			return
		}
		x.pages[id] = x.page(pagePart, ids[i+1], payload[:room])
		payload = payload[room:]
	}
}

// out is a java.io.DataOutput.
type out []byte

func (o out) u8(v byte) out        { return append(o, v) }
func (o out) bool(v bool) out      { return o.u8(map[bool]byte{false: 0, true: 1}[v]) }
func (o out) i16(v int16) out      { return binary.BigEndian.AppendUint16(o, uint16(v)) }
func (o out) i32(v int32) out      { return binary.BigEndian.AppendUint32(o, uint32(v)) }
func (o out) i64(v int64) out      { return binary.BigEndian.AppendUint64(o, uint64(v)) }
func (o out) utf(s string) out     { return append(o.i16(int16(len(s))), s...) } // ASCII only
func (o out) raw(b []byte) out     { return append(o, b...) }
func (o out) loc(f, off int32) out { return o.i32(f).i32(off) }
func (o out) optLoc(f, off int32) out {
	if f < 0 {
		return o.bool(false)
	}
	return o.bool(true).loc(f, off)
}

func metadataPage(destPage int64) out {
	return out{}.i32(2).i64(destPage).optLoc(1, 100).optLoc(-1, 0).optLoc(1, 50).i32(7).optLoc(1, 60).i32(11)
}

// leaf is a B-tree leaf node.
func leaf(keys, values []out, next int64) out {
	o := out{}.i16(int16(len(keys)))
	for _, k := range keys {
		o = o.raw(k)
	}
	o = o.bool(false)
	for _, v := range values {
		o = o.raw(v)
	}
	return o.i64(next)
}

// branch is a B-tree branch node.
func branch(keys []out, children ...int64) out {
	o := out{}.i16(int16(len(keys)))
	for _, k := range keys {
		o = o.raw(k)
	}
	o = o.bool(true)
	for _, c := range children {
		o = o.i64(c)
	}
	return o
}

// listNode is a ListIndex node.
func listNode(next int64, keys, values []out) out {
	o := out{}.i64(next).i16(int16(len(keys)))
	for i := range keys {
		o = o.raw(keys[i]).raw(values[i])
	}
	return o
}

func storedQueue(def, loc, msgid, low, high, stats int64) out {
	return out{}.i64(def).i64(loc).i64(msgid).bool(false).i64(low).i64(high).i64(stats)
}

func storedTopic(def, loc, msgid, subs, acks, ackPos, subLocs, low, high, stats int64) out {
	return out{}.i64(def).i64(loc).i64(msgid).bool(true).i64(subs).i64(acks).i64(ackPos).i64(subLocs).
		i64(low).i64(high).i64(stats)
}

func msgKeys(id string, file, off, size int32) out { return out{}.utf(id).loc(file, off).i32(size) }

func locKey(file, off, size int32) out { return out{}.loc(file, off).i32(size) }

func seqSet(ranges ...Range) out {
	o := out{}.i32(int32(len(ranges)))
	for _, r := range ranges {
		if r.First == r.Last {
			o = o.bool(false).i64(r.First)
		} else {
			o = o.bool(true).i64(r.First).i64(r.Last)
		}
	}
	return o
}

// subCommand is a framed KahaSubscriptionCommand for topic name and key.
func subCommand(topic, key string) out {
	dest := protowire.AppendTag(nil, 1, protowire.VarintType)
	dest = protowire.AppendVarint(dest, 1)
	dest = protowire.AppendTag(dest, 2, protowire.BytesType)
	dest = protowire.AppendString(dest, topic)
	m := protowire.AppendTag(nil, 1, protowire.BytesType)
	m = protowire.AppendBytes(m, dest)
	m = protowire.AppendTag(m, 2, protowire.BytesType)
	m = protowire.AppendString(m, key)
	m = protowire.AppendTag(m, 3, protowire.VarintType)
	m = protowire.AppendVarint(m, 0)
	m = protowire.AppendTag(m, 4, protowire.BytesType)
	m = protowire.AppendBytes(m, []byte{0, 0, 0, 4, 37, 1, 2, 3})
	return out(protowire.AppendBytes(nil, m))
}

func i64s(vs ...int64) []out {
	var o []out
	for _, v := range vs {
		o = append(o, out{}.i64(v))
	}
	return o
}

func utfs(vs ...string) []out {
	var o []out
	for _, v := range vs {
		o = append(o, out{}.utf(v))
	}
	return o
}

// testIndex: queue 0:Q.A with messages 1 and 2 (DEF), topic 1:T.B with
// message 3 and durable subscription c:s (last ack 2, pending 3..4).
//
//	0 metadata              1 destinations leaf
//	2..7  Q.A: DEF, location, message-id, LO, HI, statistics
//	8..17 T.B: DEF, location, message-id, subscriptions, acks,
//	           ack positions, subscription locations, LO, HI, statistics (free)
func testIndex() *tIndex { return testIndexSized(4096) }

// testIndexSized is testIndex with pages of ps bytes (256 is enough).
func testIndexSized(ps int) *tIndex {
	h := strings.Replace(props(true, 2, ""), "pageSize=4096", fmt.Sprintf("pageSize=%d", ps), 1)
	x := &tIndex{pageSize: ps, header: [2]string{h, h}, pages: map[int64][]byte{}}
	x.put(metadataPage(1), 0)
	x.put(leaf(utfs("0:Q.A", "1:T.B"), []out{storedQueue(2, 3, 4, 5, 6, 7),
		storedTopic(8, 9, 10, 11, 12, 13, 14, 15, 16, 17)}, -1), 1)
	x.put(leaf(i64s(1, 2), []out{msgKeys("ID:1", 1, 200, 50), msgKeys("ID:2", 1, 300, 50)}, -1), 2)
	x.put(leaf([]out{locKey(1, 200, 50), locKey(1, 300, 50)}, i64s(1, 2), -1), 3)
	x.put(leaf(utfs("ID:1", "ID:2"), i64s(1, 2), -1), 4)
	x.put(leaf(nil, nil, -1), 5)
	x.put(leaf(nil, nil, -1), 6)
	x.put(out{}.bool(true).i64(2).i64(100).i64(50).i64(50).i64(2), 7)
	x.put(leaf(i64s(3), []out{msgKeys("ID:3", 1, 400, 60)}, -1), 8)
	x.put(leaf([]out{locKey(1, 400, 60)}, i64s(3), -1), 9)
	x.put(leaf(utfs("ID:3"), i64s(3), -1), 10)
	x.put(leaf(utfs("c:s"), []out{subCommand("T.B", "c:s")}, -1), 11)
	x.put(leaf(utfs("c:s"), []out{out{}.i64(2).u8(PriorityDefault)}, -1), 12)
	x.put(listNode(-1, utfs("c:s"), []out{seqSet(Range{3, 4})}), 13)
	x.put(listNode(-1, utfs("c:s"), []out{out{}.loc(1, 10)}), 14)
	x.put(leaf(nil, nil, -1), 15)
	x.put(leaf(nil, nil, -1), 16)
	x.pages[17] = x.page(pageFree, 0, nil)
	return x
}

// redoFile is a db.redo holding one batch with the pages given (id order),
// its checksum right.
func redoFile(x *tIndex, nextTx int64, pages map[int64][]byte) []byte {
	b := make([]byte, 4096)
	ids := make([]int64, 0, len(pages))
	for id := range pages {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	sum := adler32.New()
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = append(b, pages[id]...)
		sum.Write(pages[id])
	}
	binary.BigEndian.PutUint64(b[0:], uint64(nextTx))
	binary.BigEndian.PutUint64(b[8:], uint64(sum.Sum32()))
	binary.BigEndian.PutUint32(b[16:], uint32(len(ids)))
	return b
}

package kahaindex

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestReadUTFBytes: readUTFBytes gives readUTF's string as UTF-8 and
// leaves the stream where readUTF does, for strings within a page (ASCII:
// taken from the page as it is; others: decoded) and across pages, and
// fails where readUTF fails.
func TestReadUTFBytes(t *testing.T) {
	const pageSize = 64
	utf := func(s string) []byte { // DataOutputStream.writeUTF of bytes s
		return append(binary.BigEndian.AppendUint16(nil, uint16(len(s))), s...)
	}
	// the strings one after the other, over part pages and an end page
	var payload []byte
	strs := []string{"ID:host-1-2:3:4:5", "", "caf\xc3\xa9 \xc0\x80 x", "ascii-0123456789abcdef", "long-enough-to-cross-a-page-boundary-0123456789", "\xe2\x82\xac", "tail"}
	for _, s := range strs {
		payload = append(payload, utf(s)...)
	}
	payload = append(payload, 0, 9, 0xc0) // a bad one: its length runs past the end
	room := pageSize - pageHeaderSize
	var data []byte
	data = append(data, make([]byte, fileHeaderSize)...)
	for id := 0; len(payload) > 0; id++ {
		page := make([]byte, pageSize)
		n := min(room, len(payload))
		copy(page[pageHeaderSize:], payload[:n])
		payload = payload[n:]
		if len(payload) > 0 {
			page[0] = pagePart
			binary.BigEndian.PutUint64(page[9:], uint64(id+1))
		} else {
			page[0] = pageEnd
			binary.BigEndian.PutUint64(page[9:], uint64(pageHeaderSize+n))
		}
		data = append(data, page...)
	}
	open := func() *stream {
		pf := &pageFile{data: source{name: "db.data", r: bytes.NewReader(data), size: int64(len(data))},
			pageSize: pageSize, length: int64(len(data)), budget: 1 << 20}
		s, err := pf.openStream(0, "test")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open(), open()
	for i := 0; ; i++ {
		want, werr := readUTF(a)
		got, gerr := readUTFBytes(b, []byte("prefix"))
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("string %d: readUTF: %v; readUTFBytes: %v", i, werr, gerr)
		}
		if werr != nil {
			if i != len(strs) {
				t.Fatalf("failed at string %d of %d: %v", i, len(strs), werr)
			}
			return
		}
		if string(got) != "prefix"+want.String() {
			t.Fatalf("string %d: readUTFBytes %q, readUTF %q", i, got, want.String())
		}
		if a.page != b.page || a.pos != b.pos {
			t.Fatalf("string %d: readUTFBytes left the stream at page %d pos %d, readUTF at %d %d", i, b.page, b.pos, a.page, a.pos)
		}
	}
}

package kahaindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idxMeta marshals MessageDatabase.Metadata the way 5.17 writes it.
func idxMeta(lastUpdate, firstTx, audit, ackMap *codec.Location, old bool) []byte {
	put := func(b []byte, l *codec.Location) []byte {
		if l == nil {
			return append(b, 0)
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint32(b, uint32(l.File))
		return binary.BigEndian.AppendUint32(b, uint32(l.Offset))
	}
	b := binary.BigEndian.AppendUint32(nil, 2) // state
	b = binary.BigEndian.AppendUint64(b, 1)    // destinations page
	b = put(b, lastUpdate)
	b = put(b, firstTx)
	b = put(b, audit)
	if old {
		return b
	}
	b = binary.BigEndian.AppendUint32(b, 7)
	b = put(b, ackMap)
	return binary.BigEndian.AppendUint32(b, 11)
}

// idxPage builds a 4 KiB end page holding payload.
func idxPage(payload []byte) []byte {
	p := make([]byte, 4096)
	p[0] = headPageTypeEnd
	binary.BigEndian.PutUint64(p[1:], 5) // txId
	binary.BigEndian.PutUint64(p[9:], uint64(pageHeaderSize+len(payload)))
	copy(p[pageHeaderSize:], payload)
	return p
}

func idxDBData(pages ...[]byte) []byte {
	b := make([]byte, fileHeaderSize)
	copy(b, "#test\npageSize=4096\ncleanShutdown=false\nlastTxId=12\n")
	for _, p := range pages {
		b = append(b, p...)
	}
	return b
}

// idxRedo builds a db.redo holding one batch of (page id, page) records.
func idxRedo(ids []int64, pages [][]byte, corrupt bool) []byte {
	b := make([]byte, redoHeaderSize)
	h := adler32.New()
	for i, p := range pages {
		b = binary.BigEndian.AppendUint64(b, uint64(ids[i]))
		b = append(b, p...)
		h.Write(p)
	}
	sum := uint64(h.Sum32())
	if corrupt {
		sum++
	}
	binary.BigEndian.PutUint64(b[0:], 9)
	binary.BigEndian.PutUint64(b[8:], sum)
	binary.BigEndian.PutUint32(b[16:], uint32(len(pages)))
	return b
}

func idxLoc(f, o int32) *codec.Location { return &codec.Location{File: f, Offset: o} }

func TestParseHead(t *testing.T) {
	full := idxMeta(idxLoc(4, 100), idxLoc(1, 28), idxLoc(4, 60), idxLoc(4, 100), false)
	newer := idxMeta(idxLoc(5, 200), nil, idxLoc(5, 160), idxLoc(5, 200), false)
	other := idxPage(idxMeta(idxLoc(9, 9), nil, nil, nil, false))
	for _, tc := range []struct {
		name       string
		data, redo []byte
		want       Head
	}{
		{"page 0", idxDBData(idxPage(full)), nil, Head{PageSize: 4096, LastTxID: 12, Metadata: Metadata{State: 2, DestinationsPage: 1, LastUpdate: idxLoc(4, 100), FirstInProgressTx: idxLoc(1, 28), ProducerAudit: idxLoc(4, 60), Version: 7, AckMap: idxLoc(4, 100), OpenWireVersion: 11}}},
		{"redo batch wins", idxDBData(idxPage(full)), idxRedo([]int64{3, 0}, [][]byte{other, idxPage(newer)}, false),
			Head{PageSize: 4096, LastTxID: 12, Metadata: Metadata{State: 2, DestinationsPage: 1, LastUpdate: idxLoc(5, 200), ProducerAudit: idxLoc(5, 160), Version: 7, AckMap: idxLoc(5, 200), OpenWireVersion: 11}, FromRedo: true}},
		{"torn redo batch ignored", idxDBData(idxPage(full)), idxRedo([]int64{0}, [][]byte{idxPage(newer)}, true),
			Head{PageSize: 4096, LastTxID: 12, Metadata: Metadata{State: 2, DestinationsPage: 1, LastUpdate: idxLoc(4, 100), FirstInProgressTx: idxLoc(1, 28), ProducerAudit: idxLoc(4, 60), Version: 7, AckMap: idxLoc(4, 100), OpenWireVersion: 11}}},
		{"redo without page 0", idxDBData(idxPage(full)), idxRedo([]int64{3}, [][]byte{other}, false),
			Head{PageSize: 4096, LastTxID: 12, Metadata: Metadata{State: 2, DestinationsPage: 1, LastUpdate: idxLoc(4, 100), FirstInProgressTx: idxLoc(1, 28), ProducerAudit: idxLoc(4, 60), Version: 7, AckMap: idxLoc(4, 100), OpenWireVersion: 11}}},
		{"old metadata without ack map", idxDBData(idxPage(idxMeta(idxLoc(2, 28), nil, nil, nil, true))), nil,
			Head{PageSize: 4096, LastTxID: 12, Metadata: Metadata{State: 2, DestinationsPage: 1, LastUpdate: idxLoc(2, 28), Version: 1, OpenWireVersion: 6}}},
		// Metadata.read: no ack map location before version 5, the
		// OpenWire version follows the version
		{"version 4", idxDBData(idxPage(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(idxMeta(idxLoc(2, 28), nil, nil, nil, true), 4), 9))), nil,
			Head{PageSize: 4096, LastTxID: 12, Metadata: Metadata{State: 2, DestinationsPage: 1, LastUpdate: idxLoc(2, 28), Version: 4, OpenWireVersion: 9}}},
		{"no producer audit", idxDBData(idxPage(idxMeta(idxLoc(2, 28), nil, nil, nil, true)[:4+8+9+1])), nil,
			Head{PageSize: 4096, LastTxID: 12, Metadata: Metadata{State: 2, DestinationsPage: 1, LastUpdate: idxLoc(2, 28), Version: 1, OpenWireVersion: 6}}},
		{"empty index", nil, nil, Head{PageSize: 4096}},
		{"header only", idxDBData(), nil, Head{PageSize: 4096, LastTxID: 12}},
		{"free page 0", idxDBData(make([]byte, 4096)), nil, Head{PageSize: 4096, LastTxID: 12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseHead(tc.data, tc.redo)
			require.NoError(t, err)
			assert.Equal(t, tc.want, *m)
		})
	}
}

func TestParseHeadErrors(t *testing.T) {
	part := idxPage(idxMeta(idxLoc(1, 1), nil, nil, nil, false))
	part[0] = headPageTypePart
	badLen := idxPage(nil)
	binary.BigEndian.PutUint64(badLen[9:], 5000)
	short := idxPage([]byte{0, 0, 0, 2, 0, 0})
	badType := idxPage(nil)
	badType[0] = 7
	for name, p := range map[string][]byte{"part page": part, "bad length": badLen, "short payload": short, "bad type": badType} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseHead(idxDBData(p), nil)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrHead), "%v", err)
		})
	}
}

func TestReadHead(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadHead(dir)
	require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "db.data"), idxDBData(idxPage(idxMeta(idxLoc(3, 28), nil, nil, nil, false))), 0o644))
	m, err := ReadHead(dir)
	require.NoError(t, err)
	assert.Equal(t, idxLoc(3, 28), m.LastUpdate)
	assert.False(t, m.FromRedo)
}

// TestReadHeadFixture: values of a real broker's index (tx
// fixture: a prepared XA transaction keeps firstInProgressTx at its first
// operation; the broker logged "Recovering from the journal @1:298").
func TestReadHeadFixture(t *testing.T) {
	m, err := ReadHead("../testdata/stores/tx/store")
	if errors.Is(err, fs.ErrNotExist) {
		need.Skip(t, "tx fixture not available: %v", err)
	}
	require.NoError(t, err)
	assert.True(t, m.CleanShutdown)
	assert.Equal(t, int32(7), m.Version)
	assert.Equal(t, int32(11), m.OpenWireVersion)
	assert.Equal(t, idxLoc(1, 298), m.FirstInProgressTx)
	assert.Equal(t, idxLoc(4, 10090), m.LastUpdate)
	assert.Equal(t, idxLoc(4, 8469), m.ProducerAudit)
	assert.Equal(t, idxLoc(4, 10090), m.AckMap)
}

func TestMessageOpenWireVersion(t *testing.T) {
	old, err := ParseHead(idxDBData(idxPage(idxMeta(idxLoc(2, 28), nil, nil, nil, true))), nil)
	require.NoError(t, err)
	empty, err := ParseHead(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 11, (*Head)(nil).MessageOpenWireVersion(), "no index")
	assert.Equal(t, 11, empty.MessageOpenWireVersion(), "no metadata yet")
	assert.Equal(t, 6, old.MessageOpenWireVersion(), "an index from before the field")
	assert.Equal(t, 9, (&Head{Metadata: Metadata{OpenWireVersion: 9}}).MessageOpenWireVersion())
	assert.Equal(t, 11, StoreOpenWireVersion("../testdata/stores/tx/store"))
	assert.Equal(t, 11, StoreOpenWireVersion(t.TempDir()))
}

// FuzzParseHead: any db.data and db.redo parse without panic; an error
// wraps ErrHead; a head that parses has a page size ParseHead accepts and
// is what it says: written out again (header properties, metadata in page
// 0, no redo file), it parses to the same head; and where Read's full
// reader loads the same files, it finds the same metadata.
//
// The inputs are the parts ParseHead reads, kept small (the fuzzing engine
// is slow on inputs of kilobytes): the header's text, padded with zeros
// to its 4 KiB, then the pages; the redo file's header, padded likewise,
// then its records. Pages of 256 bytes keep most seeds under 1 KiB.
func FuzzParseHead(f *testing.F) {
	add := func(data, redo []byte) {
		split := func(b []byte, n int) ([]byte, []byte) {
			if len(b) < n {
				return bytes.TrimRight(b, "\x00"), nil
			}
			return bytes.TrimRight(b[:n], "\x00"), b[n:]
		}
		h, pages := split(data, fileHeaderSize)
		rh, records := split(redo, redoHeaderSize)
		f.Add(h, pages, rh, records)
	}
	small := func(meta []byte) []byte {
		p := make([]byte, 256)
		p[0] = headPageTypeEnd
		binary.BigEndian.PutUint64(p[9:], uint64(pageHeaderSize+len(meta)))
		copy(p[pageHeaderSize:], meta)
		return p
	}
	smallData := func(pages ...[]byte) []byte {
		b := make([]byte, fileHeaderSize)
		copy(b, "pageSize=256\ncleanShutdown=true\nlastTxId=3\n")
		for _, p := range pages {
			b = append(b, p...)
		}
		return b
	}
	smallRedo := func(ids []int64, pages [][]byte) []byte {
		b := make([]byte, redoHeaderSize)
		h := adler32.New()
		for i, p := range pages {
			b = binary.BigEndian.AppendUint64(b, uint64(ids[i]))
			b = append(b, p...)
			h.Write(p)
		}
		binary.BigEndian.PutUint64(b[8:], uint64(h.Sum32()))
		binary.BigEndian.PutUint32(b[16:], uint32(len(pages)))
		return b
	}
	add(smallData(small(idxMeta(idxLoc(4, 100), idxLoc(1, 28), idxLoc(4, 60), idxLoc(4, 100), false))), nil)
	add(smallData(small(idxMeta(idxLoc(2, 28), nil, nil, nil, true))), nil)
	add(smallData(small(nil)), smallRedo([]int64{3, 0}, [][]byte{small(nil), small(idxMeta(idxLoc(5, 200), nil, idxLoc(5, 160), idxLoc(5, 200), false))}))
	add(nil, nil)
	add(idxDBData(idxPage(idxMeta(idxLoc(4, 100), idxLoc(1, 28), idxLoc(4, 60), idxLoc(4, 100), false))), nil)
	f.Fuzz(func(t *testing.T, header, pages, redoHeader, redoRecords []byte) {
		var data, redo []byte
		if len(header)+len(pages) > 0 {
			data = append(append(make([]byte, 0, fileHeaderSize+len(pages)), header[:min(len(header), fileHeaderSize)]...), make([]byte, max(0, fileHeaderSize-len(header)))...)
			data = append(data, pages...)
		}
		if len(redoHeader)+len(redoRecords) > 0 {
			redo = append(append(make([]byte, 0, redoHeaderSize+len(redoRecords)), redoHeader[:min(len(redoHeader), redoHeaderSize)]...), make([]byte, max(0, redoHeaderSize-len(redoHeader)))...)
			redo = append(redo, redoRecords...)
		}
		h, err := ParseHead(data, redo)
		if err != nil {
			if !errors.Is(err, ErrHead) {
				t.Fatalf("error does not wrap ErrHead: %v", err)
			}
			return
		}
		if h.PageSize != headDefaultPageSz && (h.PageSize < pageHeaderSize+64 || h.PageSize > maxHeadPageSize) {
			t.Fatalf("page size %d", h.PageSize)
		}
		if h.FromRedo && len(redo) == 0 {
			t.Fatal("page 0 from a redo file that is not there")
		}
		again, err := ParseHead(writeHead(h), nil)
		if err != nil {
			t.Fatalf("head %+v written out does not parse: %v", h, err)
		}
		want := *h
		want.FromRedo = false
		if !reflect.DeepEqual(*again, want) {
			t.Fatalf("head %+v written out parses as %+v", want, *again)
		}
		if ix, err := Parse(data, redo, nil); err == nil && !ix.Fresh && !reflect.DeepEqual(ix.Meta, h.Metadata) {
			t.Fatalf("ParseHead's metadata %+v, Parse's %+v", h.Metadata, ix.Meta)
		}
	})
}

// writeHead writes h as a db.data: the header's properties, and the
// metadata (when there is some) in page 0, the way 5.17 writes them.
func writeHead(h *Head) []byte {
	b := make([]byte, fileHeaderSize)
	copy(b, fmt.Sprintf("#written by writeHead\npageSize=%d\ncleanShutdown=%t\nlastTxId=%d\n", h.PageSize, h.CleanShutdown, h.LastTxID))
	if h.Metadata == (Metadata{}) {
		return b
	}
	put := func(b []byte, l *codec.Location) []byte {
		if l == nil {
			return append(b, 0)
		}
		b = append(b, 1)
		b = binary.BigEndian.AppendUint32(b, uint32(l.File))
		return binary.BigEndian.AppendUint32(b, uint32(l.Offset))
	}
	m := h.Metadata
	p := binary.BigEndian.AppendUint32(nil, uint32(m.State))
	p = binary.BigEndian.AppendUint64(p, uint64(m.DestinationsPage))
	p = put(p, m.LastUpdate)
	p = put(p, m.FirstInProgressTx)
	p = put(p, m.ProducerAudit)
	p = binary.BigEndian.AppendUint32(p, uint32(m.Version))
	if m.Version >= 5 { // the field an older index does not have
		p = put(p, m.AckMap)
	}
	p = binary.BigEndian.AppendUint32(p, uint32(m.OpenWireVersion))
	page := make([]byte, h.PageSize)
	page[0] = headPageTypeEnd
	binary.BigEndian.PutUint64(page[9:], uint64(pageHeaderSize+len(p)))
	copy(page[pageHeaderSize:], p)
	return append(b, page...)
}

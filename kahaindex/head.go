package kahaindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kahafs/kahafs/openwire"
)

// What ReadHead reads of the page file (db.data, db.redo): the header and
// page 0. Part of the on-disk format of KahaDB's PageFile (5.17); the
// page and redo header sizes are pagefile.go's.
const (
	headPageTypeFree  = pageFree
	headPageTypePart  = pagePart
	headPageTypeEnd   = pageEnd
	maxHeadPageSize   = 1 << 20 // the largest page size ParseHead accepts
	headDefaultPageSz = 4096
)

// ErrHead: db.data (or db.redo) cannot be read as a KahaDB page file, as
// far as ReadHead reads it.
var ErrHead = errors.New("index: malformed page file")

// Head is what a broker restarted on the store learns from its index before
// replaying (§9.3): the page file header's properties and page 0 of
// db.data (the metadata), after the redo file's last complete batch has
// been applied the way PageFile.load does. It is read cheaply (ReadHead
// reads no more than the header and one page) and leniently: Read reads
// the whole index as the broker loads it, and may find damage ReadHead
// does not look at. Locations are nil when the index does not have them.
type Head struct {
	PageSize      int
	CleanShutdown bool  // header property cleanShutdown
	LastTxID      int64 // header property lastTxId
	// Metadata: page 0. LastUpdate is the last journal location the
	// index reflects, FirstInProgressTx the first operation of the
	// transactions in progress at the last checkpoint (replay restarts
	// there), ProducerAudit and AckMap the records the broker reloads,
	// OpenWireVersion the version the broker marshals the store's
	// messages with (6 for an index from before the field).
	Metadata
	// FromRedo: page 0 was taken from db.redo's last batch.
	FromRedo bool
}

// MessageOpenWireVersion is the OpenWire version of the messages of a store
// whose index head is h: the index's, or, without an index (nil, or one
// with no metadata yet), openwire.DefaultVersion, the version a broker
// rebuilding the index uses unless configured otherwise.
func (h *Head) MessageOpenWireVersion() int {
	if h == nil || h.OpenWireVersion == 0 {
		return openwire.DefaultVersion
	}
	return int(h.OpenWireVersion)
}

// StoreOpenWireVersion is MessageOpenWireVersion of the store in dir; an
// index that cannot be read counts as none.
func StoreOpenWireVersion(dir string) int {
	h, _ := ReadHead(dir)
	return h.MessageOpenWireVersion()
}

// ReadHead reads the head of db.data (and db.redo when present) in dir. A
// missing db.data is reported with an error wrapping fs.ErrNotExist.
func ReadHead(dir string) (*Head, error) {
	// Only the header and page 0 are used: read no more than they can
	// take (a large store's db.data is gigabytes).
	f, err := os.Open(filepath.Join(dir, "db.data"))
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, fileHeaderSize+maxHeadPageSize))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	redo, err := os.ReadFile(filepath.Join(dir, "db.redo"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("index: %w", err)
	}
	return ParseHead(data, redo)
}

// ParseHead decodes the head of a page file given the bytes of db.data and
// of db.redo (nil when absent). An empty db.data (a broker that never
// checkpointed) yields zero metadata without error.
func ParseHead(data, redo []byte) (*Head, error) {
	m := &Head{PageSize: headDefaultPageSz}
	if len(data) == 0 {
		return m, nil
	}
	props := headProperties(data[:min(len(data), fileHeaderSize/2)])
	if v, ok := props["pageSize"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n >= pageHeaderSize+64 && n <= maxHeadPageSize {
			m.PageSize = n
		}
	}
	m.CleanShutdown = props["cleanShutdown"] == "true"
	if v, ok := props["lastTxId"]; ok {
		m.LastTxID, _ = strconv.ParseInt(v, 10, 64)
	}
	page := headPageAt(data, 0, m.PageSize)
	if rp := headRedoPage(redo, 0, m.PageSize); rp != nil {
		page, m.FromRedo = rp, true
	}
	if page == nil {
		return m, nil // no page 0 yet
	}
	payload, err := headPagePayload(page, m.PageSize)
	if err != nil {
		return nil, err
	}
	if payload == nil {
		return m, nil
	}
	if err := m.decode(payload); err != nil {
		return nil, err
	}
	return m, nil
}

// headPageAt returns page id's bytes in db.data, nil if the file is shorter.
func headPageAt(data []byte, id int64, pageSize int) []byte {
	off := int64(fileHeaderSize) + id*int64(pageSize)
	if off < 0 || off+int64(pageSize) > int64(len(data)) {
		return nil
	}
	return data[off : off+int64(pageSize)]
}

// headRedoPage returns page id from the redo file's batch when the batch is
// complete and its Adler-32 matches (PageFile.redoRecoveryUpdates), else nil.
func headRedoPage(redo []byte, id int64, pageSize int) []byte {
	if len(redo) < redoHeaderSize {
		return nil
	}
	sum := binary.BigEndian.Uint64(redo[8:16])
	n := int(int32(binary.BigEndian.Uint32(redo[16:20])))
	if n <= 0 {
		return nil
	}
	rec := 8 + pageSize
	if int64(redoHeaderSize)+int64(n)*int64(rec) > int64(len(redo)) {
		return nil
	}
	h := adler32.New()
	var found []byte
	for i := 0; i < n; i++ {
		off := redoHeaderSize + i*rec
		pid := int64(binary.BigEndian.Uint64(redo[off : off+8]))
		pg := redo[off+8 : off+rec]
		h.Write(pg)
		if pid == id {
			found = pg // the last copy wins, as the broker's LinkedHashMap
		}
	}
	if uint64(h.Sum32()) != sum {
		return nil
	}
	return found
}

// headPagePayload returns the payload of a single-page (end) page, nil for
// a free page. Multi-page chains are not followed (page 0 never needs it).
func headPagePayload(page []byte, pageSize int) ([]byte, error) {
	switch page[0] {
	case headPageTypeFree:
		return nil, nil
	case headPageTypeEnd:
		n := int64(binary.BigEndian.Uint64(page[9:17]))
		if n < pageHeaderSize || n > int64(pageSize) {
			return nil, fmt.Errorf("%w: page 0 length %d", ErrHead, n)
		}
		return page[pageHeaderSize:n], nil
	case headPageTypePart:
		return nil, fmt.Errorf("%w: metadata spans several pages", ErrHead)
	}
	return nil, fmt.Errorf("%w: page 0 type %d", ErrHead, page[0])
}

// decode reads page 0's payload as MessageDatabase.Metadata.read does,
// with Read's readMetadata: the same fields optional (an index from before
// the version field is version 1, and has an ack map location only from
// version 5).
func (m *Head) decode(p []byte) error {
	in := &byteInput{src: source{name: "db.data", r: bytes.NewReader(p), size: int64(len(p))}}
	md, err := readMetadata(in)
	if err != nil {
		return fmt.Errorf("%w: metadata: %v", ErrHead, err)
	}
	m.Metadata = md
	return nil
}

// headProperties reads the key=value lines of a Java properties text
// (comments and the padding after it ignored), leniently: loadProperties
// reads them as the broker does.
func headProperties(b []byte) map[string]string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	out := map[string]string{}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := bytes.Cut(line, []byte{'='})
		if !ok {
			continue
		}
		out[string(bytes.TrimSpace(k))] = string(bytes.TrimSpace(v))
	}
	return out
}

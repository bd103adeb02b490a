package replaycache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/binenc"
	"github.com/kahafs/kahafs/refgraph"
)

// Cache file framing. Part of the format.
const (
	magic = "KAHAFSRC"
	// cacheVersion: bump when the payload changes (refgraph's state has
	// its own version inside; codec's set of command types is in the
	// payload: see encode).
	cacheVersion = 2
	headerSize   = len(magic) + 4 + 8
	trailerSize  = 4
	// maxCacheFile bounds what is read of a cache file.
	maxCacheFile = 4 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errForeign: the file is not a cache file of this format.
var errForeign = errors.New("not a kahafs cache file of this version")

// identity is what says a data file has not changed: same device and
// inode, size, modification and change times.
type identity struct {
	Dev, Ino           uint64
	Size, Mtime, Ctime int64
}

// cachedFile is one data file as the cache recorded it.
type cachedFile struct {
	ID   int32
	Id   identity
	Racy bool // mtime too close to the stat to trust the identity
	Res  FileResult
}

// cacheData is the payload of a cache file.
type cacheData struct {
	Store    string // absolute, symlinks resolved
	Variant  []byte // the options the analysis depends on
	StatTime int64  // when the identities were taken (ns)
	Files    []cachedFile
	// LastCRC is the CRC-32C of the last file's bytes [0, End).
	LastCRC uint32
	// Sources are the source ids of the ack-compaction files met
	// (refgraph.Graph.CompactionSources): the replay of such a file
	// depends on whether its source exists.
	Sources []int32
	// Pending: State was saved before the last file's FileDone (false
	// only without data files).
	Pending bool
	State   []byte
}

// encode renders the cache file.
func (c *cacheData) encode() ([]byte, error) {
	w := &binenc.Writer{B: make([]byte, headerSize, headerSize+len(c.State)+64*len(c.Files)+256)}
	w.String(c.Store)
	w.Bytes(c.Variant)
	w.Varint(c.StatTime)
	// A kahafs that knows other command types decodes the journal
	// otherwise (and counts per type differently): its cache is foreign.
	w.Uvarint(codec.NumEntryTypes)
	w.Uvarint(uint64(len(c.Files)))
	for _, f := range c.Files {
		w.Varint(int64(f.ID))
		w.Uvarint(f.Id.Dev)
		w.Uvarint(f.Id.Ino)
		w.Varint(f.Id.Size)
		w.Varint(f.Id.Mtime)
		w.Varint(f.Id.Ctime)
		w.Bool(f.Racy)
		s := &f.Res.Summary
		w.Varint(s.Size)
		w.Varint(s.Allocated)
		w.Varint(s.End)
		w.Int(s.Records)
		w.Int(s.Batches)
		w.Int(s.Checksummed)
		if err := w.DamageList(s.Damage, s.Info.Path); err != nil {
			return nil, err
		}
		for _, n := range f.Res.Counts {
			w.Varint(n)
		}
	}
	w.Uvarint(uint64(c.LastCRC))
	w.Uvarint(uint64(len(c.Sources)))
	for _, id := range c.Sources {
		w.Varint(int64(id))
	}
	w.Bool(c.Pending)
	w.Bytes(c.State)
	return frame(w.B, magic, cacheVersion), nil
}

// frame fills in the header of b (headerSize bytes left free before the
// payload: magic, version, payload length) and appends the payload's
// checksum: the framing of cache and side files.
func frame(b []byte, magic string, version uint32) []byte {
	payload := b[headerSize:]
	copy(b, magic)
	binary.BigEndian.PutUint32(b[len(magic):], version)
	binary.BigEndian.PutUint64(b[len(magic)+4:], uint64(len(payload)))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
}

// framedPayload checks the length and checksum of a framed file whose
// magic and version its caller has checked, and returns its payload.
func framedPayload(b []byte) ([]byte, error) {
	n := binary.BigEndian.Uint64(b[len(magic)+4:])
	if n != uint64(len(b)-headerSize-trailerSize) {
		return nil, fmt.Errorf("truncated or extended: payload of %d bytes in a file of %d", n, len(b))
	}
	payload := b[headerSize : len(b)-trailerSize]
	if got, want := crc32.Checksum(payload, castagnoli), binary.BigEndian.Uint32(b[len(b)-trailerSize:]); got != want {
		return nil, fmt.Errorf("checksum mismatch (stored %#08x, computed %#08x)", want, got)
	}
	return payload, nil
}

// decode parses a cache file. pathOf gives the path a data file is read
// through now (damage found in it is reported with that path); the
// summaries' Info is left for the caller to fill in.
func decode(b []byte, pathOf func(int32) string) (*cacheData, error) {
	if len(b) < headerSize+trailerSize || string(b[:len(magic)]) != magic {
		return nil, errForeign
	}
	if v := binary.BigEndian.Uint32(b[len(magic):]); v != cacheVersion {
		return nil, fmt.Errorf("%w (version %d, want %d)", errForeign, v, cacheVersion)
	}
	payload, err := framedPayload(b)
	if err != nil {
		return nil, err
	}
	r := binenc.NewReader(payload)
	c := &cacheData{Store: r.String(), Variant: r.Bytes(), StatTime: r.Varint()}
	if n := r.Uvarint(); r.Err() == nil && n != codec.NumEntryTypes {
		return nil, fmt.Errorf("%w (made knowing %d command types, not %d)", errForeign, n, codec.NumEntryTypes)
	}
	nf := r.Count(16)
	if nf > 0 {
		c.Files = make([]cachedFile, 0, nf)
	}
	for i := 0; i < nf && r.Err() == nil; i++ {
		f := cachedFile{ID: r.Int32()}
		f.Id = identity{Dev: r.Uvarint(), Ino: r.Uvarint(), Size: r.Varint(), Mtime: r.Varint(), Ctime: r.Varint()}
		f.Racy = r.Bool()
		s := &f.Res.Summary
		s.Size, s.Allocated, s.End = r.Varint(), r.Varint(), r.Varint()
		s.Records, s.Batches, s.Checksummed = r.Int(), r.Int(), r.Int()
		s.Damage = r.DamageList(pathOf(f.ID))
		for t := range f.Res.Counts {
			f.Res.Counts[t] = r.Varint()
		}
		if r.Err() == nil && i > 0 && c.Files[i-1].ID >= f.ID {
			r.Fail("files out of order")
		}
		c.Files = append(c.Files, f)
	}
	c.LastCRC = uint32(min(r.Uvarint(), 1<<32-1))
	ns := r.Count(1)
	for i := 0; i < ns && r.Err() == nil; i++ {
		c.Sources = append(c.Sources, r.Int32())
	}
	c.Pending = r.Bool()
	c.State = r.Bytes()
	if r.Err() == nil && r.Len() != 0 {
		r.Fail("%d bytes after the payload", r.Len())
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if c.Pending != (len(c.Files) > 0) {
		return nil, fmt.Errorf("%w: pending state without files", binenc.ErrCorrupt)
	}
	return c, nil
}

// cacheBytes are the bytes of a cache file: mapped read-only where the
// system allows (the file is in the page cache: no copy, no new memory),
// else read. A graph resumed from them may keep referring to them (the
// finished transactions a mount keeps, still encoded), so a mapping is
// released only when nothing refers to it any more (see keepFor).
type cacheBytes struct {
	b      []byte
	mapped bool
}

// readFile reads a cache file, refusing one larger than maxCacheFile.
// The cache directory is the user's own (0700) and files are replaced
// by rename, never rewritten in place, so a mapped file does not change.
func readFile(path string) (*cacheBytes, error) {
	f, st, err := openBounded(path, maxCacheFile, "a cache file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > 0 {
		if b, ok := mapReadOnly(f, int(st.Size())); ok {
			return &cacheBytes{b: b, mapped: true}, nil
		}
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return &cacheBytes{b: b}, nil
}

// openBounded opens the regular file at path, refusing one larger than
// max bytes (what names the kind of file in the error).
func openBounded(path string, max int64, what string) (*os.File, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", path)
	}
	if err == nil && st.Size() > max {
		err = fmt.Errorf("%s: %d bytes, larger than %s can be", path, st.Size(), what)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// release unmaps the bytes now; nothing may refer to them any more.
func (c *cacheBytes) release() {
	if c.mapped {
		unmap(c.b)
		c.b, c.mapped = nil, false
	}
}

// keepFor keeps the bytes until g is unreachable, then releases them.
func (c *cacheBytes) keepFor(g *refgraph.Graph) {
	if c.mapped {
		runtime.AddCleanup(g, func(c *cacheBytes) { c.release() }, c)
	}
}

// prefixCRC continues crc over the bytes [from, to) of the file at path.
// A file shorter than to is an error.
func prefixCRC(path string, crc uint32, from, to int64) (uint32, error) {
	if to <= from {
		return crc, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, min(to-from, 1<<20))
	for pos := from; pos < to; {
		n := min(int64(len(buf)), to-pos)
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		crc = crc32.Update(crc, castagnoli, buf[:n])
		pos += n
	}
	return crc, nil
}

// readAt returns up to n bytes of the file at path from off (fewer at
// its end).
func readAt(path string, off int64, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:m], nil
}

// resumableAt reports whether reading the last cached file again from its
// cached End gives what reading it whole would from there on, its bytes
// at End now being cur (codec.ResumableAt: a framing rule).
func resumableAt(f *cachedFile, cur []byte, curSize int64, unchanged bool) bool {
	return codec.ResumableAt(&f.Res.Summary, f.Id.Size, cur, curSize, unchanged)
}

package replaycache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/binenc"
	"github.com/kahafs/kahafs/refgraph"
)

// Side files keep a small answer derived from an analysis (the numbers
// `kahafs metrics` renders) next to the cache file the analysis was made
// through, so that a run on an unchanged store answers without decoding
// the cached analysis and building its graph again.
//
// A side file is valid exactly where a Load would be a hit of its cache
// file: the same store path and options (the cache file's name), every
// data file with the identity it had and none racy when the cache
// recorded it, the same index positions and index files
// (refgraph.Options.StateKey: what the saved state is checked against),
// the cache file itself unchanged since (device, inode, size, mtime,
// ctime: a cache rewritten by a tail or a miss makes its side files
// stale), and the same journalMaxFileLength settled. What else a hit
// depends on (the saved state decoding, the ack-compaction files met) is
// the cache file's content and the data files': unchanged with them.
// Anything else is a miss: the caller analyses the store and saves the
// side file again.
//
//	"KAHAFSSD" | uint32 sideVersion | uint64 payload length | payload | uint32 CRC-32C(payload)
//
//	payload (internal/binenc): kind | cacheVersion | codec.NumEntryTypes |
//	  store path | variant | refgraph state key | cache file identity |
//	  per data file: id, identity | journalMaxFileLength settled (value,
//	  source, exact, text, warning) | data
//
// A side file is named after its cache file: NAME.kcache has
// NAME.KIND.kside. prune removes those whose cache file is gone.

const (
	sideMagic = "KAHAFSSD"
	// sideVersion: bump when the payload changes. What the data means is
	// the caller's: its kind names its own version ("metrics-v1").
	sideVersion = 1
	sideSuffix  = ".kside"
	// maxSideFile bounds what is read of a side file.
	maxSideFile = 256 << 20
)

// A side file is framed as a cache file (frame, framedPayload): its magic
// is as long (headerSize), or this does not compile.
var _ [len(magic)]byte = [len(sideMagic)]byte{}

// sideKey is what a side file of a Result is valid for: taken when the
// Result was a hit of its cache file, or saved it.
type sideKey struct {
	cacheFile string
	cacheID   identity
	store     string
	variant   []byte
	stateKey  []byte
	files     []sideFile
	copts     Options
}

type sideFile struct {
	ID int32
	Id identity
}

// sideKeyOf is the key of a Result of l whose cache file holds the state
// of the files l.ids (all of them trusted by identity: none racy), or nil
// when there is none (a racy file is never trusted by identity, so no hit
// and no side file).
func (l *loader) sideKeyOf(racy func(i int) bool) *sideKey {
	id, err := statIdentity(l.file)
	if err != nil {
		return nil
	}
	k := &sideKey{cacheFile: l.file, cacheID: id, store: l.store, variant: l.variant,
		stateKey: l.ropts.StateKey(), copts: l.copts}
	for i, fi := range l.st.Files {
		if racy(i) {
			return nil
		}
		k.files = append(k.files, sideFile{ID: fi.ID, Id: l.ids[i]})
	}
	return k
}

// sidePath is the side file of kind next to the cache file.
func sidePath(cacheFile, kind string) string {
	return strings.TrimSuffix(cacheFile, ".kcache") + "." + kind + sideSuffix
}

// checkKind refuses a kind that would not make a file name of its own.
func checkKind(kind string) error {
	if kind == "" || strings.ContainsAny(kind, "/.\\\x00") || len(kind) > 64 {
		return fmt.Errorf("replaycache: side file kind %q: want a short name without dots or slashes", kind)
	}
	return nil
}

// SaveSide keeps data, a small answer derived from the analysis res (of
// the journalMaxFileLength m, as LoadMaxFileLength settled it), as the
// side file kind of res's cache file, for LoadSide. When LoadMaxFileLength
// analysed the store twice (the length guessed from the file system was
// not the one the reading settled), the cache file of the guess gets a
// side file too, that says which length was settled. It does nothing and
// reports false when res has no cache file to go with (cache off, a
// transient problem, a racy data file); a file that cannot be written is
// logged (Options.Logf) and reported false: never an error of the caller.
func SaveSide(res *Result, m MaxFileLength, kind string, data []byte) bool {
	if res == nil || res.side == nil || checkKind(kind) != nil {
		return false
	}
	if !writeSide(res.side, m, kind, false, data) {
		return false
	}
	if g := res.guessed; g != nil {
		return writeSide(g, m, kind, true, nil)
	}
	return true
}

// writeSide writes the side file kind of the cache file of k: data, or
// with redirect none, only the length settled.
func writeSide(k *sideKey, m MaxFileLength, kind string, redirect bool, data []byte) bool {
	var w binenc.Writer
	w.B = make([]byte, headerSize, headerSize+len(data)+64*len(k.files)+512)
	w.String(kind)
	w.Uvarint(cacheVersion)
	w.Uvarint(codec.NumEntryTypes)
	w.String(k.store)
	w.Bytes(k.variant)
	w.Bytes(k.stateKey)
	writeIdentity(&w, k.cacheID)
	w.Uvarint(uint64(len(k.files)))
	for _, f := range k.files {
		w.Varint(int64(f.ID))
		writeIdentity(&w, f.Id)
	}
	w.Varint(m.Value)
	w.String(m.Source)
	w.Bool(m.Exact)
	w.String(m.Text)
	w.String(m.Warning)
	w.Bool(redirect)
	w.Bytes(data)
	b := frame(w.B, sideMagic, sideVersion)
	if err := writeAtomic(sidePath(k.cacheFile, kind), b); err != nil {
		k.copts.logf("cache: side file not saved: %v", err)
		return false
	}
	return true
}

func writeIdentity(w *binenc.Writer, id identity) {
	w.Uvarint(id.Dev)
	w.Uvarint(id.Ino)
	w.Varint(id.Size)
	w.Varint(id.Mtime)
	w.Varint(id.Ctime)
}

func readIdentity(r *binenc.Reader) identity {
	return identity{Dev: r.Uvarint(), Ino: r.Uvarint(), Size: r.Varint(), Mtime: r.Varint(), Ctime: r.Varint()}
}

// LoadSide is the data of the side file kind that SaveSide kept with the
// analysis LoadMaxFileLength(st, ropts, given, read, copts) would answer
// from its cache unchanged (a hit), and the journalMaxFileLength that
// analysis settled. Otherwise it reports false and why: the caller
// analyses the store (a tail, a miss) and saves the side file again.
//
// A side file is used only under the conditions of a hit (see the top of
// this file). With given 0, LoadMaxFileLength analyses the store with the
// length guessed from the file system, and again when the reading
// settles another: so the side file of the guess's cache file is checked,
// and when it says another length was settled, the side file of that
// length's cache file too: both analyses would have been hits.
func LoadSide(st *codec.Store, ropts refgraph.Options, given int64, read codec.ReadOptions, copts Options, kind string) ([]byte, MaxFileLength, string, bool) {
	if err := checkKind(kind); err != nil {
		return nil, MaxFileLength{}, err.Error(), false
	}
	if given > 0 {
		data, m, redirect, why, ok := loadSide(st, ropts, given, read, copts, kind)
		if ok && (redirect || m.Value != given) {
			return nil, MaxFileLength{}, "side file of another journalMaxFileLength", false
		}
		return data, m, why, ok
	}
	guess := codec.GuessMaxFileLength(st.Files)
	if guess <= 0 {
		guess = codec.DefaultMaxFileLength
	}
	data, m, redirect, why, ok := loadSide(st, ropts, guess, read, copts, kind)
	switch {
	case !ok:
		return nil, MaxFileLength{}, why, false
	case !redirect && m.Value == guess:
		return data, m, "", true
	case !redirect || m.Value == guess:
		return nil, MaxFileLength{}, "side file of another journalMaxFileLength", false
	}
	settled := m
	data, m, redirect, why, ok = loadSide(st, ropts, settled.Value, read, copts, kind)
	switch {
	case !ok:
		return nil, MaxFileLength{}, why, false
	case redirect || m != settled:
		return nil, MaxFileLength{}, "side file of another journalMaxFileLength", false
	}
	return data, m, "", true
}

// loadSide reads and checks the side file of the cache file of the
// analysis of st with the length mfl; redirect says it holds only the
// length settled (m), not data.
func loadSide(st *codec.Store, ropts refgraph.Options, mfl int64, read codec.ReadOptions, copts Options, kind string) (data []byte, m MaxFileLength, redirect bool, why string, ok bool) {
	ropts.MaxFileLength = mfl
	ropts.Files = st.Files
	l := &loader{st: st, ropts: ropts, read: read, copts: copts}
	if why, ok := l.prepare(); !ok {
		return nil, m, false, why, false
	}
	path := sidePath(l.file, kind)
	b, err := readSide(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, m, false, "no side file", false
		}
		copts.logf("cache: ignoring %s: %v", path, err)
		return nil, m, false, "side file unreadable", false
	}
	r, err := sidePayload(b)
	if err != nil {
		copts.logf("cache: ignoring %s: %v", path, err)
		return nil, m, false, "side file not usable", false
	}
	if r.String() != kind || r.Uvarint() != cacheVersion || r.Uvarint() != codec.NumEntryTypes {
		return nil, m, false, "side file of another kind or version", false
	}
	if r.String() != l.store || string(r.Bytes()) != string(l.variant) {
		return nil, m, false, "side file of another store or other options", false
	}
	if string(r.Bytes()) != string(l.ropts.StateKey()) {
		return nil, m, false, "index positions or options changed", false
	}
	cid := readIdentity(r)
	if cur, err := statIdentity(l.file); err != nil || cur != cid || r.Err() != nil {
		return nil, m, false, "cache file changed", false
	}
	n := r.Count(6)
	if r.Err() == nil && n != len(st.Files) {
		return nil, m, false, "data files added or deleted", false
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		id, fid := r.Int32(), readIdentity(r)
		if r.Err() == nil && (id != st.Files[i].ID || fid != l.ids[i]) {
			return nil, m, false, st.Files[i].Name + " changed", false
		}
	}
	m = MaxFileLength{Value: r.Varint(), Source: r.String(), Exact: r.Bool(), Text: r.String(), Warning: r.String()}
	redirect = r.Bool()
	data = r.Bytes()
	if r.Err() == nil && r.Len() != 0 {
		r.Fail("%d bytes after the payload", r.Len())
	}
	if err := r.Err(); err != nil {
		copts.logf("cache: ignoring %s: %v", path, err)
		return nil, MaxFileLength{}, false, "side file not usable", false
	}
	return data, m, redirect, "", true
}

// readSide reads a side file, refusing one larger than maxSideFile.
func readSide(path string) ([]byte, error) {
	f, info, err := openBounded(path, maxSideFile, "a side file")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, info.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// sidePayload checks a side file's framing and returns a reader of its
// payload.
func sidePayload(b []byte) (*binenc.Reader, error) {
	if len(b) < headerSize+trailerSize || string(b[:len(sideMagic)]) != sideMagic {
		return nil, errors.New("not a kahafs side file")
	}
	if v := binary.BigEndian.Uint32(b[len(sideMagic):]); v != sideVersion {
		return nil, fmt.Errorf("side file version %d, want %d", v, sideVersion)
	}
	payload, err := framedPayload(b)
	if err != nil {
		return nil, err
	}
	return binenc.NewReader(payload), nil
}

// pruneSides removes the side files in dir whose cache file is gone.
func pruneSides(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, sideSuffix) || !e.Type().IsRegular() {
			continue
		}
		// NAME.KIND.kside belongs to NAME.kcache
		base := strings.TrimSuffix(name, sideSuffix)
		i := strings.LastIndexByte(base, '.')
		if i < 0 {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, base[:i]+".kcache")); errors.Is(err, os.ErrNotExist) {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

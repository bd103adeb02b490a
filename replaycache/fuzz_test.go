package replaycache

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/kahafs/kahafs/refgraph"
)

// FuzzDecode: a cache file that does not decode is refused, never a
// panic; one that decodes encodes again to a file that decodes to the same
// (and encodes to the same bytes), and gives a state that resumes or is
// refused.
// The checksum is fixed up after mutation, so that the fuzzer reaches the
// payload decoder rather than stopping at the CRC.
func FuzzDecode(f *testing.F) {
	dirs, _ := filepath.Glob("../testdata/stores/*/store")
	if len(dirs) == 0 {
		need.Skip(f, "no fixtures under testdata/stores")
	}
	// a cache file of a real store as the seed
	store := filepath.Join(f.TempDir(), "store")
	if err := faults.CopyDir(store, dirs[len(dirs)-1]); err != nil {
		f.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	ents, _ := os.ReadDir(store)
	for _, e := range ents {
		os.Chtimes(filepath.Join(store, e.Name()), old, old)
	}
	st, err := codec.OpenStore(store)
	if err != nil {
		f.Fatal(err)
	}
	ropts := refgraph.StoreOptions(st, true, nil)
	res, err := Load(st, ropts, codec.ReadOptions{}, Options{Dir: f.TempDir()})
	if err != nil || !res.Saved {
		f.Fatalf("seed cache not written: %v", err)
	}
	seed, err := os.ReadFile(res.CacheFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, false)
	f.Add(seed[:len(seed)/2], true)
	f.Add([]byte(magic), true)
	ropts.Files = st.Files
	pathOf := func(id int32) string { return "/p" }
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC && len(b) >= headerSize+trailerSize {
			b = append([]byte(nil), b...)
			payload := b[headerSize : len(b)-trailerSize]
			binary.BigEndian.PutUint64(b[len(magic)+4:], uint64(len(payload)))
			binary.BigEndian.PutUint32(b[len(b)-trailerSize:], crc32.Checksum(payload, castagnoli))
		}
		c, err := decode(b, pathOf)
		if err != nil {
			return
		}
		// what decodes is what the file says: encoded again it decodes to
		// the same, and encodes to the same bytes
		enc, err := c.encode()
		if err != nil {
			t.Fatalf("decoded cache does not encode: %v", err)
		}
		c2, err := decode(enc, pathOf)
		if err != nil {
			t.Fatalf("decoded cache, encoded again, does not decode: %v", err)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("decoded %+v, encoded and decoded again %+v", c, c2)
		}
		if enc2, err := c2.encode(); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable: %v", err)
		}
		bld, err := refgraph.ResumeBuilderBytes(ropts, c.State)
		if err != nil {
			return
		}
		if _, err := bld.Build(); err != nil {
			t.Fatal(err)
		}
	})
}

package kahaindex

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
)

// fuzzSeeds: the index files of the fixture stores (up to 128 KiB), and
// the small test index (256-byte pages) clean and with a redo batch.
func fuzzSeeds(f *testing.F) {
	root := brokertest.RepoRoot()
	var dirs []string
	for _, pattern := range []string{"testdata/stores/*/store", "refgraph/testdata/*/store"} {
		d, _ := filepath.Glob(filepath.Join(root, pattern))
		dirs = append(dirs, d...)
	}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "db.data"))
		if err != nil {
			continue
		}
		if len(data) > 128<<10 {
			continue // big inputs fuzz slowly; the small ones have every structure
		}
		var redo []byte
		if bytes.Contains(data[:min(len(data), 2048)], []byte("cleanShutdown=false")) {
			redo, _ = os.ReadFile(filepath.Join(d, "db.redo")) // read only after an unclean stop
		}
		free, _ := os.ReadFile(filepath.Join(d, "db.free"))
		f.Add(data, redo, free)
	}
	x := testIndexSized(256)
	f.Add(x.bytes(), []byte(nil), []byte(nil))
	x.header = [2]string{strings.Replace(x.header[0], "cleanShutdown=true", "cleanShutdown=false", 1), ""}
	x.redo = redoFile(x, 9, map[int64][]byte{2: x.pages[2], 13: x.pages[13]})
	f.Add(x.bytes(), x.redo, []byte(nil))
}

// FuzzRead: any db.data, db.redo and db.free read without panic, hang or
// unbounded allocation; every error is a *CorruptionError naming a file;
// a successful read is internally consistent.
func FuzzRead(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data, redo, free []byte) {
		ix, err := Parse(data, redo, free)
		streamAgrees(t, data, redo, free, ix, err)
		fastAgrees(t, data, redo, free)
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("not a *CorruptionError: %T %v", err, err)
			}
			if !strings.HasPrefix(ce.File, "db.") || ce.Err == nil {
				t.Fatalf("error without file or sentinel: %+v", ce)
			}
			return
		}
		if ix.PageFile.PageSize <= pageHeaderSize || ix.PageFile.PageCount < 0 {
			t.Fatalf("page file %+v", ix.PageFile)
		}
		for _, d := range ix.Destinations {
			for _, m := range d.Messages {
				if m.Class < Low || m.Class > High {
					t.Fatalf("class %d", m.Class)
				}
			}
			if !d.Topic && len(d.Subscriptions) != 0 {
				t.Fatalf("queue %q with subscriptions", d.Key)
			}
		}
		_ = ix.ReplayStart()
	})
}

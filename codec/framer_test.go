package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The framer must return exactly what the Reader returns over the same
// bytes: the same records (location, batch, bytes), the same end, counts
// and damage. These tests compare the two on the fixture files, on damaged
// copies of them and on fuzzed input, with buffers small enough that every
// batch boundary, outsized batch and fallback path is crossed.

type frameResult struct {
	records []Record
	sum     FileSummary
}

// readerResult reads data with the Reader in lenient mode, the reference.
func readerResult(id int32, path string, data []byte, opts ReadOptions) frameResult {
	opts.Lenient = true
	df := NewDataFile(id, path, data)
	r := NewReader(df, opts)
	var out frameResult
	for {
		rec, err := r.Next()
		if err != nil {
			break
		}
		rec.Data = bytes.Clone(rec.Data)
		out.records = append(out.records, rec)
	}
	out.sum = FileSummary{End: r.End(), Records: r.Records(), Damage: r.Damage()}
	out.sum.Batches, out.sum.Checksummed = r.Batches()
	return out
}

// framerResult reads the file at path with frameFile and buffers of
// bufSize bytes.
func framerResult(t testing.TB, fi FileInfo, bufSize int, opts ReadOptions) frameResult {
	var out frameResult
	outstanding := 0
	get := func() (*chunk, bool) {
		outstanding++
		return &chunk{buf: make([]byte, bufSize)}, true
	}
	put := func(c *chunk) bool {
		outstanding--
		for _, rec := range c.records {
			rec.Data = bytes.Clone(rec.Data)
			out.records = append(out.records, rec)
		}
		c.reset()
		return true
	}
	sum, err := frameFile(fi, 0, opts, get, put)
	if err != nil {
		t.Fatalf("%s: frameFile: %v", fi.Path, err)
	}
	if outstanding != 0 {
		t.Fatalf("%s: %d chunks not handed back", fi.Path, outstanding)
	}
	out.sum = sum
	return out
}

func compareFrames(t testing.TB, what string, want, got frameResult) {
	t.Helper()
	if len(want.records) != len(got.records) {
		t.Fatalf("%s: %d records, Reader %d", what, len(got.records), len(want.records))
	}
	for i := range want.records {
		w, g := want.records[i], got.records[i]
		if w.Loc != g.Loc || w.Batch != g.Batch || !bytes.Equal(w.Data, g.Data) {
			t.Fatalf("%s: record %d: %v batch %d, Reader %v batch %d", what, i, g.Loc, g.Batch, w.Loc, w.Batch)
		}
	}
	ws, gs := want.sum, got.sum
	if ws.End != gs.End || ws.Records != gs.Records || ws.Batches != gs.Batches || ws.Checksummed != gs.Checksummed {
		t.Fatalf("%s: end %d records %d batches %d/%d, Reader end %d records %d batches %d/%d", what,
			gs.End, gs.Records, gs.Batches, gs.Checksummed, ws.End, ws.Records, ws.Batches, ws.Checksummed)
	}
	if len(ws.Damage) != len(gs.Damage) {
		t.Fatalf("%s: damage %v, Reader %v", what, gs.Damage, ws.Damage)
	}
	for i := range ws.Damage {
		w, g := ws.Damage[i], gs.Damage[i]
		if w.Err != g.Err || w.Offset != g.Offset || w.End != g.End || w.Detail != g.Detail {
			t.Fatalf("%s: damage %d: %v, Reader %v", what, i, g, w)
		}
	}
}

func fixtureDataFiles(t testing.TB) []string {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "stores", "*", "store", "db-*.log"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixture data files: %v", err)
	}
	return paths
}

// checkFramer writes data to a file and compares framer and Reader with
// several buffer sizes.
func checkFramer(t testing.TB, dir, what string, data []byte, sizes []int) {
	f, err := os.CreateTemp(dir, "db-7-*.log") // fuzz workers may share dir
	if err != nil {
		t.Fatal(err)
	}
	path := f.Name()
	defer os.Remove(path)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	fi := FileInfo{ID: 7, Name: "db-7.log", Path: path, Size: int64(len(data))}
	for _, opts := range []ReadOptions{{}, {SkipChecksums: true}} {
		want := readerResult(7, path, data, opts)
		for _, n := range sizes {
			got := framerResult(t, fi, n, opts)
			compareFrames(t, fmt.Sprintf("%s (buffers of %d, %+v)", what, n, opts), want, got)
		}
	}
}

var framerSizes = []int{64, 300, 4096, 64 << 10, chunkBytes}

func TestFramerMatchesReaderOnFixtures(t *testing.T) {
	dir := t.TempDir()
	for _, p := range fixtureDataFiles(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkFramer(t, dir, p, data, framerSizes)
	}
}

// TestFramerMatchesReaderOnDamage damages fixture files the ways the
// corruption matrix does, and at random, and compares.
func TestFramerMatchesReaderOnDamage(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	paths := fixtureDataFiles(t)
	for i, p := range paths {
		orig, err := os.ReadFile(p)
		if err != nil || len(orig) < 200 {
			continue
		}
		variants := map[string][]byte{}
		mut := func(name string, f func(b []byte) []byte) {
			variants[name] = f(bytes.Clone(orig))
		}
		at := rng.Intn(len(orig) - 100)
		mut("flipped byte", func(b []byte) []byte { b[at] ^= 0x5a; return b })
		mut("truncated", func(b []byte) []byte { return b[:at] })
		mut("zeroed range", func(b []byte) []byte { clear(b[at : at+64]); return b })
		mut("zeros at the end", func(b []byte) []byte { return append(b, make([]byte, 10000)...) })
		mut("eof record then zeros", func(b []byte) []byte { return append(append(b, EOFRecord...), make([]byte, 100)...) })
		mut("garbage at the end", func(b []byte) []byte { return append(b, []byte("garbage after the data")...) })
		mut("batch after zeros", func(b []byte) []byte {
			return append(append(b, make([]byte, 3000)...), orig[:min(len(orig), 500)]...)
		})
		mut("huge batch length", func(b []byte) []byte {
			if j := bytes.Index(b[1:], BatchMagic); j >= 0 {
				binary.BigEndian.PutUint32(b[j+1+16:], 0x7fffffff)
			}
			return b
		})
		mut("negative batch length", func(b []byte) []byte {
			if j := bytes.Index(b, BatchMagic); j >= 0 {
				binary.BigEndian.PutUint32(b[j+16:], 0xfffffff0)
			}
			return b
		})
		mut("record outside a batch", func(b []byte) []byte {
			return append(b, 0, 0, 0, 9, RecordTypeUser, 1, 2, 0x08, 0x01)
		})
		for name, data := range variants {
			checkFramer(t, dir, fmt.Sprintf("%s #%d %s", name, i, p), data, []int{64, 4096, chunkBytes})
		}
	}
}

// TestFramerOutsizedBatch: a batch larger than the buffer gets a buffer of
// its own; one larger than maxChunkBytes is read through the mapping.
func TestFramerOutsizedBatch(t *testing.T) {
	var buf bytes.Buffer
	big := make([]byte, 3*chunkBytes/2)
	for i := range big {
		big[i] = byte(i)
	}
	rec := AppendUserRecord(nil, append([]byte{byte(TraceCommand), 0}, big[:chunkBytes+100]...))
	small := AppendUserRecord(nil, []byte{byte(TraceCommand), 2, 0x0a, 0})
	buf.Write(AppendBatch(nil, small, true))
	buf.Write(AppendBatch(nil, rec, true))
	buf.Write(AppendBatch(nil, small, true))
	checkFramer(t, t.TempDir(), "outsized batch", buf.Bytes(), []int{4096, chunkBytes})
}

// TestReadFilesFromTail: reading the rest of a file from an earlier End
// gives the records after it, with the summary of that part.
func TestReadFilesFromTail(t *testing.T) {
	for _, p := range fixtureDataFiles(t)[:3] {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := readerResult(1, p, data, ReadOptions{})
		if len(want.records) < 2 {
			continue
		}
		mid := want.records[len(want.records)/2]
		from := int64(mid.Batch)
		fi := FileInfo{ID: 1, Name: filepath.Base(p), Path: p, Size: int64(len(data))}
		var got []Record
		var sum *FileSummary
		err = ReadFilesFrom([]FileInfo{fi}, from, ReadOptions{}, 2, visitorFuncs{
			cmd:  func(r Record, _ *Command) { got = append(got, Record{Loc: r.Loc, Batch: r.Batch}) },
			done: func(s *FileSummary) { c := *s; sum = &c },
		})
		if err != nil {
			t.Fatal(err)
		}
		var expect []Record
		for _, r := range want.records {
			if int64(r.Loc.Offset) >= from {
				expect = append(expect, Record{Loc: r.Loc, Batch: r.Batch})
			}
		}
		if fmt.Sprint(expect) != fmt.Sprint(got) {
			t.Fatalf("%s from %d: got %d records, want %d", p, from, len(got), len(expect))
		}
		if sum == nil || sum.End != want.sum.End || sum.Records != len(expect) {
			t.Fatalf("%s from %d: summary %+v, want end %d and %d records", p, from, sum, want.sum.End, len(expect))
		}
	}
}

// TestReadFilesStopsCleanly: a visitor error stops every worker, hands
// every buffer back and leaves no goroutine behind.
func TestReadFilesStopsCleanly(t *testing.T) {
	paths := fixtureDataFiles(t)
	var files []FileInfo
	for i, p := range paths {
		files = append(files, FileInfo{ID: int32(i + 1), Name: filepath.Base(p), Path: p})
	}
	before := runtime.NumGoroutine()
	for stopAt := 1; stopAt < 2000; stopAt *= 3 {
		n := 0
		errStop := fmt.Errorf("stop at %d", stopAt)
		err := ReadFiles(files, ReadOptions{}, 2, visitorFuncs{cmd: func(Record, *Command) { n++ }, err: func() error {
			if n >= stopAt {
				return errStop
			}
			return nil
		}})
		if err != errStop && n >= stopAt {
			t.Fatalf("stop at %d: error %v", stopAt, err)
		}
	}
	// the feeder goroutine may still be on its way out: wait a little
	// (a loaded machine schedules it late), never long
	for end := time.Now().Add(3 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines left behind", g-before)
	}
}

type visitorFuncs struct {
	cmd  func(Record, *Command)
	done func(*FileSummary)
	err  func() error
}

func (v visitorFuncs) Command(r Record, c *Command) error {
	if v.cmd != nil {
		v.cmd(r, c)
	}
	if v.err != nil {
		return v.err()
	}
	return nil
}

func (v visitorFuncs) FileDone(s *FileSummary) error {
	if v.done != nil {
		v.done(s)
	}
	return nil
}

// FuzzFramer: on any content the framer returns what the Reader returns.
func FuzzFramer(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "stores", "*", "store", "db-*.log"))
	for i, p := range paths {
		if i >= 4 {
			break
		}
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b[:min(len(b), 3000)], uint16(200))
		}
	}
	f.Add(EOFRecord, uint16(64))
	f.Add([]byte{}, uint16(64))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, size uint16) {
		checkFramer(t, dir, "fuzz", data, []int{int(size%4096) + 32})
	})
}

package refgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
	"golang.org/x/sys/unix"
)

// StoreOptions returns the replay options for st as a broker restarted on
// it sees it: its data files and, when useIndex and db.data is there, the
// index metadata. An index that cannot be read is passed to note (may be
// nil) and left out: a broker rebuilds such an index from the whole
// journal, which is what a nil Options.Index means. The reading itself is
// codec's; the replay stays free of I/O.
func StoreOptions(st *codec.Store, useIndex bool, note func(error)) Options {
	opts := Options{Files: st.Files, Compactions: codec.CompactionHeads(st.Files), ReadForwarded: forwardedReader(st)}
	if !st.HasIndex || !useIndex {
		return opts
	}
	opts.LoadIndex = func(sink kahaindex.Sink) (*kahaindex.Index, error) { return kahaindex.StreamFast(st.Dir, sink) }
	readRecord := func(loc codec.Location, c *codec.Command) (codec.Location, error) {
		fi, ok := st.File(loc.File)
		if !ok {
			return loc, &codec.CorruptionError{File: codec.DataFileName(loc.File), FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrMissingFile}
		}
		return codec.ReadRecordAt(fi, loc, c)
	}
	opts.ReadRecord = readRecord
	opts.ReadRecords = func(locs []codec.Location, fn func(int, *codec.Command, error)) {
		readRecords(st, locs, readRecord, fn)
	}
	opts.IndexStamp = indexStamp(st.Dir)
	meta, err := kahaindex.ReadHead(st.Dir)
	switch {
	case err == nil:
		opts.Index = meta
	case errors.Is(err, fs.ErrNotExist):
	default:
		if note != nil {
			note(err)
		}
	}
	return opts
}

// Load reads every data file of st with codec.ReadStore and replays it.
func Load(st *codec.Store, opts Options, read codec.ReadOptions) (*Graph, error) {
	g, err := load(st, opts, read)
	if errors.Is(err, ErrIndexRebuild) {
		// as the broker does: no index, the whole journal
		why := err.Error()
		g, err = load(st, WithoutIndex(opts), read)
		if g != nil {
			g.AddWarning(why + ": replayed as a broker rebuilding its index")
		}
	}
	return g, err
}

func load(st *codec.Store, opts Options, read codec.ReadOptions) (*Graph, error) {
	b := NewBuilder(opts)
	if err := codec.ReadStore(st, read, 0, b); err != nil {
		return nil, err
	}
	return b.Build()
}

// indexStamp identifies the index files of dir as they are now (device,
// inode, size, modification and change times of db.data, db.redo and
// db.free): a replay that adopted the index is only as valid as these.
func indexStamp(dir string) string {
	var sb strings.Builder
	for _, n := range []string{"db.data", "db.redo", "db.free"} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, n), &st); err != nil {
			sb.WriteString(n + ":-;")
			continue
		}
		fmt.Fprintf(&sb, "%s:%d/%d/%d/%d.%d/%d.%d;", n, st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	}
	return sb.String()
}

// forwardedReader reads the forwarded records of st's compaction files.
func forwardedReader(st *codec.Store) func(int32, func(codec.Record, *codec.Command) error) error {
	return func(file int32, fn func(codec.Record, *codec.Command) error) error {
		fi, ok := st.File(file)
		if !ok {
			return fmt.Errorf("%s is not in %s", codec.DataFileName(file), st.Dir)
		}
		return codec.ReadForwarded(fi, fn)
	}
}

// dropWindow: readRecords gives back the pages of a mapped file it has
// read past in steps of this many bytes.
const dropWindow = 4 << 20

// readRecords reads the records at locs (in journal order) as read would
// one by one, mapping each data file once: a record that lies whole in
// its file with the header its location says is decoded where it is;
// anything else is left to read, for its error.
func readRecords(st *codec.Store, locs []codec.Location, read func(codec.Location, *codec.Command) (codec.Location, error), fn func(int, *codec.Command, error)) {
	var c codec.Command
	var df *codec.DataFile
	var fi codec.FileInfo
	cur, mapped, dropped := int32(0), false, int64(0)
	defer func() {
		if df != nil {
			df.Close()
		}
	}()
	for i, loc := range locs {
		if !mapped || loc.File != cur {
			if df != nil {
				df.Close()
				df = nil
			}
			cur, mapped, dropped = loc.File, true, 0
			var ok bool
			if fi, ok = st.File(loc.File); ok {
				df, _ = codec.OpenDataFile(fi.Path, fi.ID) // a file that does not map is read record by record
			}
		}
		if df != nil {
			data := df.Bytes()
			if w := int64(loc.Offset) &^ (dropWindow - 1); df.Size > 0 && w > dropped && w <= int64(len(data)) {
				// the pages behind are read: give them back (a mapped
				// file's pages count as the process's memory)
				_ = unix.Madvise(data[dropped:w], unix.MADV_DONTNEED)
				dropped = w
			}
			off, size := int64(loc.Offset), int64(loc.Size)
			if off >= 0 && size >= codec.RecordHeaderSize+1 && size <= 1<<30 && off+size <= int64(len(data)) {
				b := data[off : off+size]
				if int32(binary.BigEndian.Uint32(b)) == loc.Size && b[4] == codec.RecordTypeUser {
					err := codec.DecodeRecord(fi.Path, codec.Record{Loc: loc, Batch: -1, Data: b}, &c)
					fn(i, &c, err)
					continue
				}
			}
		}
		_, err := read(loc, &c)
		fn(i, &c, err)
	}
}

package codec

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Location names a record: data file id, byte offset of its header, and its
// whole size. It prints the way the broker prints it: "file:offset".
type Location struct {
	File   int32
	Offset int32
	Size   int32
}

func (l Location) String() string {
	return strconv.Itoa(int(l.File)) + ":" + strconv.Itoa(int(l.Offset))
}

// Less orders locations by file id, then offset (journal order).
func (l Location) Less(o Location) bool {
	if l.File != o.File {
		return l.File < o.File
	}
	return l.Offset < o.Offset
}

// DataFileName returns "db-N.log".
func DataFileName(id int32) string { return "db-" + strconv.Itoa(int(id)) + ".log" }

// ParseDataFileName returns N for a name "db-N.log" with N a positive
// decimal int32, the way the broker recognises journal files.
func ParseDataFileName(name string) (int32, bool) {
	if !strings.HasPrefix(name, "db-") || !strings.HasSuffix(name, ".log") {
		return 0, false
	}
	n, err := strconv.ParseInt(name[3:len(name)-4], 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int32(n), true
}

// DataFile is one db-N.log, mapped read-only into memory. Records and
// decoded commands returned for it point into its bytes and stay valid until
// Close.
type DataFile struct {
	ID        int32
	Path      string
	Size      int64 // apparent size
	Allocated int64 // bytes allocated on disk (less than Size for sparse files)
	data      []byte
	mapped    bool
}

// OpenDataFile maps the file at path. An empty file is valid (no records).
func OpenDataFile(path string, id int32) (*DataFile, error) {
	fi := FileInfo{ID: id, Path: path}
	fd, st, err := openDataFD(fi)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	return mapDataFile(fd, fi, st.Size())
}

// allocated returns the bytes a file takes on disk (less than its size
// when sparse).
func allocated(st os.FileInfo) int64 {
	// os.FileInfo carries a *syscall.Stat_t (not x/sys/unix's type).
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Blocks * 512
	}
	return st.Size()
}

// mapDataFile maps size bytes of the open data file fd read-only. Where the
// file system cannot map, the file is read into memory instead.
func mapDataFile(fd *os.File, fi FileInfo, size int64) (*DataFile, error) {
	df := &DataFile{ID: fi.ID, Path: fi.Path, Size: size, Allocated: size}
	if st, err := fd.Stat(); err == nil {
		df.Allocated = allocated(st)
	}
	if size == 0 {
		return df, nil
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b := make([]byte, size)
		n, rerr := fd.ReadAt(b, 0)
		if rerr != nil && n < len(b) {
			return nil, fmt.Errorf("read data file: %w", rerr)
		}
		df.data = b
		return df, nil
	}
	_ = unix.Madvise(data, unix.MADV_SEQUENTIAL)
	df.data, df.mapped = data, true
	return df, nil
}

// NewDataFile wraps bytes already in memory (tests, fuzzing).
func NewDataFile(id int32, name string, data []byte) *DataFile {
	return &DataFile{ID: id, Path: name, Size: int64(len(data)), Allocated: int64(len(data)), data: data}
}

// Name is the file's base name.
func (f *DataFile) Name() string { return filepath.Base(f.Path) }

// Bytes returns the whole file content (valid until Close).
func (f *DataFile) Bytes() []byte { return f.data }

// Close unmaps the file. Records obtained from it must not be used after.
func (f *DataFile) Close() error {
	if f.mapped {
		f.mapped = false
		d := f.data
		f.data = nil
		return unix.Munmap(d)
	}
	f.data = nil
	return nil
}

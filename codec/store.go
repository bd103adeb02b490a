package codec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
)

// FileInfo names one data file of a store.
type FileInfo struct {
	ID   int32
	Name string
	Path string
	Size int64
}

// Store is a KahaDB directory: its data files in id (replay) order and the
// index files next to them.
type Store struct {
	Dir      string
	Files    []FileInfo
	HasIndex bool // db.data present
	HasRedo  bool // db.redo present
	HasLock  bool // lock present
}

// OpenStore lists the data files of the KahaDB store in dir. Gaps in the
// numbering are normal. A directory with neither data files nor an index is
// reported with ErrNotStore, and the error names the stores below it when
// it is a broker's data directory (kahadb/, <brokerName>/KahaDB/,
// mKahaDB/<name>/).
func OpenStore(dir string) (*Store, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("store %s: %w: not a directory", dir, ErrNotStore)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	s := &Store{Dir: dir}
	for _, e := range ents {
		name := e.Name()
		switch name {
		case "db.data":
			s.HasIndex = true
			continue
		case "db.redo":
			s.HasRedo = true
			continue
		case "lock":
			s.HasLock = true
			continue
		}
		id, ok := ParseDataFileName(name)
		if !ok || e.IsDir() {
			continue
		}
		fi := FileInfo{ID: id, Name: name, Path: filepath.Join(dir, name)}
		if info, err := e.Info(); err == nil {
			fi.Size = info.Size()
		}
		s.Files = append(s.Files, fi)
	}
	if len(s.Files) == 0 && !s.HasIndex {
		return nil, fmt.Errorf("store %s: %w: no db-N.log files and no db.data%s", dir, ErrNotStore, storesHint(dir))
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].ID < s.Files[j].ID })
	return s, nil
}

// File returns the data file with the given id.
func (s *Store) File(id int32) (FileInfo, bool) {
	i := sort.Search(len(s.Files), func(i int) bool { return s.Files[i].ID >= id })
	if i < len(s.Files) && s.Files[i].ID == id {
		return s.Files[i], true
	}
	return FileInfo{}, false
}

// Open maps one data file.
func (fi FileInfo) Open() (*DataFile, error) {
	df, err := OpenDataFile(fi.Path, fi.ID)
	if err != nil {
		return nil, dataFileError(fi, err)
	}
	return df, nil
}

// dataFileError classifies a failure to open or map a data file: missing,
// or present but unreadable.
func dataFileError(fi FileInfo, err error) *CorruptionError {
	if errors.Is(err, fs.ErrNotExist) {
		return &CorruptionError{File: fi.Path, FileID: fi.ID, Err: ErrMissingFile, Detail: err.Error()}
	}
	return &CorruptionError{File: fi.Path, FileID: fi.ID, Err: ErrUnreadable, Detail: err.Error()}
}

// Workers is the default parallelism for reading files: GOMAXPROCS as the
// program started (a mount raises it to serve: fsnode.raiseProcs), the
// cores it may use.
func Workers() int { return startProcs }

var startProcs = runtime.GOMAXPROCS(0)

// ScanOrdered runs perFile on up to workers files at a time and hands the
// results to inOrder strictly in the order of files. At most 2×workers
// results wait at any time, so memory stays bounded however large the store.
// The first error (from either function) stops the scan and is returned.
func ScanOrdered[T any](files []FileInfo, workers int, perFile func(FileInfo) (T, error), inOrder func(FileInfo, T) error) error {
	if workers <= 0 {
		workers = Workers()
	}
	type slot struct {
		v    T
		err  error
		done chan struct{}
	}
	slots := make([]slot, len(files))
	for i := range slots {
		slots[i].done = make(chan struct{})
	}
	window := make(chan struct{}, 2*workers)
	running := make(chan struct{}, workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		for i := range files {
			select {
			case window <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case running <- struct{}{}:
			case <-stop:
				return
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				slots[i].v, slots[i].err = perFile(files[i])
				<-running
				close(slots[i].done)
			}(i)
		}
	}()
	var err error
	for i := range files {
		<-slots[i].done
		if slots[i].err != nil {
			err = slots[i].err
			break
		}
		if err = inOrder(files[i], slots[i].v); err != nil {
			break
		}
		var zero T
		slots[i].v = zero
		<-window
	}
	close(stop)
	<-producerDone
	wg.Wait()
	return err
}

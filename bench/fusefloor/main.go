// Command fusefloor serves the files of one directory, held in memory,
// through the kernel with go-fuse's raw protocol: no tree, no rendering,
// nothing computed per request but the entry's attributes. It is the floor
// under a go-fuse mount on the machine for a walk such as `grep -r` over a
// big directory: what the kernel, the device and go-fuse's server cost on
// their own. The bench's grep-pending-linked row measures kahafs against
// it (see BENCHMARKS.md).
//
//	go run ./bench/fusefloor [-push] [-cpuprofile FILE] SRC MOUNTPOINT
//
// SRC is a directory of regular files (its subdirectories are ignored).
// With -push, every file a READDIRPLUS looks up has its content stored in
// the kernel's page cache (FUSE_NOTIFY_STORE) as soon as the kernel has the
// reply, as kahafs does; without it a file's content is read with READ
// calls. The mount stops at SIGINT or SIGTERM and prints the calls it
// answered. It serves one walk at a time: the files a READDIRPLUS looked
// up wait for the next call in one slot, not one per open directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

type file struct {
	name string
	data []byte
}

type floorFS struct {
	fuse.RawFileSystem
	files  []file
	byName map[string]int
	push   bool
	server *fuse.Server

	pending []uint64 // the files the last READDIRPLUS looked up
	pushes  chan []uint64
	pushWG  sync.WaitGroup

	lookups, readdirs, reads, pushed, pushFailed atomic.Int64
}

const rootIno = 1

func ino(i int) uint64 { return uint64(i) + 2 }

var timeout = time.Hour

func (f *floorFS) Init(s *fuse.Server) { f.server = s }

func (f *floorFS) fileAttr(i int, a *fuse.Attr) {
	a.Ino = ino(i)
	a.Size = uint64(len(f.files[i].data))
	a.Blocks = (a.Size + 511) / 512
	a.Mode = syscall.S_IFREG | 0o444
	a.Nlink = 1
	a.Blksize = 4096
}

func dirAttr(a *fuse.Attr) {
	a.Ino = rootIno
	a.Mode = syscall.S_IFDIR | 0o555
	a.Nlink = 2
	a.Blksize = 4096
}

func (f *floorFS) entry(i int, out *fuse.EntryOut) {
	out.NodeId = ino(i)
	out.Generation = 1
	out.SetEntryTimeout(timeout)
	out.SetAttrTimeout(timeout)
	f.fileAttr(i, &out.Attr)
}

func (f *floorFS) index(node uint64) (int, bool) {
	i := int(node) - 2
	return i, node >= 2 && i < len(f.files)
}

func (f *floorFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	f.lookups.Add(1)
	if h.NodeId != rootIno {
		return fuse.ENOENT
	}
	i, ok := f.byName[name]
	if !ok {
		return fuse.ENOENT
	}
	f.entry(i, out)
	return fuse.OK
}

func (f *floorFS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	out.SetTimeout(timeout)
	if in.NodeId == rootIno {
		dirAttr(&out.Attr)
		return fuse.OK
	}
	i, ok := f.index(in.NodeId)
	if !ok {
		return fuse.ENOENT
	}
	f.fileAttr(i, &out.Attr)
	return fuse.OK
}

func (f *floorFS) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.NodeId != rootIno {
		return fuse.ENOTDIR
	}
	return fuse.OK
}

func (f *floorFS) ReadDirPlus(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	f.readdirs.Add(1)
	// The kernel asks for the next part only once it has taken in the
	// last reply: the files that reply looked up can be pushed now.
	if f.push && len(f.pending) > 0 {
		f.pushes <- f.pending
		f.pending = nil
	}
	var looked []uint64
	for i := int(in.Offset); i < len(f.files); i++ {
		e := out.AddDirLookupEntry(fuse.DirEntry{Mode: syscall.S_IFREG, Name: f.files[i].name, Ino: ino(i), Off: uint64(i + 1)})
		if e == nil {
			break
		}
		f.entry(i, e)
		looked = append(looked, ino(i))
	}
	if f.push {
		f.pending = looked
	}
	return fuse.OK
}

func (f *floorFS) ReleaseDir(in *fuse.ReleaseIn) {
	if f.push && len(f.pending) > 0 {
		f.pushes <- f.pending
		f.pending = nil
	}
}

func (f *floorFS) Open(_ <-chan struct{}, _ *fuse.OpenIn, _ *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS // the kernel opens files without asking, keeping their cache
}

// Flush: ENOSYS, as kahafs answers, stops the kernel sending FLUSH at
// every close (go-fuse's default answers OK, a round trip per file).
func (f *floorFS) Flush(_ <-chan struct{}, _ *fuse.FlushIn) fuse.Status { return fuse.ENOSYS }

func (f *floorFS) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	f.reads.Add(1)
	i, ok := f.index(in.NodeId)
	if !ok {
		return nil, fuse.ENOENT
	}
	d := f.files[i].data
	if in.Offset >= uint64(len(d)) {
		return fuse.ReadResultData(nil), fuse.OK
	}
	end := min(int(in.Offset)+int(in.Size), len(d))
	return fuse.ReadResultData(d[in.Offset:end]), fuse.OK
}

// pushLoop pushes the files of each READDIRPLUS the kernel has taken in,
// on a goroutine of its own, while the listing goes on (kahafs pushes
// while it answers the next calls too).
func (f *floorFS) pushLoop() {
	defer f.pushWG.Done()
	for inos := range f.pushes {
		for _, n := range inos {
			i, _ := f.index(n)
			if st := f.server.InodeNotifyStoreCache(n, 0, f.files[i].data); st != fuse.OK {
				f.pushFailed.Add(1)
				continue
			}
			f.pushed.Add(1)
		}
	}
}

func load(dir string) ([]file, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []file
	for _, de := range des {
		if !de.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, file{name: de.Name(), data: b})
	}
	sort.Slice(files, func(a, b int) bool { return files[a].name < files[b].name })
	return files, nil
}

func main() {
	push := flag.Bool("push", false, "push each file looked up into the page cache (FUSE_NOTIFY_STORE)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the serving to this file")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: fusefloor [-push] SRC MOUNTPOINT")
		os.Exit(2)
	}
	files, err := load(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fusefloor:", err)
		os.Exit(1)
	}
	f := &floorFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), files: files, byName: make(map[string]int, len(files)), push: *push}
	for i, fl := range files {
		f.byName[fl.name] = i
	}
	if f.push {
		f.pushes = make(chan []uint64, 8)
		f.pushWG.Add(1)
		go f.pushLoop()
	}
	server, err := fuse.NewServer(f, flag.Arg(1), &fuse.MountOptions{
		Options:       []string{"ro", "default_permissions"},
		FsName:        "fusefloor",
		Name:          "fusefloor",
		DisableXAttrs: true,
		DisableSplice: true,
		DirectMount:   true,
		MaxWrite:      1 << 20,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fusefloor:", err)
		os.Exit(1)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		fmt.Fprintln(os.Stderr, "fusefloor:", err)
		os.Exit(1)
	}
	fmt.Printf("serving %d files at %s\n", len(files), flag.Arg(1)) // the line the bench waits for
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err == nil && pprof.StartCPUProfile(pf) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	if err := server.Unmount(); err != nil {
		fmt.Fprintln(os.Stderr, "fusefloor: unmount:", err)
	}
	if f.push {
		close(f.pushes)
		f.pushWG.Wait()
	}
	fmt.Printf("lookups %d, readdirplus %d, reads %d, pushed %d, push failed %d\n",
		f.lookups.Load(), f.readdirs.Load(), f.reads.Load(), f.pushed.Load(), f.pushFailed.Load())
}

//go:build linux && (amd64 || arm64)

package kahaindex

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// aioBatcher reads pages with Linux AIO: one io_submit for a batch of
// reads (of a buffered file, done within the call), one io_getevents
// for their results.
type aioBatcher struct {
	ctx    uintptr
	cbs    []iocb
	ptrs   []*iocb
	events []ioEvent
}

// iocb is struct iocb (linux/aio_abi.h), little-endian layout.
type iocb struct {
	data     uint64
	key      uint32
	rwFlags  uint32
	opcode   uint16
	reqprio  int16
	fildes   uint32
	buf      uint64
	nbytes   uint64
	offset   int64
	reserved uint64
	flags    uint32
	resfd    uint32
}

// ioEvent is struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const iocbCmdPread = 0

// newPageBatcher returns an AIO context of aheadBatch reads, one kept
// from an earlier read-ahead if there is one: tearing a context down
// (io_destroy) waits for an RCU grace period, some 30 ms here, so a
// context is handed back (release) rather than destroyed.
func newPageBatcher() pageBatcher {
	select {
	case b := <-idleBatchers:
		return b
	default:
	}
	if unsafe.Sizeof(iocb{}) != 64 || unsafe.Sizeof(ioEvent{}) != 32 {
		return nil
	}
	b := &aioBatcher{cbs: make([]iocb, aheadBatch), ptrs: make([]*iocb, aheadBatch), events: make([]ioEvent, aheadBatch)}
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SETUP, uintptr(aheadBatch), uintptr(unsafe.Pointer(&b.ctx)), 0); e != 0 {
		return nil
	}
	return b
}

// idleBatchers are contexts handed back, for the next read-aheads (the
// passes of StreamFast run two at once; a few more are destroyed).
var idleBatchers = make(chan *aioBatcher, 4)

func (b *aioBatcher) release() {
	if b.ctx == 0 {
		return
	}
	select {
	case idleBatchers <- b:
	default:
		b.destroy()
	}
}

func (b *aioBatcher) readPages(f *os.File, bufs [][]byte, offs []int64, whole []bool) {
	if b.ctx == 0 {
		return
	}
	fd := uint32(f.Fd())
	n := min(len(offs), len(b.cbs))
	for i := range n {
		b.cbs[i] = iocb{data: uint64(i), opcode: iocbCmdPread, fildes: fd,
			buf: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(bufs[i])))), nbytes: uint64(len(bufs[i])), offset: offs[i]}
		b.ptrs[i] = &b.cbs[i]
	}
	if n == 0 {
		return
	}
	sent, _, e := syscall.Syscall(syscall.SYS_IO_SUBMIT, b.ctx, uintptr(n), uintptr(unsafe.Pointer(&b.ptrs[0])))
	if e != 0 || int(sent) <= 0 {
		return
	}
	for done := 0; done < int(sent); {
		got, _, e := syscall.Syscall6(syscall.SYS_IO_GETEVENTS, b.ctx, uintptr(int(sent)-done), uintptr(int(sent)-done),
			uintptr(unsafe.Pointer(&b.events[0])), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			// the reads in flight write into bufs: wait for them by
			// tearing the context down, and use none
			b.destroy()
			return
		}
		for _, ev := range b.events[:got] {
			if i := int(ev.data); i < n && ev.res == int64(len(bufs[i])) {
				whole[i] = true
			}
		}
		done += int(got)
	}
	runtime.KeepAlive(f)
}

func (b *aioBatcher) destroy() {
	if b.ctx != 0 {
		syscall.Syscall(syscall.SYS_IO_DESTROY, b.ctx, 0, 0)
		b.ctx = 0
	}
}

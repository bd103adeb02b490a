package replaycache

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapReadOnly maps size bytes of f read-only (false: it could not).
func mapReadOnly(f *os.File, size int) ([]byte, bool) {
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
	return b, err == nil
}

func unmap(b []byte) { _ = unix.Munmap(b) }

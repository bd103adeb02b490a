// Package faults damages files and byte slices the way disks and crashes
// do, for tests of every package that reads a store.
package faults

import (
	"fmt"
	"os"
)

// FlipByte inverts every bit of b[off].
func FlipByte(b []byte, off int) []byte {
	c := append([]byte(nil), b...)
	c[off] ^= 0xFF
	return c
}

// Zero sets b[off:off+n] to zero (clamped to len(b)).
func Zero(b []byte, off, n int) []byte {
	c := append([]byte(nil), b...)
	for i := off; i < off+n && i < len(c); i++ {
		c[i] = 0
	}
	return c
}

// Truncate returns b[:n].
func Truncate(b []byte, n int) []byte { return append([]byte(nil), b[:n]...) }

// Put writes v over b at off.
func Put(b []byte, off int, v ...byte) []byte {
	c := append([]byte(nil), b...)
	copy(c[off:], v)
	return c
}

// EditFile applies fn to the content of the file at path.
func EditFile(path string, fn func([]byte) []byte) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	if err := os.WriteFile(path, fn(b), 0o644); err != nil {
		return fmt.Errorf("faults: %w", err)
	}
	return nil
}

// CopyDir copies the regular files of src (not recursive) into dst, which
// is created. Sparse files become dense.
func CopyDir(dst, src string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src + "/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst+"/"+e.Name(), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

//go:build !linux

package replaycache

import "os"

// mapReadOnly does not map here: the file is read instead.
func mapReadOnly(f *os.File, size int) ([]byte, bool) { return nil, false }

func unmap(b []byte) {}

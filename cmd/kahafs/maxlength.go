package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/replaycache"
	"github.com/spf13/cobra"
)

// maxFileLengthFlag is --max-file-length of holders, mount and compact:
// the broker's journalMaxFileLength in bytes, as activemq.xml writes it
// (16384, 16k, 32mb, 32 MiB: binary multiples), 0 when not given: the
// length is then read off the store (replaycache.LoadMaxFileLength).
type maxFileLengthFlag int64

func (m *maxFileLengthFlag) String() string {
	if *m == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*m), 10)
}

func (m *maxFileLengthFlag) Type() string { return "bytes" }

func (m *maxFileLengthFlag) Set(s string) error {
	n, err := parseByteSize(s)
	if err != nil {
		return err
	}
	if n < minMaxFileLength {
		return fmt.Errorf("%s is less than a broker's journal file can be: give a journalMaxFileLength from %d (4 KiB) to %d (2 GiB - 1) bytes, as in activemq.xml", s, minMaxFileLength, math.MaxInt32)
	}
	*m = maxFileLengthFlag(n)
	return nil
}

// minMaxFileLength is the least --max-file-length taken: the least
// journalMaxFileLength ActiveMQ's own tests configure (4 KiB). The broker
// itself checks nothing, but below a few KiB nearly every batch takes a
// file of its own, and a smaller value is a typo (100 for 100m), not a
// broker's setting.
const minMaxFileLength = 4096

// parseByteSize reads a positive byte count that fits a journal offset
// (int32): digits with an optional k, m or g suffix (kb, kib, mb, mib, …,
// any case, binary multiples as in activemq.xml).
func parseByteSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("not a size in bytes: give it as activemq.xml does, e.g. 16384, 16k, 32mb")
	}
	if n > math.MaxInt32/mult {
		return 0, fmt.Errorf("%s is more than a journal file can be (journal offsets are 32-bit): give a journalMaxFileLength from %d (4 KiB) to %d (2 GiB - 1) bytes", s, minMaxFileLength, math.MaxInt32)
	}
	return n * mult, nil
}

func addMaxFileLengthFlag(cmd *cobra.Command, m *maxFileLengthFlag) {
	cmd.Flags().Var(m, "max-file-length", "the broker's journalMaxFileLength (16384, 16k, 32mb; default: read off the store where its files show it, else 32 MiB)")
}

// maxFileLengthLine says in one line which journalMaxFileLength a command
// used and where it came from.
func maxFileLengthLine(m replaycache.MaxFileLength) string {
	return fmt.Sprintf("journalMaxFileLength %d: %s", m.Value, m.Text)
}

// warnMaxFileLength prints what the store says against the length used.
func warnMaxFileLength(w io.Writer, m replaycache.MaxFileLength) {
	if m.Warning != "" {
		fmt.Fprintf(w, "warning: journalMaxFileLength: %s\n", m.Warning)
	}
}

package kahaindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// dataInput is java.io.DataInput over a page stream or a plain file.
type dataInput interface {
	// readFull is DataInputStream.readFully.
	readFull(b []byte) error
	// fail makes a positioned error at the current read position.
	fail(sentinel error, detail string, eof bool) error
}

// stream reads the payload of a chain of pages the way
// Transaction.openInputStream does: the payload of each page starts after
// its 21-byte header; a part page's payload fills the page and continues
// at page "next"; an end page's payload ends at offset "next" of the page
// (an int, so only the low 32 bits count); a free page ends the stream
// with an EOFException. An end offset past the page is only an error when
// a read gets there (the broker's ArrayIndexOutOfBoundsException).
type stream struct {
	pf      *pageFile
	what    string
	buf     []byte
	page    int64
	typ     byte
	next    int64
	pos     int
	end     int
	visited pageSet
}

// openStream opens the page stream starting at page id.
func (pf *pageFile) openStream(id int64, what string) (*stream, error) {
	s := pf.spare
	if s != nil {
		pf.spare = nil
		s.what = what
	} else {
		s = &stream{pf: pf, what: what}
	}
	s.visited.reset(pf.filePages())
	if err := s.load(id); err != nil {
		return nil, err
	}
	return s, nil
}

// release hands back a stream nothing reads any more: the next
// openStream reuses its page buffer.
func (pf *pageFile) release(s *stream) { pf.spare = s }

func (s *stream) load(id int64) error {
	if s.visited.add(id) {
		return s.pf.pageErr(id, s.pf.toOffset(id), s.what, ErrCycle,
			fmt.Sprintf("page %d links back to page %d of the same stream", s.page, id), false)
	}
	if s.visited.count == 1 {
		// The first page: allocate (or reuse a buffer) only for a page
		// the file holds.
		if err := s.pf.checkPage(id, int64(s.pf.pageSize), s.what); err != nil {
			return err
		}
	}
	if s.buf == nil {
		s.buf = make([]byte, s.pf.pageSize)
	}
	if err := s.pf.readPage(id, s.buf, s.what); err != nil {
		return err
	}
	s.pf.used.mark(id, s.pf.filePages())
	s.page = id
	s.typ = s.buf[0]
	s.next = int64(binary.BigEndian.Uint64(s.buf[9:17]))
	s.pos = pageHeaderSize
	s.end = s.pf.pageSize
	switch s.typ {
	case pageFree:
		return s.pf.pageErr(id, s.pf.toOffset(id), s.what, ErrFreePage,
			fmt.Sprintf("page %d is marked free", id), true)
	case pageEnd:
		s.end = int(int32(s.next))
	}
	return nil
}

// atEOF is the InputStream's atEOF: moves to the next page of a part page.
func (s *stream) atEOF() (bool, error) {
	if s.pos < s.end {
		return false, nil
	}
	if s.typ == pageEnd {
		return true, nil
	}
	if err := s.load(s.next); err != nil {
		return false, err
	}
	if s.visited.count == 2 {
		s.pf.shape.add(&s.pf.shape.multiPage, s.what)
	}
	return s.pos >= s.end, nil
}

func (s *stream) readFull(b []byte) error {
	for len(b) > 0 {
		eof, err := s.atEOF()
		if err != nil {
			return err
		}
		if eof {
			return s.fail(ErrShort, fmt.Sprintf("%d more bytes needed", len(b)), true)
		}
		avail := min(s.end, len(s.buf)) - s.pos
		if avail <= 0 {
			return s.fail(ErrOverrun, fmt.Sprintf("end page says its data ends at %d, past the %d-byte page", s.end, len(s.buf)), false)
		}
		n := copy(b, s.buf[s.pos:s.pos+avail])
		s.pos += n
		b = b[n:]
	}
	return nil
}

func (s *stream) fail(sentinel error, detail string, eof bool) error {
	return s.pf.pageErr(s.page, s.pf.toOffset(s.page)+int64(s.pos), s.what, sentinel, detail, eof)
}

// byteInput is a DataInputStream over a whole file (db.free).
type byteInput struct {
	src source
	off int64
}

func (in *byteInput) readFull(b []byte) error {
	if err := in.src.readFull(b, in.off); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return in.fail(ErrShort, fmt.Sprintf("%d more bytes needed", len(b)), true)
		}
		return err
	}
	in.off += int64(len(b))
	return nil
}

func (in *byteInput) fail(sentinel error, detail string, eof bool) error {
	return &CorruptionError{File: in.src.name, Page: -1, Offset: in.off, Err: sentinel, Detail: detail, eof: eof}
}

// The DataInput methods used by KahaDB's marshallers. All integers are
// big-endian.

func readU8(in dataInput) (byte, error) {
	if s, ok := in.(*stream); ok && s.pos+1 <= min(s.end, len(s.buf)) {
		v := s.buf[s.pos]
		s.pos++
		return v, nil
	}
	var b [1]byte
	err := in.readFull(b[:])
	return b[0], err
}

func readBool(in dataInput) (bool, error) {
	b, err := readU8(in)
	return b != 0, err
}

func readI16(in dataInput) (int16, error) {
	if s, ok := in.(*stream); ok && s.pos+2 <= min(s.end, len(s.buf)) {
		v := int16(binary.BigEndian.Uint16(s.buf[s.pos:]))
		s.pos += 2
		return v, nil
	}
	var b [2]byte
	err := in.readFull(b[:])
	return int16(binary.BigEndian.Uint16(b[:])), err
}

func readI32(in dataInput) (int32, error) {
	if s, ok := in.(*stream); ok && s.pos+4 <= min(s.end, len(s.buf)) {
		v := int32(binary.BigEndian.Uint32(s.buf[s.pos:]))
		s.pos += 4
		return v, nil
	}
	var b [4]byte
	err := in.readFull(b[:])
	return int32(binary.BigEndian.Uint32(b[:])), err
}

func readI64(in dataInput) (int64, error) {
	if s, ok := in.(*stream); ok && s.pos+8 <= min(s.end, len(s.buf)) {
		// within the page: what readFull would copy, without the copy
		v := int64(binary.BigEndian.Uint64(s.buf[s.pos:]))
		s.pos += 8
		return v, nil
	}
	var b [8]byte
	err := in.readFull(b[:])
	return int64(binary.BigEndian.Uint64(b[:])), err
}

// readUTF is DataInputStream.readUTF: unsigned 16-bit length, then that
// many bytes of modified UTF-8.
func readUTF(in dataInput) (jstring, error) {
	var l [2]byte
	if err := in.readFull(l[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint16(l[:]))
	if err := in.readFull(b); err != nil {
		return nil, err
	}
	s, err := decodeModifiedUTF8(b)
	if err != nil {
		return nil, in.fail(ErrUTF, err.Error(), false)
	}
	return s, nil
}

// readUTFBytes is readUTF for a caller that wants the string's UTF-8
// bytes, not a jstring: they are appended to dst (an ASCII string's
// modified UTF-8 is its UTF-8 already; others are decoded as readUTF
// decodes them). Errors are readUTF's.
func readUTFBytes(in dataInput, dst []byte) ([]byte, error) {
	if s, ok := in.(*stream); ok {
		// within the page and ASCII (a message id): what the rest does,
		// without the copy through readFull
		lim := min(s.end, len(s.buf))
		if s.pos+2 <= lim {
			from := s.pos + 2
			to := from + int(binary.BigEndian.Uint16(s.buf[s.pos:]))
			if to <= lim && isASCII(s.buf[from:to]) {
				s.pos = to
				return append(dst, s.buf[from:to]...), nil
			}
		}
	}
	n, err := readI16(in)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = append(dst, make([]byte, uint16(n))...)
	b := dst[start:]
	if err := in.readFull(b); err != nil {
		return dst[:start], err
	}
	for _, c := range b {
		if c >= 0x80 {
			s, err := decodeModifiedUTF8(b)
			if err != nil {
				return dst[:start], in.fail(ErrUTF, err.Error(), false)
			}
			return append(dst[:start], s.String()...), nil
		}
	}
	return dst, nil
}

// isASCII reports whether b has no byte of 0x80 or more, eight at a time.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

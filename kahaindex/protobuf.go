package kahaindex

import (
	"errors"
	"fmt"
)

// pbInput is org.apache.activemq.protobuf.CodedInputStream over a buffer,
// for the one message stored in the index: KahaSubscriptionCommand (with
// its KahaDestination). Its rules differ from protobuf's: an unknown tag is
// not skipped (the next bytes are read as a tag), a nested message's limit
// is not checked against the outer one, the end of the data ends a message
// quietly where a tag is expected, and an end-group tag ends the message
// and then fails the check that the last tag was 0.
type pbInput struct {
	b       []byte
	pos     int
	limit   int
	lastTag int32
	steps   int // reads so far, bounded: positions only move forward here
}

var (
	errPBEOF       = errors.New("unexpected end of data")
	errPBMalformed = errors.New("malformed varint")
	errPBTag       = errors.New("invalid tag 0")
	errPBEndTag    = errors.New("end-group tag did not match expected tag")
	errPBNegative  = errors.New("negative length")
)

func (in *pbInput) rawByte() (int8, error) {
	if in.pos >= in.limit || in.pos >= len(in.b) {
		return 0, errPBEOF
	}
	in.pos++
	return int8(in.b[in.pos-1]), nil
}

func (in *pbInput) varint32() (int32, error) {
	var result int32
	for shift := 0; shift < 35; shift += 7 {
		b, err := in.rawByte()
		if err != nil {
			return 0, err
		}
		if shift == 28 {
			result |= int32(b) << 28
		} else {
			result |= int32(b&0x7f) << shift
		}
		if b >= 0 {
			return result, nil
		}
	}
	for i := 0; i < 5; i++ {
		b, err := in.rawByte()
		if err != nil {
			return 0, err
		}
		if b >= 0 {
			return result, nil
		}
	}
	return 0, errPBMalformed
}

// tag is readTag: 0 at the limit or at the end of the data.
func (in *pbInput) tag() (int32, error) {
	if in.pos >= in.limit {
		in.lastTag = 0
		return 0, nil
	}
	t, err := in.varint32()
	if errors.Is(err, errPBEOF) {
		in.lastTag = 0
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if t == 0 {
		return 0, errPBTag
	}
	in.lastTag = t
	return t, nil
}

// bytes is readBytes/readString: a varint length, then that many bytes.
func (in *pbInput) bytes() error {
	n, err := in.varint32()
	if err != nil {
		return err
	}
	switch {
	case n == 0:
		return nil
	case n < 0 && in.pos >= len(in.b):
		return errPBEOF
	case n < 0:
		// The broker would make a buffer of negative length (and a String
		// of it fails); not followed further here.
		return errPBNegative
	case int64(in.pos)+int64(n) > int64(in.limit) || in.pos+int(n) > len(in.b):
		return errPBEOF
	}
	in.pos += int(n)
	return nil
}

// message reads fields until a 0 tag (the end) or an end-group tag.
// fields maps the tags the generated code knows to their readers.
func (in *pbInput) message(fields map[int32]func() error) error {
	for {
		if in.steps++; in.steps > 4*len(in.b)+16 {
			return errPBMalformed
		}
		t, err := in.tag()
		if err != nil {
			return err
		}
		if t&7 == 4 || t == 0 {
			return nil
		}
		if read, ok := fields[t]; ok {
			if err := read(); err != nil {
				return err
			}
		}
		// An unknown tag is not skipped: its data is read as tags.
	}
}

// framed is BaseMessage.mergeFramed(CodedInputStream): a varint length
// becomes the limit (not checked against the current one), the message is
// read, its last tag must be 0.
func (in *pbInput) framed(fields map[int32]func() error) error {
	n, err := in.varint32()
	if err != nil {
		return err
	}
	old := in.limit
	in.limit = int(int32(in.pos) + n) // Java int arithmetic
	if err := in.message(fields); err != nil {
		return err
	}
	if in.lastTag != 0 {
		return errPBEndTag
	}
	in.limit = old
	return nil
}

// checkSubscriptionCommand parses b as the broker parses a stored
// KahaSubscriptionCommand (BaseMessage.mergeUnframed(Buffer)), only to
// find whether it fails.
func checkSubscriptionCommand(b []byte) error {
	in := &pbInput{b: b, limit: len(b)}
	skipVarint := func() error { _, err := in.varint32(); return err }
	destination := map[int32]func() error{
		8:  skipVarint, // type (an unknown enum value is ignored)
		18: in.bytes,   // name
	}
	command := map[int32]func() error{
		10: func() error { return in.framed(destination) }, // destination
		18: in.bytes,                                       // subscriptionKey
		24: skipVarint,                                     // retroactive
		34: in.bytes,                                       // subscriptionInfo
	}
	if err := in.message(command); err != nil {
		return fmt.Errorf("%w at byte %d", err, in.pos)
	}
	if in.lastTag != 0 {
		return fmt.Errorf("%w at byte %d", errPBEndTag, in.pos)
	}
	return nil
}

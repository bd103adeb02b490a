package openwire

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the decoder returns wraps exactly one of
// them inside a *DecodeError that says where.
var (
	// ErrTruncated: a field runs past the end of the blob (or of the body).
	ErrTruncated = errors.New("truncated")
	// ErrMalformed: a value that cannot be: a size prefix that does not
	// match, a negative length, an unknown type byte, nesting too deep.
	ErrMalformed = errors.New("malformed")
	// ErrNotMessage: the blob is an OpenWire data structure, but not a
	// message (types 23 to 29).
	ErrNotMessage = errors.New("not a message")
	// ErrUnsupportedVersion: the OpenWire version is one whose message
	// layout this decoder does not know (it reads 3 to 12). The fields all
	// versions share are decoded.
	ErrUnsupportedVersion = errors.New("unsupported OpenWire version")
	// ErrIncomplete: the message embeds a data structure (an advisory):
	// the fields after it, the compression flag among them, are not
	// decoded, and neither is the body.
	ErrIncomplete = errors.New("embedded data structure not decoded")
	// ErrInflate: a compressed body is not a valid zlib stream.
	ErrInflate = errors.New("compressed body does not inflate")
	// ErrTooLarge: a body larger than Decoder.MaxBodySize once inflated.
	ErrTooLarge = errors.New("body too large")
)

// DecodeError locates a decoding failure inside a message blob.
type DecodeError struct {
	// Field names what was being read: "destination", "properties",
	// "body", "body map entry \"qty\"", ...
	Field string
	// Offset is the byte offset in the blob; when Inflated, in the
	// inflated body, whose compressed bytes start at ContentOffset.
	Offset        int
	Inflated      bool
	ContentOffset int
	Err           error // one of the sentinels
	Detail        string
}

func (e *DecodeError) Error() string {
	s := "openwire: " + e.Field + " at byte " + fmt.Sprint(e.Offset)
	if e.Inflated {
		s += fmt.Sprintf(" of the inflated body (compressed content at byte %d)", e.ContentOffset)
	}
	s += ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *DecodeError) Unwrap() error { return e.Err }

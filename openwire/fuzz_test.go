package openwire_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/jsonw"
	"github.com/kahafs/kahafs/openwire"
)

// FuzzDecodeMessage: any blob decodes without panic, within its bounds
// (a small MaxBodySize keeps inflation cheap); every error is a
// *DecodeError wrapping a sentinel at an offset inside what it names; the
// JSON of whatever decoded is valid, and so is a map or stream body file.
// Seeds: every message of every real-broker fixture, and the synthetic
// messages of the unit tests.
func FuzzDecodeMessage(f *testing.F) {
	stores, _ := filepath.Glob(filepath.Join(brokertest.RepoRoot(), "testdata", "stores", "*", "store"))
	for _, dir := range stores {
		all, _ := fixtureMessages(f, dir)
		for i, b := range all {
			if i < 40 {
				f.Add(b.blob, uint8(11))
			}
		}
	}
	for _, m := range []msg{fullMsg(), {kind: 26, content: javaObject("a.B")}, {kind: 24, compressed: true, content: compressedBytes([]byte("xyz"))},
		{kind: 29, blobURL: "u"}, {kind: 25, dataStructure: 5}, {kind: 27, compressed: true, content: deflate([]byte{1, 1, 9, 0, 1, 'x'})}} {
		f.Add(m.build(), uint8(11))
	}
	old := fullMsg()
	old.version = 6
	f.Add(old.build(), uint8(6))
	sentinels := []error{openwire.ErrTruncated, openwire.ErrMalformed, openwire.ErrNotMessage, openwire.ErrUnsupportedVersion,
		openwire.ErrIncomplete, openwire.ErrInflate, openwire.ErrTooLarge}
	f.Fuzz(func(t *testing.T, blob []byte, version uint8) {
		m, err := openwire.Decoder{Version: int(version % 16), MaxBodySize: 1 << 20}.Decode(blob)
		for _, e := range []error{err, partErr(m, true), partErr(m, false)} {
			if e == nil {
				continue
			}
			var de *openwire.DecodeError
			if !errors.As(e, &de) {
				t.Fatalf("%T is not a *DecodeError: %v", e, e)
			}
			found := false
			for _, s := range sentinels {
				found = found || errors.Is(e, s)
			}
			if !found {
				t.Fatalf("no sentinel in %v", e)
			}
			if de.Offset < 0 || !de.Inflated && de.Offset > len(blob) || de.Inflated && de.Offset > 1<<20 {
				t.Fatalf("offset %d outside the blob (%d bytes): %v", de.Offset, len(blob), e)
			}
		}
		if m == nil {
			if err == nil {
				t.Fatal("no message and no error")
			}
			return
		}
		w := jsonw.Object(nil)
		m.AppendJSON(&w, err, openwire.JSONOptions{BodyLimit: 64})
		if out := w.End(); !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		body := m.AppendRawBody(nil)
		if m.Body.Err == nil && (m.Body.Kind == openwire.BodyMap || m.Body.Kind == openwire.BodyStream) && !json.Valid(body) {
			t.Fatalf("invalid body JSON: %s", body)
		}
	})
}

func partErr(m *openwire.Message, props bool) error {
	switch {
	case m == nil:
		return nil
	case props:
		return m.PropertiesErr
	}
	return m.Body.Err
}

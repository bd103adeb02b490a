package codec_test

import (
	"reflect"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/require"
)

// sameDecoding fails t unless DecodeCommand and the table-driven reference
// decode payload to the same command, or fail with the same error.
func sameDecoding(t *testing.T, payload []byte, what string) {
	t.Helper()
	var got, want codec.Command
	gotErr := codec.DecodeCommand(payload, &got)
	wantErr := codec.DecodeCommandByTable(payload, &want)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%s: error %v, by the table %v", what, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: decoded %+v, by the table %+v", what, got, want)
	}
}

// TestDecodeFastPathsMatchTable: the ADD and REMOVE loops decode every
// fixture record, and every truncation and one-byte change of its payload,
// exactly as the table does.
func TestDecodeFastPathsMatchTable(t *testing.T) {
	var adds, removes, damaged int
	for _, fx := range brokertest.Fixtures(t) {
		changed := 0 // records of this fixture changed byte by byte
		for _, r := range readFixture(t, fx.StoreDir) {
			switch r.typ {
			case codec.AddMessageCommand:
				adds++
			case codec.RemoveMessageCommand:
				removes++
			}
			sameDecoding(t, r.payload, r.loc.String())
			if (r.typ != codec.AddMessageCommand && r.typ != codec.RemoveMessageCommand && r.typ != codec.UpdateMessageCommand) || changed >= 20 {
				continue
			}
			changed++
			// the protobuf fields before a message's body, byte by byte
			p := append([]byte(nil), r.payload...)
			for i := range min(len(p), 160) {
				sameDecoding(t, p[:i], r.loc.String()+" truncated")
				for _, x := range []byte{0x00, 0x01, 0x08, 0x0a, 0x12, 0x7f, 0x80, 0xff} {
					old := p[i]
					p[i] = x
					sameDecoding(t, p, r.loc.String()+" changed")
					p[i] = old
					damaged++
				}
			}
		}
	}
	require.NotZero(t, adds, "fixtures hold ADD records")
	require.NotZero(t, removes, "fixtures hold REMOVE records")
	t.Logf("%d adds, %d removes, %d changed payloads", adds, removes, damaged)
}

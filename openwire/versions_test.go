package openwire_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/openwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersionsAgainstActiveMQ decodes message blobs marshalled by
// ActiveMQ's own OpenWireFormat in every layout a store can have
// (testdata/openwire, brokerkit Marshal: versions 2, 3, 6, 9, 10, 11, 12,
// loose encoding as KahaDBStore sets it up) and compares them with what
// the same OpenWireFormat reads back. Version 2 is refused, after the
// fields every version shares.
func TestVersionsAgainstActiveMQ(t *testing.T) {
	dir := filepath.Join(brokertest.RepoRoot(), "testdata", "openwire")
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	require.NoError(t, err)
	var expected map[string]map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	require.NoError(t, d.Decode(&expected))
	require.Len(t, expected, 7)
	for version, byName := range expected {
		v, err := strconv.Atoi(version)
		require.NoError(t, err)
		for name, wantRaw := range byName {
			t.Run("v"+version+"/"+name, func(t *testing.T) {
				var note string
				if json.Unmarshal(wantRaw, &note) == nil {
					assert.True(t, strings.HasPrefix(note, "cannot marshal"), note)
					return
				}
				var want brokertest.RecoveredMessage
				unmarshal(t, wantRaw, &want)
				blob, err := os.ReadFile(filepath.Join(dir, "v"+version, name+".bin"))
				require.NoError(t, err)
				m, err := openwire.Decoder{Version: v}.Decode(blob)
				if v < openwire.MinVersion {
					require.ErrorIs(t, err, openwire.ErrUnsupportedVersion)
					assert.Equal(t, want.Headers["destination"], m.Destination.String())
					assert.Equal(t, want.Headers["producerId"], m.ProducerID.String())
					return
				}
				require.NoError(t, err)
				assert.Equal(t, v, m.Version)
				checkHeaders(t, want.Headers, m)
				checkProperties(t, want.Properties, m.Properties, false, true)
				checkBody(t, want.Body, m)
				// Decoded with the other layout, the message does not fit.
				other := 11
				if v >= 10 {
					other = 9
				}
				_, err = openwire.Decoder{Version: other}.Decode(blob)
				assert.Error(t, err, "version %d blob decoded as %d", v, other)
			})
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCLI runs the root command in-process and returns stdout, stderr and
// the exit status.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	if err != nil && !errors.Is(err, errNoMatch) {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitStatus(err)
}

func TestDumpJSONEveryRecord(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			out, stderr, code := runCLI(t, "dump", "--json", fx.StoreDir)
			require.Equal(t, exitOK, code, stderr)
			counts := map[string]int{}
			sc := bufio.NewScanner(strings.NewReader(out))
			sc.Buffer(nil, 1<<20)
			var last [2]int64
			for sc.Scan() {
				var rec map[string]any
				require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
				for _, k := range []string{"file", "offset", "size", "type"} {
					require.Contains(t, rec, k)
				}
				typ := rec["type"].(string)
				counts[typ]++
				pos := [2]int64{int64(rec["file"].(float64)), int64(rec["offset"].(float64))}
				assert.True(t, pos[0] > last[0] || (pos[0] == last[0] && pos[1] > last[1]), "journal order")
				last = pos
				switch typ {
				case "KAHA_ADD_MESSAGE_COMMAND":
					assert.Contains(t, rec, "destination")
					assert.Contains(t, rec, "messageId")
					ow := rec["openwire"].(map[string]any)
					assert.Contains(t, ow, "timestamp")
					assert.NotContains(t, ow, "error")
				case "KAHA_COMMIT_COMMAND", "KAHA_PREPARE_COMMAND", "KAHA_ROLLBACK_COMMAND":
					tx := rec["transaction"].(string)
					// TX:<connection id>:<n>; the connection id starts with the
					// client's prefix ("ID:" unless set).
					assert.True(t, strings.HasPrefix(tx, "TX:") || strings.HasPrefix(tx, "XID:["), tx)
				case "KAHA_SUBSCRIPTION_COMMAND":
					assert.Contains(t, rec, "subscriptionKey")
				}
			}
			assert.Equal(t, fx.Expected.Counts, counts)

			one, _, code := runCLI(t, "dump", "--file", "99999", fx.StoreDir)
			assert.Equal(t, exitError, code)
			assert.Empty(t, one)
		})
	}
}

func TestDumpTextAndFileFilter(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	st, err := codec.OpenStore(fx.StoreDir)
	require.NoError(t, err)
	id := st.Files[len(st.Files)-1].ID
	out, _, code := runCLI(t, "dump", "--file", itoa(id), fx.StoreDir)
	require.Equal(t, exitOK, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.NotEmpty(t, lines)
	for _, l := range lines {
		assert.True(t, strings.HasPrefix(l, itoa(id)+":"), l)
	}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

func TestStatsTotals(t *testing.T) {
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			out, stderr, code := runCLI(t, "stats", "--json", fx.StoreDir)
			require.Equal(t, exitOK, code, stderr)
			var doc struct {
				Files []struct {
					Name  string `json:"name"`
					Total struct {
						Count int64 `json:"count"`
						Bytes int64 `json:"totalBytes"`
					} `json:"total"`
				} `json:"files"`
				Types []struct {
					Type  string `json:"type"`
					Count int    `json:"count"`
				} `json:"types"`
				Total struct {
					Count int64 `json:"count"`
					Bytes int64 `json:"totalBytes"`
				} `json:"total"`
				Clean bool `json:"clean"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			assert.True(t, doc.Clean)
			var n, b int64
			for _, f := range doc.Files {
				n += f.Total.Count
				b += f.Total.Bytes
			}
			assert.Equal(t, doc.Total.Count, n)
			assert.Equal(t, doc.Total.Bytes, b)
			counts := map[string]int{}
			for _, ty := range doc.Types {
				counts[ty.Type] = ty.Count
			}
			assert.Equal(t, fx.Expected.Counts, counts)
			text, _, code := runCLI(t, "stats", fx.StoreDir)
			require.Equal(t, exitOK, code)
			assert.Contains(t, text, "TOTAL")
		})
	}
}

func TestDamagedStoreExitStatus(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	victim := st.Files[0]
	// Flip a byte inside the first record of the first file: its batch
	// checksum no longer matches.
	require.NoError(t, faults.EditFile(victim.Path, func(b []byte) []byte { return faults.FlipByte(b, 40) }))
	for _, args := range [][]string{{"dump", dir}, {"stats", dir}} {
		_, stderr, code := runCLI(t, args...)
		assert.Equal(t, exitDamaged, code, args)
		assert.Contains(t, stderr, victim.Path+": offset 0")
		assert.Contains(t, stderr, "checksum")
	}
	// The rest of the store is still read.
	out, _, _ := runCLI(t, "dump", "--json", dir)
	assert.Greater(t, strings.Count(out, "\n"), 10)

	notStore := t.TempDir()
	_, stderr, code := runCLI(t, "stats", notStore)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "not a KahaDB store")
	_, _, code = runCLI(t, "stats", filepath.Join(notStore, "missing"))
	assert.Equal(t, exitError, code)
	require.NoError(t, os.WriteFile(filepath.Join(notStore, "f"), nil, 0o644))
	_, stderr, code = runCLI(t, "dump", filepath.Join(notStore, "f"))
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "not a directory")
}

func TestCompactCLI(t *testing.T) {
	fx := brokertest.Fixtures(t)[0]
	dir := brokertest.CopyStore(t, fx.StoreDir)
	out, stderr, code := runCLI(t, "compact", "--dry-run", "--json", "--max-file-length", "16384", dir)
	require.Equal(t, exitOK, code, stderr)
	var rep struct {
		DryRun bool `json:"dryRun"`
		Moved  struct {
			Records int `json:"records"`
		} `json:"moved"`
		Before struct {
			Files int `json:"files"`
		} `json:"before"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.True(t, rep.DryRun)
	assert.Positive(t, rep.Moved.Records)
	assert.Positive(t, rep.Before.Files)

	out, stderr, code = runCLI(t, "compact", "--max-file-length", "16384", dir)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "Messages moved:")
	assert.Contains(t, out, "- Analysis: read the whole journal", "a fresh copy: no analysis cache to use")
	assert.Contains(t, out, "Original kept at: "+dir+".backup-")

	_, stderr, code = runCLI(t, "compact", t.TempDir())
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "not a KahaDB store")
}

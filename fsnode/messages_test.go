package fsnode

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func messagesFixture(t *testing.T) brokertest.Fixture {
	t.Helper()
	for _, fx := range brokertest.Fixtures(t) {
		if fx.Name == "messages" {
			return fx
		}
	}
	t.Skip("no messages fixture")
	return brokertest.Fixture{}
}

// readChunks reads a file n bytes a read (a body of many pages is read in
// many FUSE requests).
func readChunks(t *testing.T, path string, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out bytes.Buffer
	_, err = io.CopyBuffer(&out, struct{ io.Reader }{f}, make([]byte, n))
	require.NoError(t, err)
	return out.Bytes()
}

// TestMountMessageBodies mounts the messages fixture and reads, through
// the kernel, every pending message's JSON and body, checking the body
// against what the broker's own classes read from the store
// (messages.json) and the JSON against the body.
func TestMountMessageBodies(t *testing.T) {
	fx := messagesFixture(t)
	oracle := fx.Messages(t)
	require.NotNil(t, oracle)
	opts := quietOpts(t)
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	_, mnt := mountStore(t, fx.StoreDir, opts)
	checked := map[string]int{}
	for _, q := range []string{"Q.MSG", "Q.REDELIVERED", "ActiveMQ.DLQ"} {
		pend := filepath.Join(mnt, "by-destination", "queue", q, "pending")
		ents := names(t, pend)
		require.NotEmpty(t, ents, q)
		for i := 0; i < len(ents); i += 2 {
			bodyPath, jsonPath := filepath.Join(pend, ents[i]), filepath.Join(pend, ents[i+1])
			var doc struct {
				File, Offset int32
				ID           string `json:"messageId"`
				Headers      map[string]any
				Body         struct {
					Type      string
					Size      int
					Text      string
					Base64    string
					ClassName string
					Truncated bool
				}
			}
			readJSON(t, jsonPath, &doc)
			want, ok := oracle.Recovered[doc.ID]
			require.True(t, ok, "%s is not in messages.json", doc.ID)
			body := readChunks(t, bodyPath, 1000)
			info, err := os.Stat(bodyPath)
			require.NoError(t, err)
			assert.Equal(t, int64(len(body)), info.Size(), "stat size of %s", bodyPath)
			assert.Equal(t, doc.Body.Size, len(body), "%s: body.size is the .body file's", jsonPath)
			assert.Equal(t, want.Body.Type, doc.Body.Type, jsonPath)
			switch want.Body.Type {
			case "text":
				if want.Body.SHA256 != "" {
					sum := sha256.Sum256(body)
					assert.Equal(t, want.Body.SHA256, hex.EncodeToString(sum[:]), "%s: the broker's text", bodyPath)
					assert.True(t, doc.Body.Truncated, "%s: a large text is cut in the JSON", jsonPath)
					assert.True(t, strings.HasPrefix(string(body), doc.Body.Text))
					assert.Less(t, len(doc.Body.Text), len(body))
				} else {
					assert.Equal(t, *want.Body.Text, string(body), "%s: the broker's text", bodyPath)
					assert.Equal(t, *want.Body.Text, doc.Body.Text)
				}
			case "bytes":
				if want.Body.SHA256 != "" {
					sum := sha256.Sum256(body)
					assert.Equal(t, want.Body.SHA256, hex.EncodeToString(sum[:]), "%s: the broker's bytes", bodyPath)
					assert.True(t, doc.Body.Truncated)
				} else {
					b, err := base64.StdEncoding.DecodeString(want.Body.Base64)
					require.NoError(t, err)
					assert.Equal(t, b, body, "%s: the broker's bytes", bodyPath)
				}
			case "map":
				var got map[string]any
				require.NoError(t, json.Unmarshal(body, &got), "%s: a JSON object", bodyPath)
				var w map[string]brokertest.TypedValue
				require.NoError(t, json.Unmarshal(want.Body.Value, &w))
				assert.Len(t, got, len(w), bodyPath)
				for k := range w {
					assert.Contains(t, got, k, bodyPath)
				}
			case "stream":
				var got []any
				require.NoError(t, json.Unmarshal(body, &got), "%s: a JSON array", bodyPath)
				var w []brokertest.TypedValue
				require.NoError(t, json.Unmarshal(want.Body.Value, &w))
				assert.Len(t, got, len(w), bodyPath)
			case "object":
				assert.True(t, bytes.HasPrefix(body, []byte{0xAC, 0xED, 0, 5}), "%s: a Java serialization stream", bodyPath)
				assert.Equal(t, want.Body.ClassName, doc.Body.ClassName)
			case "none":
				assert.Empty(t, body)
			}
			// One inode wherever the body is listed.
			byFile := filepath.Join(mnt, "by-file", "db-"+itoa(int(doc.File))+".log", commandName(recEntry{off: doc.Offset, typ: typeOf(t, jsonPath)}, true))
			a, err := os.Stat(byFile)
			require.NoError(t, err)
			assert.Equal(t, info.Sys().(*syscall.Stat_t).Ino, a.Sys().(*syscall.Stat_t).Ino, "%s and %s", bodyPath, byFile)
			checked[want.Body.Type]++
		}
	}
	for _, typ := range []string{"text", "bytes", "map", "stream", "object", "none"} {
		assert.Positive(t, checked[typ], "no %s body checked", typ)
	}

	// grep finds words that only a body holds: the end of the large
	// compressed text, past what its JSON shows.
	var large string
	for id, s := range oracle.Sent {
		if s.Label == "text-large-compressed" {
			large = id
		}
	}
	require.NotEmpty(t, large)
	pend := filepath.Join(mnt, "by-destination", "queue", "Q.MSG", "pending")
	var bodyFile string
	for _, n := range names(t, pend) {
		if strings.Contains(n, EscapeName(large)) && strings.HasSuffix(n, ".body") {
			bodyFile = n
		}
	}
	require.NotEmpty(t, bodyFile)
	const end = "[the end of the large compressed text]" // brokerkit Messages.END_COMPRESSED
	out, err := exec.Command("grep", "-rlF", "--", end, mnt).Output()
	require.NoError(t, err, "grep -r %q", end)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	assert.Contains(t, lines, filepath.Join(pend, bodyFile), "grep -r finds it in the body")
	for _, l := range lines {
		assert.True(t, strings.HasSuffix(l, ".body"), "%s: only bodies hold it, the JSON is cut", l)
	}
}

func typeOf(t *testing.T, jsonPath string) codec.EntryType {
	t.Helper()
	var doc struct{ Type string }
	readJSON(t, jsonPath, &doc)
	typ, ok := codec.ParseEntryType(doc.Type)
	require.True(t, ok, doc.Type)
	return typ
}

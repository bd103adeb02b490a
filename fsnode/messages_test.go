package fsnode

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/need"
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
	need.Skip(t, "no messages fixture among the fixtures")
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

// bytesMessage returns the OpenWire blob of a BytesMessage holding body,
// on queue Q.BIG, as a 5.17 store writes it (version 11, loose).
func bytesMessage(id string, body []byte) []byte {
	b := []byte{24}                                     // BytesMessage
	b = append(b, 0, 0, 0, 1, 0)                        // commandId, responseRequired
	b = append(b, 0)                                    // producerId
	b = append(b, 1, 100)                               // destination: queue
	b = owString(b, "Q.BIG")                            //
	b = append(b, 0, 0)                                 // transactionId, originalDestination
	b = append(b, 1, 110)                               // messageId
	b = owString(b, id)                                 // textView
	b = append(b, 0)                                    // producerId
	b = binary.BigEndian.AppendUint64(b, 1)             // producerSequenceId
	b = binary.BigEndian.AppendUint64(b, 0)             // brokerSequenceId
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 1)               // originalTransactionId, groupID, groupSequence, correlationId, persistent
	b = binary.BigEndian.AppendUint64(b, 0)             // expiration
	b = append(b, 4, 0)                                 // priority, replyTo
	b = binary.BigEndian.AppendUint64(b, 1796000000000) // timestamp
	b = append(b, 0, 1)                                 // type; content:
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)               // properties, dataStructure, targetConsumerId, compressed, redeliveryCounter
	b = append(b, 0)                                    // brokerPath
	b = binary.BigEndian.AppendUint64(b, 0)             // arrival
	b = append(b, 0, 0, 0, 0)                           // userID, recievedByDFBridge, droppable, cluster
	b = binary.BigEndian.AppendUint64(b, 1796000000001) // brokerInTime
	b = binary.BigEndian.AppendUint64(b, 0)             // brokerOutTime
	b = append(b, 0)                                    // jmsXGroupFirstForConsumer
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// TestMountLargeBody: a body of megabytes is read in many FUSE requests,
// by several readers at once, whole and exact; its JSON shows 4 KiB.
func TestMountLargeBody(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.Mkdir(dir, 0o755))
	body := make([]byte, 3<<20+17)
	rand.New(rand.NewSource(1)).Read(body)
	w := codec.NewJournalWriter(dir, codec.WriterOptions{NoSync: true})
	q := codec.NewDestination(codec.Queue, []byte("Q.BIG"))
	var none codec.TxID
	_, err := w.AppendCommand(codec.NewAddMessageCommand(none, q, []byte("ID:big:1:1:1:1"), bytesMessage("ID:big:1:1:1:1", body), 4, false))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	_, mnt := mountStore(t, dir, quietOpts(t))
	pend := filepath.Join(mnt, "by-destination", "queue", "Q.BIG", "pending")
	require.Equal(t, []string{"0000000001-ID:big:1:1:1:1.body", "0000000001-ID:big:1:1:1:1.json"}, names(t, pend))
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got := readChunks(t, filepath.Join(pend, "0000000001-ID:big:1:1:1:1.body"), 4096<<i)
			assert.True(t, bytes.Equal(body, got), "reader %d: %d bytes", i, len(got))
		}(i)
	}
	wg.Wait()
	var doc struct {
		Body struct {
			Type      string
			Size      int
			Base64    string
			Truncated bool
		}
	}
	readJSON(t, filepath.Join(pend, "0000000001-ID:big:1:1:1:1.json"), &doc)
	assert.Equal(t, "bytes", doc.Body.Type)
	assert.Equal(t, len(body), doc.Body.Size)
	assert.True(t, doc.Body.Truncated)
	cut, err := base64.StdEncoding.DecodeString(doc.Body.Base64)
	require.NoError(t, err)
	assert.Equal(t, body[:4096], cut)
}

package metrics

import (
	"bytes"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLabelValue(t *testing.T) {
	assert.Equal(t, "queue://ORDERS.ü 100%", LabelValue("queue://ORDERS.ü 100%"), "UTF-8 as it is")
	assert.Equal(t, "queue://bad%FF%FEutf8 100%25", LabelValue("queue://bad\xff\xfeutf8 100%"))
	assert.Equal(t, "a%C3ü", LabelValue("a\xc3ü"), "a cut character's byte")
}

// TestNotUTF8Names: a destination whose name is not UTF-8 (a client may
// send any bytes) is a metric like any other, its name escaped, and the
// output parses: the client library would panic on the raw name.
func TestNotUTF8Names(t *testing.T) {
	dir := t.TempDir()
	w := codec.NewJournalWriter(dir, codec.WriterOptions{FirstID: 1, NoSync: true})
	c := &codec.Command{Type: codec.AddMessageCommand, Dest: codec.NewDestination(codec.Queue, []byte("bad\xff\xfeutf8")),
		MessageID: []byte("ID:p-1:1:1:1:1"), Message: []byte("x"), Priority: 4}
	for _, f := range []int{2, 3, 4, 5, 6} {
		c.Set(f)
	}
	_, err := w.AppendCommand(c)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	a, err := store.Open(dir, store.Options{})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, Write(&b, a, Options{}))
	mfs := parse(t, b.Bytes())
	require.Contains(t, mfs, "kahafs_destination_pending_messages")
	m := mfs["kahafs_destination_pending_messages"].GetMetric()
	require.Len(t, m, 1)
	assert.Equal(t, "queue://bad%FF%FEutf8", m[0].GetLabel()[0].GetValue())
	assert.Equal(t, 1.0, m[0].GetGauge().GetValue())
}

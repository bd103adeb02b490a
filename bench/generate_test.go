package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/openwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallConfig: a few MB in 1 MiB files, so that acks, transactions and
// checkpoints cross file boundaries the way they do at full size.
var smallConfig = genConfig{Bytes: 6 << 20, FileLength: 1 << 20, BatchSize: 64 << 10, Seed: 7, NoSync: true}

func genSmall(t *testing.T, cfg genConfig) (string, *manifest) {
	t.Helper()
	ts, err := loadTemplates(filepath.Join("..", "testdata", "stores"))
	require.NoError(t, err)
	dir := t.TempDir()
	man, err := generate(dir, cfg, ts)
	require.NoError(t, err)
	return dir, man
}

// TestGeneratedStoreReadsCleanly: the generated store reads strictly with
// checksums (no damage), holds the records the manifest counts, and every
// OpenWire blob agrees with its command.
func TestGeneratedStoreReadsCleanly(t *testing.T) {
	dir, man := genSmall(t, smallConfig)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	require.Equal(t, man.Files, len(st.Files))
	assert.GreaterOrEqual(t, man.Bytes, smallConfig.Bytes-int64(smallConfig.FileLength))
	counts := map[string]int64{}
	var records int64
	for _, fi := range st.Files {
		assert.LessOrEqual(t, fi.Size, int64(smallConfig.FileLength), fi.Name)
		records += readGenerated(t, fi, counts)
	}
	assert.Equal(t, man.Records, records)
	assert.Equal(t, man.Counts, counts)
	for _, typ := range []codec.EntryType{codec.TraceCommand, codec.AddMessageCommand, codec.RemoveMessageCommand,
		codec.PrepareCommand, codec.CommitCommand, codec.RollbackCommand, codec.SubscriptionCommand,
		codec.ProducerAuditCommand, codec.AckMessageFileMapCommand} {
		assert.Positive(t, counts[typ.String()], "no %s written", typ)
	}
	assert.Positive(t, man.PendingXA)
	assert.Equal(t, 1, man.PreparedTx)
	assert.Positive(t, man.PendingFlight)
	assert.Equal(t, man.Pending, man.PendingDLQ+man.PendingStuck+man.PendingSub+man.PendingFlight+man.PendingXA)
	assert.NotEmpty(t, man.SampleID)
}

// readGenerated reads one file strictly and checks every record.
func readGenerated(t *testing.T, fi codec.FileInfo, counts map[string]int64) int64 {
	t.Helper()
	df, err := fi.Open()
	require.NoError(t, err)
	defer df.Close()
	r := codec.NewReader(df, codec.ReadOptions{})
	var c codec.Command
	var n int64
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, fi.Name)
		require.NoError(t, codec.DecodeCommand(rec.Payload(), &c))
		require.False(t, c.Unknown)
		require.Equal(t, rec.Payload(), codec.AppendCommand(nil, &c), "byte round trip at %v", rec.Loc)
		checkOpenWire(t, &c, rec.Loc)
		counts[c.Type.String()]++
		n++
	}
	total, summed := r.Batches()
	assert.Equal(t, total, summed, "every batch is checksummed")
	return n
}

func checkOpenWire(t *testing.T, c *codec.Command, loc codec.Location) {
	t.Helper()
	switch c.Type {
	case codec.AddMessageCommand:
		var s openwire.MessageSummary
		require.NoError(t, openwire.ParseMessageSummary(c.Message, &s), "message at %v", loc)
		require.True(t, s.Complete)
		assert.Equal(t, string(c.MessageID), s.MessageID, "message id at %v", loc)
		assert.Equal(t, c.Dest.String(), s.Destination, "destination at %v", loc)
		assert.Equal(t, c.Tx.String(), s.TransactionID, "transaction at %v", loc)
		assert.Equal(t, s.ProducerID+":", string(c.MessageID[:len(s.ProducerID)+1]))
		assert.True(t, s.BodySize >= 4+bodyMin && s.BodySize <= 4+bodyMax, "body of %d bytes", s.BodySize)
		assert.True(t, bytes.Contains(c.Message, c.Dest.Name))
	case codec.RemoveMessageCommand:
		a, err := openwire.ParseMessageAck(c.Ack)
		require.NoError(t, err, "ack at %v", loc)
		assert.Equal(t, string(c.MessageID), a.FirstMessageID)
		assert.Equal(t, string(c.MessageID), a.LastMessageID)
		assert.Equal(t, c.Dest.String(), a.Destination)
		assert.Equal(t, c.Tx.String(), a.TransactionID)
	case codec.SubscriptionCommand:
		si, err := openwire.ParseSubscriptionInfo(c.SubscriptionInfo)
		require.NoError(t, err)
		assert.Equal(t, string(c.SubscriptionKey), si.ClientID+":"+si.SubscriptionName)
		assert.Equal(t, c.Dest.String(), si.Destination)
		assert.Equal(t, c.Dest.String(), si.SubscribedDestination)
		assert.False(t, si.HasSelector)
	}
}

// TestGenerateDeterministic: the same configuration writes the same bytes.
func TestGenerateDeterministic(t *testing.T) {
	cfg := smallConfig
	cfg.Bytes = 2 << 20
	a, ma := genSmall(t, cfg)
	b, mb := genSmall(t, cfg)
	assert.Equal(t, ma.Counts, mb.Counts)
	for i := 1; i <= ma.Files; i++ {
		name := codec.DataFileName(int32(i))
		x, err := os.ReadFile(filepath.Join(a, name))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, name))
		require.NoError(t, err)
		require.True(t, bytes.Equal(x, y), "%s differs", name)
	}
}

package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTxStoreOutcomePinned: in an mKahaDB's txStore, a file holding the
// prepare record of a commit not yet completed (the broker crashed between
// the txStore's outcome and the stores' commits) is kept, as the broker's
// txStoreCleanup keeps it; one whose transactions completed is free.
func TestTxStoreOutcomePinned(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mKahaDB")
	dir := filepath.Join(root, "txStore")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: 4096, NoSync: true})
	pad := codec.NewTraceCommand([]byte(strings.Repeat("x", 1000)))
	add := func(c *codec.Command) codec.Location {
		loc, err := w.AppendCommand(c)
		require.NoError(t, err)
		return loc
	}
	// next pads the current file until a record lands in the next one.
	next := func(file int32) {
		for add(pad).File == file {
		}
	}
	txCmd := func(typ codec.EntryType, tx codec.TxID) *codec.Command {
		c := &codec.Command{Type: typ, Tx: tx}
		c.Set(codec.FieldTransaction)
		return c
	}
	pendingTx := codec.NewXATx(61616, []byte("ID:host-1"), []byte("1"))
	doneTx := codec.NewXATx(61616, []byte("ID:host-2"), []byte("1"))
	add(codec.NewTraceCommand([]byte("LOADED")))
	pending := add(txCmd(codec.PrepareCommand, pendingTx))
	next(1)
	done := add(txCmd(codec.PrepareCommand, doneTx))
	add(txCmd(codec.CommitCommand, doneTx))
	next(2)
	last := add(codec.NewTraceCommand([]byte("LOADED")))
	require.NoError(t, w.Close())
	require.Equal(t, []int32{1, 2, 3}, []int32{pending.File, done.File, last.File})

	l, err := Locate(dir)
	require.NoError(t, err)
	require.Equal(t, KindTxStore, l.Kind)
	a, err := Analyse(l, Options{MaxFileLength: 4096})
	require.NoError(t, err)
	assert.Equal(t, []int32{2}, a.Graph.GCCandidates())
	f, ok := a.Graph.File(1)
	require.True(t, ok)
	require.True(t, f.Pinned)
	require.Len(t, f.Reasons, 1)
	assert.Equal(t, refgraph.KindTxStoreOutcome, f.Reasons[0].Kind)
	assert.Equal(t, []string{pendingTx.String()}, f.Reasons[0].Transactions)

	// The same journal as a plain KahaDB store: the prepare without
	// operations is nothing to a KahaDB replay.
	plain := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.Rename(dir, plain))
	p, err := Open(plain, Options{MaxFileLength: 4096})
	require.NoError(t, err)
	assert.Equal(t, KindKahaDB, p.Layout.Kind)
	assert.Equal(t, []int32{1, 2}, p.Graph.GCCandidates())
}

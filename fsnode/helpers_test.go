package fsnode

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/stretchr/testify/require"
)

// mountStore opens the store in dir and mounts it into a fresh directory
// of t.TempDir(); it skips the test (fails it under CI=true: need.FUSE),
// naming what is missing, when FUSE is not available. The mount is
// removed in t.Cleanup.
func mountStore(t testing.TB, dir string, opts Options) (*FS, string) {
	t.Helper()
	need.FUSE(t, CheckFUSE())
	fsys, err := Open(dir, opts)
	require.NoError(t, err)
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, fsys.Mount(mnt))
	t.Cleanup(func() {
		var err error
		for i := 0; i < 50; i++ {
			if err = fsys.Unmount(); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("unmount %s: %v", mnt, err)
	})
	return fsys, mnt
}

// logSink passes what the tree logs to the test log.
type logSink struct{ t testing.TB }

func (l logSink) Write(p []byte) (int, error) {
	l.t.Logf("fsnode log: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// owString appends an OpenWire loose-encoded string.
func owString(b []byte, s string) []byte {
	b = append(b, 1)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// subscriptionInfo returns the OpenWire SubscriptionInfo of a durable
// subscription, as the broker stores it.
func subscriptionInfo(clientID, subName, topic string) []byte {
	var b []byte
	b = append(b, 55) // SubscriptionInfo
	b = owString(b, clientID)
	b = append(b, 1, 101) // destination: topic
	b = owString(b, topic)
	b = append(b, 0) // no selector
	b = owString(b, subName)
	b = append(b, 0) // no subscribed destination
	b = append(b, 0) // noLocal false
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// hostileNames are destination names chosen to escape or confuse a tree.
var hostileNames = []string{
	"../../../etc",
	"..",
	".",
	".hidden",
	"a/b/../../c",
	"ctl\x01\n\x7f",
	"bad\xff\xfeutf8",
	"100%",
	"%2E%2E",
	"",
	strings.Repeat("L", 300),
	strings.Repeat("/", 200),
}

// synthStore writes a small store with queues, a topic with durable
// subscriptions, local and XA transactions and the hostile destination
// names, in files of at most maxFile bytes. It returns the store directory
// and the commands written, in journal order.
func synthStore(t testing.TB, maxFile int) (string, []codec.Location) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.Mkdir(dir, 0o755))
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: maxFile, NoSync: true})
	var locs []codec.Location
	add := func(c *codec.Command, fields ...int) {
		for _, f := range fields {
			c.Set(f)
		}
		loc, err := w.AppendCommand(c)
		require.NoError(t, err)
		locs = append(locs, loc)
	}
	body := []byte("not an OpenWire message, just bytes")
	msg := func(tx codec.TxID, d codec.Destination, id string) {
		add(codec.NewAddMessageCommand(tx, d, []byte(id), body, 4, false))
	}
	ack := func(tx codec.TxID, d codec.Destination, id, sub string) {
		var key []byte
		if sub != "" {
			key = []byte(sub)
		}
		add(codec.NewRemoveMessageCommand(tx, d, []byte(id), []byte{}, key))
	}
	var none codec.TxID
	add(&codec.Command{Type: codec.TraceCommand, Text: []byte("LOADED Sun Nov 29 20:40:55 UTC 2026")}, 1)
	qa := codec.NewDestination(codec.Queue, []byte("Q.A"))
	for i := 1; i <= 6; i++ {
		msg(none, qa, "ID:q-a:1:1:1:"+itoa(i))
	}
	ack(none, qa, "ID:q-a:1:1:1:1", "")
	ack(none, qa, "ID:q-a:1:1:1:2", "")
	for i, name := range hostileNames {
		msg(none, codec.NewDestination(codec.Queue, []byte(name)), "ID:hostile/../"+itoa(i))
	}
	tp := codec.NewDestination(codec.Topic, []byte("T.X"))
	for _, s := range []struct{ client, name string }{{"c1", "s1"}, {"c/2", "../s2"}} {
		key := s.client + ":" + s.name
		add(&codec.Command{Type: codec.SubscriptionCommand, Dest: tp, SubscriptionKey: []byte(key), SubscriptionInfo: subscriptionInfo(s.client, s.name, "T.X")}, 1, 2, 3, 4)
	}
	for i := 1; i <= 4; i++ {
		msg(none, tp, "ID:t-x:1:1:1:"+itoa(i))
	}
	ack(none, tp, "ID:t-x:1:1:1:1", "c1:s1")
	// A committed local transaction, a prepared and a rolled-back XA one.
	local := codec.NewLocalTx([]byte("ID:evil/../conn"), 3)
	msg(local, qa, "ID:q-a:1:1:2:1")
	add(&codec.Command{Type: codec.CommitCommand, Tx: local}, 1)
	xa := codec.NewXATx(4660, []byte("gtrid-prepared"), []byte("bq"))
	msg(xa, qa, "ID:q-a:1:1:3:1")
	add(&codec.Command{Type: codec.PrepareCommand, Tx: xa}, 1)
	rb := codec.NewXATx(4660, []byte("gtrid/rollback"), []byte("bq"))
	msg(rb, qa, "ID:q-a:1:1:4:1")
	add(&codec.Command{Type: codec.RollbackCommand, Tx: rb}, 1)
	require.NoError(t, w.Close())
	return dir, locs
}

func itoa(i int) string { return padInt(int64(i), 1) }

// storeState records every file of a store directory: name, size, mode,
// mtime and content.
func storeState(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String() + " " + info.ModTime().String() + " " + padInt(info.Size(), 1)
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[p] = v
		return nil
	})
	require.NoError(t, err)
	return out
}

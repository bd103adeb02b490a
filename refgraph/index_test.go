package refgraph

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/javaser"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// javaAckMapBlob serializes a HashMap<Integer, HashSet<Integer>> the way
// java.io.ObjectOutputStream does (class descriptors written once, then
// referenced by handle).
func javaAckMapBlob(m map[int32][]int32) []byte {
	b := []byte{0xAC, 0xED, 0, 5}
	handle := int32(0x7E0000)
	next := func() int32 { h := handle; handle++; return h }
	utf := func(s string) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	var intDesc, setDesc int32 = -1, -1
	writeInt := func(v int32) {
		b = append(b, 0x73)
		if intDesc < 0 {
			b = append(b, 0x72)
			utf("java.lang.Integer")
			b = binary.BigEndian.AppendUint64(b, 0x12e2a0a4f7818738)
			intDesc = next()
			b = append(b, 2, 0, 1, 'I')
			utf("value")
			b = append(b, 0x78, 0x72)
			utf("java.lang.Number")
			b = binary.BigEndian.AppendUint64(b, 0x86ac951d0b94e08b)
			next()
			b = append(b, 2, 0, 0, 0x78, 0x70)
		} else {
			b = append(b, 0x71)
			b = binary.BigEndian.AppendUint32(b, uint32(intDesc))
		}
		next()
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	b = append(b, 0x73, 0x72)
	utf("java.util.HashMap")
	b = binary.BigEndian.AppendUint64(b, 0x0507dac1c31660d1)
	next()
	b = append(b, 3, 0, 2, 'F')
	utf("loadFactor")
	b = append(b, 'I')
	utf("threshold")
	b = append(b, 0x78, 0x70)
	next()
	b = append(b, 0x3f, 0x40, 0, 0, 0, 0, 0, 12, 0x77, 8, 0, 0, 0, 16)
	b = binary.BigEndian.AppendUint32(b, uint32(len(m)))
	keys := make([]int32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		writeInt(k)
		b = append(b, 0x73)
		if setDesc < 0 {
			b = append(b, 0x72)
			utf("java.util.HashSet")
			b = binary.BigEndian.AppendUint64(b, 0xba44859596b8b734)
			setDesc = next()
			b = append(b, 3, 0, 0, 0x78, 0x70)
		} else {
			b = append(b, 0x71)
			b = binary.BigEndian.AppendUint32(b, uint32(setDesc))
		}
		next()
		b = append(b, 0x77, 12, 0, 0, 0, 16, 0x3f, 0x40, 0, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(len(m[k])))
		for _, v := range m[k] {
			writeInt(v)
		}
		b = append(b, 0x78)
	}
	return append(b, 0x78)
}

func (j *journal) ackMapRecord(m map[int32][]int32) codec.Location {
	c := &j.c
	*c = codec.Command{Type: codec.AckMessageFileMapCommand, Blob: javaAckMapBlob(m), Priority: 4, SkipIfSourceExists: true}
	c.Set(codec.FieldBlob)
	return j.put(c)
}

func replayWith(t *testing.T, dir string, opts Options) *Graph {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	so := StoreOptions(st, false, nil)
	opts.Files, opts.Compactions, opts.ReadForwarded = st.Files, so.Compactions, so.ReadForwarded
	b := NewBuilder(opts)
	require.NoError(t, codec.ReadStore(st, codec.ReadOptions{}, 0, b))
	g, err := b.Build()
	require.NoError(t, err)
	checkInvariants(t, g)
	return g
}

func TestJavaAckMapBlobParses(t *testing.T) {
	m := map[int32][]int32{2: {3}, 3: {1, 7}, 9: {}}
	got, err := javaser.ParseAckMap(javaAckMapBlob(m))
	require.NoError(t, err)
	assert.Equal(t, m, got)
}

func pendingIDs(s *Subscription) []string {
	ids := []string{}
	for _, m := range s.Pending() {
		ids = append(ids, m.ID())
	}
	return ids
}

// TestUnmatchedAckRuntimeVersusReplay: before the index's recovery
// position the records are what the running broker processed (an unmatched
// ack does not move lastAck); after it, replay semantics (every ack does).
func TestUnmatchedAckRuntimeVersusReplay(t *testing.T) {
	j := newJournal(t, 1<<20)
	j.subscribe("T.U", "c", "s", "odd = false")
	j.subscribe("T.U", "all", "s", "")
	for i := int64(1); i <= 4; i++ {
		j.add(topic("T.U"), prodA, i, addOpt{})
	}
	j.ack(topic("T.U"), prodA.key(4), "c:s", nil, acked)
	last := j.ack(topic("T.U"), prodA.key(1), "c:s", nil, nil) // unmatched
	dir := j.close()

	sub := func(g *Graph) *Subscription {
		d, ok := g.Destination("1:T.U")
		require.True(t, ok)
		for _, s := range d.Subscriptions {
			if s.Key == "c:s" {
				return s
			}
		}
		t.Fatal("no c:s")
		return nil
	}
	full := replayWith(t, dir, Options{})
	assert.Equal(t, []string{prodA.key(2), prodA.key(3), prodA.key(4)}, pendingIDs(sub(full)))

	idx := &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &last}}
	withIndex := replayWith(t, dir, Options{Index: idx})
	assert.Equal(t, []string{prodA.key(2), prodA.key(3)}, pendingIDs(sub(withIndex)))
	assert.Equal(t, int64(2), sub(withIndex).Count)
	assert.False(t, withIndex.Summary().HasRecoveryStart, "nothing after the index's last update")
}

// TestLoadedAckMapAndSinglePass: the ack map comes from the record the
// index names; the single ascending pass deletes db-2.log although its
// acks refer to db-3.log, which is kept (its own acks refer to db-1.log).
func TestLoadedAckMapAndSinglePass(t *testing.T) {
	j := newJournal(t, 4096)
	j.add(queue("Q.P"), prodA, 1, addOpt{})
	j.fillTo(2)
	am := j.ackMapRecord(map[int32][]int32{2: {3}, 3: {1}, 4: {}})
	j.fillTo(3)
	j.fillTo(4)
	j.trace("after the index")
	dir := j.close()

	g := replayWith(t, dir, Options{Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &am, AckMap: &am}}, MaxFileLength: 4096})
	assert.Equal(t, []int32{2}, g.GCCandidates())
	f2, _ := g.File(2)
	require.Len(t, f2.Notes, 1)
	assert.Equal(t, KindFixpointDiffers, f2.Notes[0].Kind)
	assert.Equal(t, []int32{3}, f2.Notes[0].Files)
	f3, _ := g.File(3)
	require.Len(t, f3.Reasons, 1)
	assert.Equal(t, KindAcks, f3.Reasons[0].Kind)
	assert.Equal(t, []int32{1}, f3.Reasons[0].Files)
	assert.Contains(t, g.GCLog(), "not removing data file: 3 as contained ack(s) refer to referenced file: [1]")

	// without the index the map is rebuilt from the replayed commands,
	// which hold no acks: both files go
	g = replayWith(t, dir, Options{MaxFileLength: 4096})
	assert.Equal(t, []int32{2, 3}, g.GCCandidates())
}

// TestCompactionCopiesAtRuntime: the broker that wrote an ack-compaction
// file never processed the forwarded acks; a replay processes them when
// the source file is gone.
func TestCompactionCopiesAtRuntime(t *testing.T) {
	j := newJournal(t, 1<<20)
	j.add(queue("Q.C"), prodA, 1, addOpt{})
	j.add(queue("Q.C"), prodA, 2, addOpt{})
	j.ack(queue("Q.C"), prodA.key(1), "", nil, acked)
	require.NoError(t, j.w.Close())
	j.w = codec.NewJournalWriter(j.dir, codec.WriterOptions{FirstID: 3, NoSync: true})
	j.rewritten(99) // the source no longer exists
	j.ack(queue("Q.C"), prodA.key(1), "", nil, acked)
	j.ack(queue("Q.C"), prodA.key(2), "", nil, acked)
	last := j.trace("LOADED after the compaction")
	dir := j.close()

	replay := replayWith(t, dir, Options{})
	q, _ := replay.Destination("0:Q.C")
	require.NotNil(t, q)
	assert.Empty(t, q.Messages, "replay applies the forwarded acks of a missing source")

	runtime := replayWith(t, dir, Options{Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &last}}})
	q, _ = runtime.Destination("0:Q.C")
	require.NotNil(t, q)
	require.Len(t, q.Messages, 1, "the running broker never processed the copies")
	assert.Equal(t, prodA.key(2), q.Messages[0].ID())
	f3, _ := runtime.File(3)
	assert.True(t, f3.Compaction)
	assert.Equal(t, 2, f3.Skipped)
}

// TestTransactionBeforeRecoveryPosition: a restarted broker rebuilds
// transactions from its recovery position only.
func TestTransactionBeforeRecoveryPosition(t *testing.T) {
	tx := codec.NewLocalTx([]byte("ID:tx"), 1)
	j := newJournal(t, 1<<20)
	j.add(queue("Q.T"), prodA, 1, addOpt{tx: &tx})
	lu := j.trace("checkpoint")
	j.txCmd(codec.CommitCommand, tx)
	dir := j.close()
	g := replayWith(t, dir, Options{Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &lu}}})
	q, ok := g.Destination("0:Q.T")
	require.True(t, ok)
	assert.Empty(t, q.Messages)
	require.NotEmpty(t, g.Warnings())
	assert.Contains(t, g.Warnings()[0], tx.String())

	g = replayWith(t, dir, Options{})
	q, _ = g.Destination("0:Q.T")
	assert.Len(t, q.Messages, 1)
}

// TestTransactionBeforeRecoveryPositionAtEnd: with no record past the
// index's recovery position the restarted broker replays nothing, so a
// transaction the journal leaves prepared before it (its rollback in a
// file since deleted) is not one the broker knows (seed 180); without
// the index its replay recovers it prepared.
func TestTransactionBeforeRecoveryPositionAtEnd(t *testing.T) {
	xa := codec.NewXATx(4660, []byte("gx.180.29"), []byte("b1"))
	j := newJournal(t, 1<<20)
	j.add(queue("Q.T"), prodA, 1, addOpt{tx: &xa})
	j.txCmd(codec.PrepareCommand, xa)
	lu := j.trace("checkpoint")
	dir := j.close()
	g := replayWith(t, dir, Options{Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &lu}}})
	assert.Empty(t, g.PreparedTransactions())
	require.NotEmpty(t, g.Warnings())
	assert.Contains(t, g.Warnings()[0], xa.String())
	assert.Contains(t, g.Warnings()[0], "a restarted broker does not know it")

	g = replayWith(t, dir, Options{})
	assert.Len(t, g.PreparedTransactions(), 1)
}

// TestDestinationOrderWithIndex: a restarted broker loads the index's
// destinations in ascending key order; a replay from scratch inserts them
// in order of first use. Within a bucket that order shows.
func TestDestinationOrderWithIndex(t *testing.T) {
	var a, b string // two queue names in the same bucket, a > b
	seen := map[int]string{}
	for i := 0; i < 1000 && a == ""; i++ {
		n := fmt.Sprintf("Q.%03d", i)
		bk := javaBucket("0:"+n, 16)
		if o, ok := seen[bk]; ok {
			a, b = n, o
		}
		seen[bk] = n
	}
	require.NotEmpty(t, a)
	j := newJournal(t, 1<<20)
	j.add(queue(a), prodA, 1, addOpt{})
	j.add(queue(b), prodA, 2, addOpt{})
	lu := j.trace("checkpoint")
	dir := j.close()
	g := replayWith(t, dir, Options{})
	assert.Equal(t, []string{"0:" + a, "0:" + b}, g.DestinationOrder())
	g = replayWith(t, dir, Options{Index: &kahaindex.Head{Metadata: kahaindex.Metadata{LastUpdate: &lu}}})
	assert.Equal(t, []string{"0:" + b, "0:" + a}, g.DestinationOrder())
}

// TestRunningBroker: a running broker has not rolled back its in-flight
// transactions and writes to its last file; its latest audit and ack-map
// records pin their files.
func TestRunningBroker(t *testing.T) {
	tx := codec.NewLocalTx([]byte("ID:run"), 3)
	j := newJournal(t, 4096)
	j.add(queue("Q.R"), prodA, 1, addOpt{tx: &tx})
	j.fillTo(2)
	am := j.ackMapRecord(map[int32][]int32{})
	j.fillTo(3)
	j.fillTo(4)
	dir := j.close()

	restart := replayWith(t, dir, Options{MaxFileLength: 4096})
	assert.Equal(t, []int32{1, 2, 3}, restart.GCCandidates(), "the in-flight local transaction is rolled back at restart")
	running := replayWith(t, dir, Options{MaxFileLength: 4096, Running: true})
	assert.Equal(t, []int32{3}, running.GCCandidates())
	f1, _ := running.File(1)
	require.NotEmpty(t, f1.Reasons)
	assert.Equal(t, KindTransactionRange, f1.Reasons[0].Kind)
	assert.Equal(t, []string{tx.String()}, f1.Reasons[0].Transactions)
	f2, _ := running.File(2)
	require.NotEmpty(t, f2.Reasons)
	assert.Equal(t, KindAckMap, f2.Reasons[0].Kind)
	assert.Equal(t, am.String(), f2.Reasons[0].Location)
}

func TestKeepCompletedTransactions(t *testing.T) {
	j := newJournal(t, 1<<20)
	var ids []string
	for i := int64(1); i <= 5; i++ {
		tx := codec.NewLocalTx([]byte("ID:k"), i)
		ids = append(ids, tx.String())
		j.add(queue("Q.K"), prodA, i, addOpt{tx: &tx})
		if i == 4 {
			j.txCmd(codec.RollbackCommand, tx)
		} else {
			j.txCmd(codec.CommitCommand, tx)
		}
	}
	dir := j.close()
	g := replayWith(t, dir, Options{KeepCompleted: 2})
	txs := g.Transactions()
	require.Len(t, txs, 2)
	assert.Equal(t, ids[3], txs[0].ID)
	assert.Equal(t, RolledBack, txs[0].State)
	assert.Equal(t, ids[4], txs[1].ID)
	assert.Equal(t, Committed, txs[1].State)
	assert.Len(t, txs[1].Commands, 2)
	s := g.Summary()
	assert.Equal(t, int64(4), s.Committed)
	assert.Equal(t, int64(1), s.RolledBack)
	assert.Equal(t, 2, s.CompletedTransactionsKept)
	// all kept: encoded during the replay, made when asked for; the
	// same transactions as a ring large enough to hold them all
	g = replayWith(t, dir, Options{KeepCompleted: -1})
	all := g.Transactions()
	require.Len(t, all, 5)
	assert.Equal(t, 5, g.Summary().CompletedTransactionsKept)
	ring := replayWith(t, dir, Options{KeepCompleted: 10}).Transactions()
	for i, tx := range all {
		assert.Equal(t, ids[i], tx.ID)
		assert.Equal(t, *ring[i], *tx, "transaction %d", i)
	}
	assert.Equal(t, RolledBack, all[3].State)
	assert.Same(t, all[0], g.Transactions()[0], "made once")
}

func TestBuilderSpent(t *testing.T) {
	b := NewBuilder(Options{})
	_, err := b.Build()
	require.NoError(t, err)
	_, err = b.Build()
	require.ErrorIs(t, err, errBuilt)
	require.ErrorIs(t, b.Command(codec.Record{}, &codec.Command{}), errBuilt)
}

// TestConcurrentReaders reads one graph from many goroutines (run with
// -race).
func TestConcurrentReaders(t *testing.T) {
	var g *Graph
	for _, sc := range scenarios(t) {
		if sc.name == "out-of-order-acks" {
			j := newJournal(t, sc.maxFile)
			sc.build(j)
			g = replayDir(t, j.close(), int64(sc.maxFile))
		}
	}
	require.NotNil(t, g)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for _, f := range g.Files() {
				n += len(f.Reasons) + f.Commands
				_, _ = g.File(f.ID)
			}
			for _, d := range g.Destinations() {
				n += len(d.Messages)
				for _, s := range d.Subscriptions {
					n += len(s.Pending())
					for k := 0; k < s.NumPending(); k++ {
						n += int(s.PendingAt(k).Size)
					}
				}
			}
			n += len(g.Subscriptions()) + len(g.Transactions()) + len(g.PreparedTransactions()) +
				len(g.GCCandidates()) + len(g.GCLog()) + len(g.DestinationOrder()) + g.Summary().Files
			assert.Positive(t, n)
		}()
	}
	wg.Wait()
}

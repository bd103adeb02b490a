package refgraph

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/binenc"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// call is one Visitor call recorded from a reading of a store: a record
// (copied, decoded again when fed) or a file summary.
type call struct {
	rec  codec.Record
	path string
	sum  *codec.FileSummary
}

// recorder records the Visitor calls of codec.ReadStore.
type recorder struct{ calls []call }

func (r *recorder) Command(rec codec.Record, c *codec.Command) error {
	rec.Data = append([]byte(nil), rec.Data...)
	r.calls = append(r.calls, call{rec: rec})
	return nil
}

func (r *recorder) FileDone(sum *codec.FileSummary) error {
	s := *sum
	s.Damage = append([]*codec.CorruptionError(nil), sum.Damage...)
	r.calls = append(r.calls, call{sum: &s})
	return nil
}

func recordStore(t testing.TB, dir string) (*codec.Store, []call) {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	var r recorder
	require.NoError(t, codec.ReadStore(st, codec.ReadOptions{}, 1, &r))
	return st, r.calls
}

// feed hands calls to v as ReadStore would.
func feed(t testing.TB, v codec.Visitor, calls []call) {
	t.Helper()
	var c codec.Command
	for _, cl := range calls {
		if cl.sum != nil {
			s := *cl.sum
			s.Damage = append([]*codec.CorruptionError(nil), cl.sum.Damage...)
			require.NoError(t, v.FileDone(&s))
			continue
		}
		require.NoError(t, codec.DecodeRecord("", cl.rec, &c))
		require.NoError(t, v.Command(cl.rec, &c))
	}
}

// splitPoints are the positions in calls where a state is saved: every
// file boundary (before and after the FileDone) and, inside files, the
// batch boundaries (every one when all is set, else a few).
func splitPoints(calls []call, all bool) []int {
	var pts []int
	seen := map[int]bool{}
	add := func(i int) {
		if !seen[i] {
			seen[i] = true
			pts = append(pts, i)
		}
	}
	add(0)
	add(len(calls))
	batch := 0
	for i, cl := range calls {
		if cl.sum != nil {
			add(i)
			add(i + 1)
			batch = 0
			continue
		}
		if i > 0 && calls[i-1].sum == nil && calls[i-1].rec.Batch != cl.rec.Batch {
			batch++
			if all || batch%3 == 1 {
				add(i)
			}
		}
	}
	sort.Ints(pts)
	return pts
}

type stateCase struct {
	name  string
	dir   string
	opts  Options
	every bool // split at every batch boundary
}

func stateCases(t *testing.T) []stateCase {
	var cases []stateCase
	fixtures := brokertest.Fixtures(t)
	for _, fx := range fixtures {
		store := fx.StoreDir
		st, err := codec.OpenStore(store)
		require.NoError(t, err)
		base := StoreOptions(st, true, nil)
		base.MaxFileLength = fixtureMaxFile(fx)
		name := fx.Name
		noIndex := base
		noIndex.Index = nil
		running := base
		running.Running = true
		ring := base
		ring.KeepCompleted = 2
		all := base
		all.KeepCompleted = -1
		cases = append(cases,
			stateCase{name + "/index", store, base, true},
			stateCase{name + "/no-index", store, noIndex, false},
			stateCase{name + "/running", store, running, false},
			stateCase{name + "/keep-2", store, ring, false},
			stateCase{name + "/keep-all", store, all, false})
	}
	// damage: a checksum error inside a file, a torn tail at the end
	{
		dir := fixtures[0].StoreDir
		dmg := filepath.Join(t.TempDir(), "store")
		require.NoError(t, faults.CopyDir(dmg, dir))
		st, err := codec.OpenStore(dmg)
		require.NoError(t, err)
		mid, last := st.Files[len(st.Files)/2], st.Files[len(st.Files)-1]
		require.NoError(t, faults.EditFile(mid.Path, func(b []byte) []byte { return faults.FlipByte(b, len(b)/2) }))
		require.NoError(t, faults.EditFile(last.Path, func(b []byte) []byte { return faults.Truncate(b, len(b)*2/3) }))
		opts := StoreOptions(st, true, nil)
		opts.MaxFileLength = fixtureMaxFile(fixtures[0])
		cases = append(cases, stateCase{"damaged", dmg, opts, true})
	}
	for _, sc := range scenarios(t) {
		j := newJournal(t, sc.maxFile)
		sc.build(j)
		dir := j.close()
		cases = append(cases, stateCase{"scenario/" + sc.name, dir, Options{MaxFileLength: int64(sc.maxFile)}, true})
	}
	return cases
}

// fullReplay replays a state case without interruption: its records, the
// options with the store's files, and the graph.
func fullReplay(t *testing.T, tc stateCase) (*codec.Store, []call, Options, *Graph) {
	t.Helper()
	st, calls := recordStore(t, tc.dir)
	opts := tc.opts
	opts.Files = st.Files
	ref := NewBuilder(opts)
	feed(t, ref, calls)
	g, err := ref.Build()
	require.NoError(t, err)
	return st, calls, opts, g
}

// TestStateResume saves the replay state at file and batch boundaries of
// every fixture and synthetic journal, resumes a Builder from it, feeds
// the rest and compares the graph in full with an uninterrupted replay.
func TestStateResume(t *testing.T) {
	for _, tc := range stateCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			_, calls, opts, g := fullReplay(t, tc)
			want := g.Dump()
			if tc.name == "damaged" {
				require.True(t, g.Damaged())
			}

			for _, k := range splitPoints(calls, tc.every) {
				b := NewBuilder(opts)
				feed(t, b, calls[:k])
				var buf bytes.Buffer
				require.NoError(t, b.SaveState(&buf))
				saved := append([]byte(nil), buf.Bytes()...)

				r, err := ResumeBuilder(opts, &buf)
				require.NoError(t, err, "split %d", k)
				// a state before the adoption reads the index while it
				// is decoded (the adoption takes it from the feed)
				wantFeed := opts.LoadIndex != nil && r.hasRecovery && !r.adopted
				require.Equal(t, wantFeed, r.feed != nil, "split %d: the index read during the decoding", k)
				// the encoding is complete and deterministic: a resumed
				// builder saves the same bytes
				again, err := r.AppendState(nil)
				require.NoError(t, err)
				require.Equal(t, saved, again, "split %d: state of the resumed builder", k)

				// the original builder is not disturbed by saving
				feed(t, b, calls[k:])
				gb, err := b.Build()
				require.NoError(t, err)
				require.Equal(t, want, gb.Dump(), "split %d: builder that saved", k)

				feed(t, r, calls[k:])
				gr, err := r.Build()
				require.NoError(t, err)
				require.Equal(t, want, gr.Dump(), "split %d of %d", k, len(calls))
				checkInvariants(t, gr)
			}
		})
	}
}

// TestStateResumeAddsFiles resumes with files the saved state did not
// know (they appeared after it was saved), as a cache's tail read does.
func TestStateResumeAddsFiles(t *testing.T) {
	for _, tc := range stateCases(t) {
		if strings.Contains(tc.name, "/") && !strings.HasSuffix(tc.name, "/index") && !strings.HasPrefix(tc.name, "scenario/") {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			st, calls, opts, g := fullReplay(t, tc)
			want := g.Dump()

			// split before the FileDone of every file: the state knows
			// the files up to that one
			n := 0
			for k, cl := range calls {
				if cl.sum == nil {
					continue
				}
				n++
				early := opts
				early.Files = st.Files[:n]
				b := NewBuilder(early)
				feed(t, b, calls[:k])
				state, err := b.AppendState(nil)
				require.NoError(t, err)
				r, err := ResumeBuilderBytes(opts, state)
				require.NoError(t, err)
				feed(t, r, calls[k:])
				gr, err := r.Build()
				require.NoError(t, err)
				// only the compaction rule looks at the file list while
				// replaying; the fixtures' sources are older files
				require.Equal(t, want, gr.Dump(), "state saved with %d files", n)
			}
		})
	}
}

// fixtureState is the first broker fixture replayed whole, its options,
// builder and state.
func fixtureState(t *testing.T) (Options, *Builder, []byte) {
	t.Helper()
	st, calls := recordStore(t, brokertest.Fixtures(t)[0].StoreDir)
	opts := StoreOptions(st, true, nil)
	b := NewBuilder(opts)
	feed(t, b, calls)
	state, err := b.AppendState(nil)
	require.NoError(t, err)
	return opts, b, state
}

func TestStateMismatch(t *testing.T) {
	opts, b, state := fixtureState(t)

	_, err := ResumeBuilderBytes(opts, state)
	require.NoError(t, err)
	for name, mod := range map[string]func(*Options){
		"max-file-length": func(o *Options) { o.MaxFileLength = 4096 },
		"running":         func(o *Options) { o.Running = true },
		"keep":            func(o *Options) { o.KeepCompleted = 5 },
		"trace":           func(o *Options) { o.RestartTraceSize = 50 },
		"index":           func(o *Options) { o.Index = &kahaindex.Head{} },
	} {
		o := opts
		mod(&o)
		_, err := ResumeBuilderBytes(o, state)
		assert.ErrorIs(t, err, ErrStateMismatch, name)
	}
	// defaults are normalised: 0 and the default are the same options
	o := opts
	o.MaxFileLength = codec.DefaultMaxFileLength
	o.KeepCompleted = 1000
	_, err = ResumeBuilderBytes(o, state)
	assert.NoError(t, err)

	// truncations and trailing bytes are corrupt, never a panic
	for i := 0; i < len(state); i += 1 + len(state)/200 {
		_, err := ResumeBuilderBytes(opts, state[:i])
		assert.Error(t, err, "truncated at %d", i)
	}
	_, err = ResumeBuilderBytes(opts, append(append([]byte(nil), state...), 0))
	assert.ErrorIs(t, err, ErrStateCorrupt)

	// a spent builder has no state
	_, err = b.Build()
	require.NoError(t, err)
	_, err = b.AppendState(nil)
	assert.Error(t, err)
}

// TestStateDamageKeepsPaths: damage naming a file by its path is resumed
// with the path the new options give (the same store read through
// another path).
func TestStateDamageKeepsPaths(t *testing.T) {
	opts := Options{Files: []codec.FileInfo{{ID: 1, Name: "db-1.log", Path: "/old/db-1.log", Size: 10}}}
	b := NewBuilder(opts)
	require.NoError(t, b.FileDone(&codec.FileSummary{Info: opts.Files[0], Size: 10, End: 0,
		Damage: []*codec.CorruptionError{
			{File: "/old/db-1.log", FileID: 1, Offset: 0, End: 10, Err: codec.ErrChecksum, Detail: "x"},
			{File: "elsewhere", FileID: 1, Offset: 3, Err: codec.ErrDecode},
		}}))
	state, err := b.AppendState(nil)
	require.NoError(t, err)
	opts.Files[0].Path = "/new/db-1.log"
	r, err := ResumeBuilderBytes(opts, state)
	require.NoError(t, err)
	g, err := r.Build()
	require.NoError(t, err)
	f, _ := g.File(1)
	require.Len(t, f.Damage, 2)
	assert.Equal(t, codec.CorruptionError{File: "/new/db-1.log", FileID: 1, Offset: 0, End: 10, Err: codec.ErrChecksum, Detail: "x"}, *f.Damage[0])
	assert.Equal(t, codec.CorruptionError{File: "elsewhere", FileID: 1, Offset: 3, Err: codec.ErrDecode}, *f.Damage[1])
	assert.True(t, g.Damaged())

	// damage wrapping an error that is not a codec sentinel cannot be saved
	b = NewBuilder(opts)
	require.NoError(t, b.FileDone(&codec.FileSummary{Info: opts.Files[0],
		Damage: []*codec.CorruptionError{{File: "x", Err: fmt.Errorf("other")}}}))
	_, err = b.AppendState(nil)
	assert.Error(t, err)
}

// stateFields lists, for every type the state covers, its fields and how
// state.go handles each: "saved", or why it is not. When a field is added
// to one of these types this test fails until state.go saves it (and
// stateVersion is bumped) or says here why it needs no saving.
var stateFields = map[reflect.Type]map[string]string{
	reflect.TypeOf(Builder{}): {
		"opts": "given to ResumeBuilder; the replay key checks it", "present": "derived from files", "maxID": "derived from files",
		"fileIx":   "derived from files",
		"recovery": "derived from opts", "hasRecovery": "derived from opts", "afterLast": "derived from opts",
		"model":     "saved (every field, through model.fields: TestModelFieldsListed)",
		"destCache": "lookup cache, checked against the name", "names": "interning only",
		"keep":       "derived from opts",
		"indexAhead": "a state with it set is not saved",
		"adopting":   "AppendState finishes the adoption first (finishAdoption)",
		"feed":       "the index read ahead of the adoption: a resumed Builder that has not adopted it reads it again (startFeed)",
		"early":      "derived from Options and the files (resumeEarly)",
		"buf":        "scratch", "rbBuf": "scratch", "rbCmd": "scratch", "spareOps": "scratch", "spareTx": "scratch", "built": "a spent builder is not saved",
	},
	reflect.TypeOf(finished{}): {"done": "saved", "lazy": "saved (before done)"},
	reflect.TypeOf(File{}): {
		"ID": "saved", "Name": "saved", "Size": "saved", "End": "saved", "Commands": "saved", "Skipped": "saved",
		"Compaction": "saved", "Source": "saved", "Pinned": "made by Build", "Reasons": "made by Build",
		"Notes": "made by Build", "Damage": "saved",
		"AcksFor": "made by Build (ackchain.go)", "AckedBy": "made by Build (ackchain.go)", "ChainStart": "made by Build (ackchain.go)",
	},
	reflect.TypeOf(dest{}): {
		"typ": "saved (position)", "name": "saved", "key": "derived", "topic": "derived", "nextSeq": "saved",
		"entries": "saved", "ids": "saved", "subs": "saved", "locs": "saved", "count": "saved", "bytes": "saved", "statDelta": "saved",
		"cache": "saved (saveAckList)", "acks": "saved (saveAckList)",
	},
	reflect.TypeOf(entry{}): {"id": "saved", "loc": "saved", "prio": "saved", "size": "saved", "class": "saved", "flags": "saved"},
	reflect.TypeOf(sub{}): {"key": "saved", "info": "saved", "retro": "saved", "loc": "saved", "lastAck": "saved",
		"pos": "saved", "hasPos": "saved", "first": "saved", "hasFirst": "saved", "node": "saved (saveAckList)"},
	reflect.TypeOf(destEvent{}): {"key": "saved", "create": "saved", "loc": "saved"},
	reflect.TypeOf(txOp{}): {"add": "saved", "typ": "saved", "name": "saved", "id": "saved", "loc": "saved",
		"prio": "saved", "supported": "saved", "size": "saved", "subKey": "saved", "hasSub": "saved", "ackEmpty": "saved"},
	reflect.TypeOf(txState{}): {"id": "saved", "xa": "saved", "rbSize": "saved", "prepared": "saved", "ops": "saved",
		"cmds": "saved", "order": "saved"},
	reflect.TypeOf(Transaction{}): {"ID": "saved", "Kind": "saved", "State": "saved", "Commands": "saved", "Ops": "saved", "InDoubt": "made by Build (prepared transactions)"},
	reflect.TypeOf(TxOp{}):        {"Add": "saved", "Destination": "saved", "MessageID": "saved", "Subscription": "saved", "Loc": "saved"},
	reflect.TypeOf(idTable{}): {"byName": "saved", "names": "saved", "refs": "saved", "free": "saved",
		"recent": "lookup cache, checked against the names"},
	reflect.TypeOf(seqSet{}):   {"r": "saved"},
	reflect.TypeOf(seqRange{}): {"first": "saved", "last": "saved"},
	reflect.TypeOf(msgKey{}):   {"prefix": "saved", "seq": "saved"},
}

func TestStateCoversBuilder(t *testing.T) {
	for typ, known := range stateFields {
		var have []string
		for i := 0; i < typ.NumField(); i++ {
			name := typ.Field(i).Name
			have = append(have, name)
			_, ok := known[name]
			assert.True(t, ok, "%s.%s is not handled by state.go (SaveState/ResumeBuilder): save it and bump stateVersion, or list it here", typ.Name(), name)
		}
		for name := range known {
			assert.Contains(t, have, name, "%s.%s is listed but gone", typ.Name(), name)
		}
	}
}

// fieldAddrs records the address of every field position.fields visits.
type fieldAddrs []uintptr

func (f *fieldAddrs) add(p any) { *f = append(*f, reflect.ValueOf(p).Pointer()) }

func (f *fieldAddrs) bool(v *bool)          { f.add(v) }
func (f *fieldAddrs) int(v *int)            { f.add(v) }
func (f *fieldAddrs) int32(v *int32)        { f.add(v) }
func (f *fieldAddrs) int64(v *int64)        { f.add(v) }
func (f *fieldAddrs) loc(v *codec.Location) { f.add(v) }

// fieldsOf returns the addresses of the fields of the struct p points to.
func fieldsOf(p any) []uintptr {
	rv := reflect.ValueOf(p).Elem()
	var out []uintptr
	for i := 0; i < rv.NumField(); i++ {
		out = append(out, rv.Field(i).Addr().Pointer())
	}
	return out
}

// TestPositionFieldsListed: position.fields, the one list the state is
// written and read through, visits every field of position exactly once.
func TestPositionFieldsListed(t *testing.T) {
	var p position
	var got fieldAddrs
	p.fields(&got)
	assert.ElementsMatch(t, fieldsOf(&p), got, "every field of position must be listed once in position.fields (and stateVersion bumped)")
}

func (f *fieldAddrs) files(v *[]*File)               { f.add(v) }
func (f *fieldAddrs) curFile(v **File)               { f.add(v) }
func (f *fieldAddrs) position(v *position)           { f.add(v) }
func (f *fieldAddrs) dests(v *[4]map[string]*dest)   { f.add(v) }
func (f *fieldAddrs) events(v *[]destEvent)          { f.add(v) }
func (f *fieldAddrs) ids(v **idTable)                { f.add(v) }
func (f *fieldAddrs) txs(v *map[string]*txState)     { f.add(v) }
func (f *fieldAddrs) finished(v *finished)           { f.add(v) }
func (f *fieldAddrs) ackMap(v *map[int32][]int32)    { f.add(v) }
func (f *fieldAddrs) optAckMap(v *map[int32][]int32) { f.add(v) }
func (f *fieldAddrs) strings(v *[]string)            { f.add(v) }
func (f *fieldAddrs) diffs(v *[]IndexDiff)           { f.add(v) }
func (f *fieldAddrs) int32s(v *[]int32)              { f.add(v) }

// TestModelFieldsListed: model.fields, the one list the state is written
// and read through, visits every field of model exactly once, in the
// order of the fields.
func TestModelFieldsListed(t *testing.T) {
	var m model
	var got fieldAddrs
	m.fields(&got)
	assert.Equal(t, fieldsOf(&m), []uintptr(got), "every field of model must be listed once in model.fields, in the order of the fields (and stateVersion bumped)")
}

// FuzzResumeState: a saved state that does not decode is refused, never a
// panic; one that decodes saves again to a state that resumes and saves
// to the same bytes (AppendState(Resume(s)) == s for the states the
// builder saved); and it builds a graph with its invariants, also after
// more records are fed.
func FuzzResumeState(f *testing.F) {
	dirs, _ := filepath.Glob("../testdata/stores/*/store")
	if len(dirs) == 0 {
		need.Skip(f, "no fixtures under testdata/stores")
	}
	st, calls := recordStore(f, dirs[len(dirs)-1])
	opts := StoreOptions(st, true, nil)
	all := opts
	all.KeepCompleted = -1 // finished transactions made lazily
	half := len(calls) / 2
	seeds := map[string]bool{}
	for _, o := range []Options{opts, all} {
		for _, k := range []int{0, half, len(calls)} {
			b := NewBuilder(o)
			feed(f, b, calls[:k])
			state, err := b.AppendState(nil)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(state)
			seeds[string(state)] = true
		}
	}
	f.Fuzz(func(t *testing.T, state []byte) {
		o := opts
		b, err := ResumeBuilderBytes(o, state)
		if err != nil {
			o = all
			if b, err = ResumeBuilderBytes(o, state); err != nil {
				return
			}
		}
		// A state that resumes is what it says: saved again, it resumes
		// and saves to the same bytes; a state the builder saved itself
		// (the seeds) saves to exactly itself.
		saved, err := b.AppendState(nil)
		if err != nil {
			t.Fatalf("a resumed builder does not save its state: %v", err)
		}
		if _, ok := seeds[string(state)]; ok && !bytes.Equal(saved, state) {
			t.Fatal("a saved state, resumed and saved again, differs")
		}
		again, err := ResumeBuilderBytes(o, saved)
		if err != nil {
			t.Fatalf("a saved state does not resume: %v", err)
		}
		if savedAgain, err := again.AppendState(nil); err != nil || !bytes.Equal(savedAgain, saved) {
			t.Fatalf("saving a resumed state is not stable: %v", err)
		}
		var c codec.Command
		for _, cl := range calls[half:] {
			if b.commands > 1e6 {
				// a state may claim a long journal: its sequence ranges
				// are bounded by it, and so is the work of a command
				break
			}
			if cl.sum != nil {
				s := *cl.sum
				if b.FileDone(&s) != nil {
					t.Fatal("FileDone failed")
				}
				continue
			}
			if codec.DecodeRecord("", cl.rec, &c) != nil {
				continue
			}
			if err := b.Command(cl.rec, &c); err != nil {
				t.Fatal(err)
			}
		}
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Transactions()) < g.Summary().CompletedTransactionsKept {
			t.Fatal("finished transactions lost")
		}
	})
}

// TestLazyTransactions: a resumed replay that keeps every finished
// transaction makes them when they are first asked for, once, safely from
// concurrent readers.
func TestLazyTransactions(t *testing.T) {
	var dir string
	for _, fx := range brokertest.Fixtures(t) {
		if fx.Name == "tx" {
			dir = fx.StoreDir
		}
	}
	require.NotEmpty(t, dir)
	st, calls := recordStore(t, dir)
	opts := StoreOptions(st, true, nil)
	opts.KeepCompleted = -1
	ref := NewBuilder(opts)
	feed(t, ref, calls)
	g, err := ref.Build()
	require.NoError(t, err)
	want := g.Dump()

	half := len(calls) / 2
	b := NewBuilder(opts)
	feed(t, b, calls[:half])
	state, err := b.AppendState(nil)
	require.NoError(t, err)
	r, err := ResumeBuilderBytes(opts, state)
	require.NoError(t, err)
	require.NotNil(t, r.lazy, "finished transactions are kept encoded")
	feed(t, r, calls[half:])
	gr, err := r.Build()
	require.NoError(t, err)
	assert.Equal(t, g.Summary(), gr.Summary())
	assert.Equal(t, len(g.PreparedTransactions()), len(gr.PreparedTransactions()))
	var wg sync.WaitGroup
	lists := make([][]*Transaction, 8)
	for i := range lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i] = gr.Transactions()
			_ = gr.PreparedTransactions()
		}()
	}
	wg.Wait()
	for _, l := range lists[1:] {
		require.Equal(t, &lists[0][0], &l[0], "made once")
	}
	assert.Equal(t, want, gr.Dump())
}

// TestLazyTransactionIDs: finished transactions' ids kept as differences
// from the id before come back whole — across blocks, through a saved
// state and with a resumed list added to — and a saved state whose ids
// do not expand as announced is refused.
func TestLazyTransactionIDs(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var want []string
	l := &lazyTxs{}
	conn := 0
	add := func(l *lazyTxs, n int) {
		for i := 0; i < n; i++ {
			var id string
			switch rng.Intn(50) {
			case 0:
				id = ""
			case 1:
				id = fmt.Sprintf("XID:[1,globalId=%x,branchId=%x]", rng.Uint64(), rng.Uint32())
			case 2:
				conn = rng.Intn(5) // another connection's transactions
			default:
				id = fmt.Sprintf("TX:ID:host-41234-1795990400000-1:%d:%d", 1000+conn, len(want))
			}
			want = append(want, id)
			l.add(id, LocalTx, Committed, nil, nil)
		}
	}
	add(l, 40000) // more than one block
	require.Greater(t, len(l.ids), 1)
	assert.Less(t, l.idBytes, l.idLen/4, "kept as differences")
	ids := func(l *lazyTxs) []string {
		var out []string
		for _, tx := range l.decode() {
			out = append(out, tx.ID)
		}
		return out
	}
	assert.Equal(t, want, ids(l))

	var w binenc.Writer
	saveDone(&w, l, nil)
	d := &stateDecoder{r: binenc.NewReader(w.B), data: w.B, names: strTable{}}
	r := d.doneTxs()
	require.NoError(t, d.r.Err())
	add(r, 1000) // a resumed list goes on
	assert.Equal(t, want, ids(r))

	// an id sharing more than the one before it has
	bad := &lazyTxs{}
	bad.add("TX:1", LocalTx, Committed, nil, nil)
	bad.add("TX:2", LocalTx, Committed, nil, nil)
	blk := bad.ids[0]
	blk[len(blk)-3] = 9 // the second id's shared length
	w = binenc.Writer{}
	saveDone(&w, bad, nil)
	d = &stateDecoder{r: binenc.NewReader(w.B), data: w.B, names: strTable{}}
	d.doneTxs()
	assert.Error(t, d.r.Err())
}

// TestTransactionsWithID: a lookup by id finds what a filter of
// Transactions finds (duplicate ids, open, finished and tail ones, in
// order, with their commands and operations), before the finished ones are
// made and after, and beside a concurrent Transactions.
func TestTransactionsWithID(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	l := &lazyTxs{}
	var ids []string
	id := func() string {
		if len(ids) > 0 && rng.Intn(20) == 0 {
			return ids[rng.Intn(len(ids))] // an id used before (a reused XA id)
		}
		s := fmt.Sprintf("TX:ID:host-41234-1795990400000-1:%d:%d", 1000+rng.Intn(3), rng.Intn(1e6))
		ids = append(ids, s)
		return s
	}
	for i := 0; i < 30000; i++ { // more than one block
		var cmds []codec.Location
		var ops []TxOp
		for j := rng.Intn(4); j > 0; j-- {
			loc := codec.Location{File: int32(1 + rng.Intn(9)), Offset: rng.Int31n(1 << 25), Size: 1 + rng.Int31n(4096)}
			cmds = append(cmds, loc)
			ops = append(ops, TxOp{Add: rng.Intn(2) == 0, Destination: "queue://Q", MessageID: fmt.Sprintf("ID:p:1:1:1:%d", i), Loc: loc})
		}
		l.add(id(), LocalTx, Committed, cmds, ops)
	}
	open := []*Transaction{{ID: id(), Kind: LocalTx, State: Prepared}, {ID: ids[3], Kind: LocalTx, State: InFlight}}
	tail := []*Transaction{{ID: ids[5], Kind: LocalTx, State: RolledBack}}
	orig := *l // the encoded form (a Graph drops it once it makes them all)
	g := &Graph{txs: open, lazy: l, lazyTail: tail}
	ref := &Graph{txs: open, lazy: &lazyTxs{}, lazyTail: tail}
	*ref.lazy = *l
	filter := func(all []*Transaction, id string) []Transaction {
		var out []Transaction
		for _, t := range all {
			if t.ID == id {
				out = append(out, *t)
			}
		}
		return out
	}
	values := func(ts []*Transaction) []Transaction {
		var out []Transaction
		for _, t := range ts {
			out = append(out, *t)
		}
		return out
	}
	all := ref.Transactions()
	probe := append([]string{"TX:none", ids[3], ids[5]}, ids[:200]...)
	dups := 0
	for _, id := range probe {
		want := filter(all, id)
		if len(want) > 1 {
			dups++
		}
		assert.Equal(t, want, values(g.TransactionsWithID(id)), "before the transactions are made: %s", id)
	}
	assert.Greater(t, dups, 2, "ids found more than once")
	assert.Nil(t, g.all, "a lookup makes no transaction list")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); g.Transactions() }()
	for _, id := range probe[:50] {
		assert.Equal(t, filter(all, id), values(g.TransactionsWithID(id)), "while they are made: %s", id)
	}
	wg.Wait()
	for _, id := range probe {
		assert.Equal(t, filter(all, id), values(g.TransactionsWithID(id)), "after they are made: %s", id)
	}

	// indexed (IndexTransactions, a mount's): every id, and ids not there
	byID := map[string][]Transaction{}
	for _, t := range all {
		byID[t.ID] = append(byID[t.ID], *t)
	}
	gi := &Graph{txs: open, lazy: &lazyTxs{}, lazyTail: tail}
	*gi.lazy = orig
	gi.IndexTransactions()
	require.NotNil(t, gi.txIdx)
	lookups := 0
	for i, id := range append([]string{"TX:none", "", "TX:ID:host-41234-1795990400000-1:1000:"}, ids...) {
		if i%5 == 4 && len(byID[id]) < 2 {
			continue // most ids, every one found more than once
		}
		require.Equal(t, byID[id], values(gi.TransactionsWithID(id)), "indexed: %s", id)
		lookups++
	}
	assert.Greater(t, lookups, 20000)
	assert.Nil(t, gi.all, "an indexed lookup makes no transaction list")
	// made while lookups run, and while the transactions are made
	gc := &Graph{txs: open, lazy: &lazyTxs{}, lazyTail: tail}
	*gc.lazy = orig
	wg.Add(2)
	go func() { defer wg.Done(); gc.IndexTransactions() }()
	go func() { defer wg.Done(); gc.Transactions() }()
	for _, id := range probe[:50] {
		assert.Equal(t, byID[id], values(gc.TransactionsWithID(id)), "while indexed and made: %s", id)
	}
	wg.Wait()
	assert.Nil(t, gc.txIdx, "no index once the transactions are made")
	gi.Transactions()
	assert.Nil(t, gi.txIdx, "the index goes once the transactions are made")
	gi.IndexTransactions()
	assert.Nil(t, gi.txIdx, "no index once the transactions are made")

	// an encoded form that does not read as it should is not indexed,
	// and a lookup finds what reading it in order finds
	for _, cut := range []struct {
		name string
		fn   func(*lazyTxs)
	}{
		{"records cut", func(c *lazyTxs) { c.recs = [][]byte{c.recs[0][:len(c.recs[0])-3]} }},
		{"an id cut", func(c *lazyTxs) { c.ids = [][]byte{c.ids[0][:len(c.ids[0])-2]} }},
		{"a record too many", func(c *lazyTxs) { c.n-- }},
	} {
		bad := &lazyTxs{}
		*bad = orig
		cut.fn(bad)
		gb := &Graph{lazy: bad}
		gb.IndexTransactions()
		assert.Nil(t, gb.txIdx, cut.name)
	}
}

// TestStateMessageSlotChecked: a state whose destinations use a slot of
// the id table that the table does not have is corrupt (the check the
// decoder makes once the table is read, after the destinations).
func TestStateMessageSlotChecked(t *testing.T) {
	opts, b, state := fixtureState(t)
	_, err := ResumeBuilderBytes(opts, state)
	require.NoError(t, err)

	// the table without its last slot in use (a message's) and the free
	// ones after it
	ids := b.ids
	last := uint32(len(ids.names))
	for last > 0 && slices.Contains(ids.free, last-1) {
		last--
	}
	require.NotZero(t, last, "the fixture uses an id slot")
	last--
	ids.names, ids.refs = ids.names[:last], ids.refs[:last]
	ids.free = slices.DeleteFunc(ids.free, func(s uint32) bool { return s >= last })
	for name, slot := range ids.byName {
		if slot >= last {
			delete(ids.byName, name)
		}
	}
	state, err = b.AppendState(nil)
	require.NoError(t, err)
	_, err = ResumeBuilderBytes(opts, state)
	require.ErrorIs(t, err, ErrStateCorrupt)
	assert.Contains(t, err.Error(), fmt.Sprintf("message id slot %d out of range", last))
}

// TestStateAckPositionsPastNextSeq: an adopted index's subscription may
// hold ack positions past its destination's next sequence (the broker of
// the kept seed 148 left 64 and 86 in topic T.3's c3:s3 with the next
// sequence 64): the state saves and resumes them, and the resumed
// builder builds the same graph (a cache of such a store was never used).
func TestStateAckPositionsPastNextSeq(t *testing.T) {
	dir := filepath.Join("..", "internal", "difftest", "testdata", "kept", "seed-148-prioritized-drift-dispatch", "workload", "store")
	st, calls := recordStore(t, dir)
	opts := StoreOptions(st, true, nil)
	b := NewBuilder(opts)
	feed(t, b, calls)
	var buf bytes.Buffer
	require.NoError(t, b.SaveState(&buf))
	past := false
	for _, ds := range b.dests {
		for _, d := range ds {
			for _, s := range d.subs {
				for _, r := range s.pos.r {
					past = past || r.last >= d.nextSeq
				}
			}
		}
	}
	require.True(t, past, "the store's index has no ack position past its destination's next sequence any more")
	r, err := ResumeBuilder(opts, &buf)
	require.NoError(t, err)
	want, err := b.Build()
	require.NoError(t, err)
	got, err := r.Build()
	require.NoError(t, err)
	require.Equal(t, want.Dump(), got.Dump())
}

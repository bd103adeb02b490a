package refgraph

import "github.com/kahafs/kahafs/internal/binenc"

// model is the broker's index state as a replay builds it: the data files
// and what the replay counted in them, where the replay is (position),
// the destinations with their pending messages and durable
// subscriptions, the message-id table, the transactions, the ack maps and
// what the adoption of an index left. The replay (builder.go) is the code
// that changes it; Build and the passes it runs (materialize, the cleanup
// prediction, explain) read it.
//
// It is the only thing a saved state holds: every field is written and
// read back through one list, model.fields, in the order of the fields. A
// field added here is saved once it has its line there
// (TestModelFieldsListed fails until it does), and stateVersion is bumped.
type model struct {
	files   []*File // in the order they were added (sorted by Build)
	curFile *File   // the file of the last record

	// position: where the replay is and the scalars it keeps (saved
	// field by field: see position)
	position

	dests  [4]map[string]*dest // by codec.DestType, then name
	events []destEvent         // changes of the storedDestinations map
	ids    *idTable            // producer parts of the message ids

	txs map[string]*txState // open transactions
	finished

	ackB      map[int32][]int32 // entries made by replayed commands
	ackLoaded map[int32][]int32 // from the index's ack-map record

	// indexKeys: the adopted index's destination keys (adopt.go)
	indexKeys []string
	// diffs: where the index and the journal alone differ (at adoption)
	diffs []IndexDiff

	// earlyDone: the ack-compaction files with a gone source met so far
	// (Builder.early: the ones still to be met)
	earlyDone []int32

	// spannedTx: the locations (file, offset pairs) of transactional adds
	// committed after the first command adding a subscription of their
	// destination that came after the add (rebuild.go; rare)
	spannedTx []int32

	warnings []string

	// indexDamage: why the broker's index cannot tell what its cleanup
	// keeps (damage the reader read past, structures that disagree, an
	// index that could not be used): no file's deletion is predicted
	// (KindIndexDamaged)
	indexDamage []string
	// keyFiles: the files the adopted location indexes have keys in,
	// ascending, and what names each (keyFilesBy): a broker refuses to
	// start on a key in a file not in the store (checkMissing)
	keyFiles   []int32
	keyFilesBy []string
}

// newModel is the state before the first record.
func newModel() model {
	m := model{ids: newIDTable(), txs: map[string]*txState{}, ackB: map[int32][]int32{}}
	for i := range m.dests {
		m.dests[i] = map[string]*dest{}
	}
	return m
}

// finished are the kept finished transactions: a ring of the latest
// (position.doneNext, position.doneFull), or, when every one is kept
// (KeepCompleted < 0), those of a resumed state still encoded (lazy) and
// the ones the replay finished since (done).
type finished struct {
	done []*Transaction
	lazy *lazyTxs
}

// modelFields visits every field of a model, in the order of the saved
// state: one method per kind of field. A field of a kind listed here is
// saved by one line in model.fields; a field of a new kind needs its
// method here, in stateWriter and in stateDecoder (state.go), and in the
// test's fieldAddrs.
type modelFields interface {
	files(*[]*File)
	curFile(**File)
	position(*position)
	dests(*[4]map[string]*dest)
	events(*[]destEvent)
	ids(**idTable)
	txs(*map[string]*txState)
	finished(*finished)
	ackMap(*map[int32][]int32)
	optAckMap(*map[int32][]int32) // nil kept apart from empty
	strings(*[]string)
	diffs(*[]IndexDiff)
	int32s(*[]int32)
}

// fields hands every field of m to v, in the order of the fields and of
// the saved state. It is the only list of them (TestModelFieldsListed).
func (m *model) fields(v modelFields) {
	v.files(&m.files)
	v.curFile(&m.curFile)
	v.position(&m.position)
	v.dests(&m.dests)
	v.events(&m.events)
	v.ids(&m.ids)
	v.txs(&m.txs)
	v.finished(&m.finished)
	v.ackMap(&m.ackB)
	v.optAckMap(&m.ackLoaded)
	v.strings(&m.indexKeys)
	v.diffs(&m.diffs)
	v.int32s(&m.earlyDone)
	v.int32s(&m.spannedTx)
	v.strings(&m.warnings)
	v.strings(&m.indexDamage)
	v.int32s(&m.keyFiles)
	v.strings(&m.keyFilesBy)
}

// save writes every field of m.
func (m *model) save(w *binenc.Writer, paths map[int32]string) error {
	sw := &stateWriter{w: w, paths: paths}
	m.fields(sw)
	return sw.err
}

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
// read back through one list, modelParts, in the order of the fields. A
// field added here is saved once it has its entry there
// (TestModelPartsListed fails until it does), and stateVersion is bumped.
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

	warnings []string
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

// part is how one field of the model is saved and loaded.
type part struct {
	field string // the model's field (TestModelPartsListed)
	save  func(*stateWriter) error
	load  func(*stateDecoder)
}

// modelParts lists every field of model, in the order of the fields and
// of the saved state. It is the only list of them.
var modelParts = []part{
	{"files", (*stateWriter).files, (*stateDecoder).files},
	{"curFile", (*stateWriter).curFile, (*stateDecoder).curFile},
	{"position", (*stateWriter).position, (*stateDecoder).position},
	{"dests", (*stateWriter).dests, (*stateDecoder).dests},
	{"events", (*stateWriter).events, (*stateDecoder).events},
	{"ids", (*stateWriter).ids, (*stateDecoder).ids},
	{"txs", (*stateWriter).txs, (*stateDecoder).txs},
	{"finished", (*stateWriter).finished, (*stateDecoder).finished},
	{"ackB", (*stateWriter).ackB, (*stateDecoder).ackB},
	{"ackLoaded", (*stateWriter).ackLoaded, (*stateDecoder).ackLoaded},
	{"indexKeys", (*stateWriter).indexKeys, (*stateDecoder).indexKeys},
	{"diffs", (*stateWriter).diffs, (*stateDecoder).diffs},
	{"earlyDone", (*stateWriter).earlyDone, (*stateDecoder).earlyDone},
	{"warnings", (*stateWriter).warnings, (*stateDecoder).warnings},
}

// stateWriter writes the parts of a model.
type stateWriter struct {
	w     *binenc.Writer
	m     *model
	paths map[int32]string // Options.filePaths
}

// save writes every part of m.
func (m *model) save(w *binenc.Writer, paths map[int32]string) error {
	sw := &stateWriter{w: w, m: m, paths: paths}
	for _, p := range modelParts {
		if err := p.save(sw); err != nil {
			return err
		}
	}
	return nil
}

package fsnode

import (
	"fmt"
	"path"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lookup by message id as it was before the id index (every message
// list and every transaction searched): the oracle the indexed lookup is
// checked against (TestFindMessageIndexed).

// findMessage is FindMessage, and the record of the message as a pending/
// or in-doubt/ entry shows it (nil if none does).
func (s *Snapshot) findMessageWalk(id string, opts FindOptions) ([]string, *codec.Location, error) {
	// The commands that name the message, and their types.
	cmds := map[codec.Location]codec.EntryType{}
	var dests []string
	var held *codec.Location
	walkMessageLists(s.rootEntry(), nameByDestination, func(dir string, l *messageList) {
		for i := 0; i < l.n; i++ {
			m := l.msg(i)
			if !m.HasID(id) {
				continue
			}
			if held == nil {
				held = &m.Loc
			}
			dests = append(dests, path.Join(dir, l.at(2*i).name), path.Join(dir, l.at(2*i+1).name))
			typ := codec.AddMessageCommand
			if m.Updated {
				typ = codec.UpdateMessageCommand
			}
			cmds[locKey(m.Loc)] = typ
		}
	})
	for _, t := range s.graph.Transactions() {
		for _, op := range t.Ops {
			if op.MessageID == id {
				typ := codec.RemoveMessageCommand
				if op.Add {
					typ = codec.AddMessageCommand
				}
				cmds[locKey(op.Loc)] = typ
			}
		}
	}
	if opts.Scan {
		if err := s.scanMessage(id, cmds); err != nil {
			return nil, nil, err
		}
	}
	out := append(s.commandPaths(cmds), dests...)
	txs, err := s.findInTransactionsWalk(id, cmds)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, txs...)
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: no path of the tree shows %s", ErrNoMessage, id)
	}
	return out, held, nil
}

// findInTransactions returns the paths under by-transaction/ of the
// commands in cmds and of the in-doubt entries of the message.
func (s *Snapshot) findInTransactionsWalk(id string, cmds map[codec.Location]codec.EntryType) ([]string, error) {
	txs := s.graph.Transactions()
	x := s.txIndex()
	var out []string
	for k := 0; k < x.len(); k++ {
		_, name := x.entry(k)
		paths, err := s.transactionPaths(txs[x.order[k]], name, id, cmds)
		if err != nil {
			return nil, err
		}
		out = append(out, paths...)
	}
	return out, nil
}

// heldAt is the record of the message with the given id that the store
// holds (its ADD or latest UPDATE), if any.
func (s *Snapshot) heldAtWalk(id string) (codec.Location, bool) {
	for _, d := range s.graph.Destinations() {
		for i := range d.Messages {
			if m := &d.Messages[i]; m.HasID(id) {
				return m.Loc, true
			}
		}
	}
	return codec.Location{}, false
}

// walkMessageLists calls fn with every message list (pending/, in-doubt/)
// below the directory name of e, and its path; files are not rendered.
func walkMessageLists(e entry, dir string, fn func(dir string, l *messageList)) {
	t, ok := lookupDir(e, path.Base(dir))
	if !ok {
		return
	}
	var walk func(dir string, t dirTable)
	walk = func(dir string, t dirTable) {
		if l, ok := t.(*messageList); ok {
			fn(dir, l)
			return
		}
		for i := 0; i < t.len(); i++ {
			c := t.at(i)
			if !c.isDir() {
				continue
			}
			if sub, err := c.sub(); err == nil {
				walk(path.Join(dir, c.name), sub)
			}
		}
	}
	walk(dir, t)
}

// TestFindMessageIndexed: for every id a fixture's graph knows (held
// messages, transaction operations) and a few it does not, FindMessage
// (the id index, the transactions found through the records) returns
// what searching every list and every transaction returns, with and
// without Scan, and by-message-id finds the same record.
func TestFindMessageIndexed(t *testing.T) {
	checked := 0
	for _, fx := range brokertest.Fixtures(t) {
		t.Run(fx.Name, func(t *testing.T) {
			s := openFixture(t, fx)
			// the same lookups on a mount whose finished transactions
			// are not made yet (found by id: TransactionsWithID)
			fresh := openFixture(t, fx)
			ids := map[string]bool{"ID:no-such-message:1:1:1:1": true, "": true, "ID:x": true}
			for _, d := range s.graph.Destinations() {
				for i := range d.Messages {
					id := d.Messages[i].ID()
					ids[id] = true
					ids[id+"0"] = true // a sequence that differs
				}
			}
			for _, tx := range s.graph.Transactions() {
				for _, op := range tx.Ops {
					ids[op.MessageID] = true
				}
				for _, m := range tx.InDoubt {
					ids[m.ID()] = true
				}
			}
			type found struct {
				paths []string
				held  *codec.Location
				err   bool
			}
			before := map[string]found{}
			for id := range ids {
				paths, held, err := fresh.findMessage(id, FindOptions{})
				before[id] = found{paths, held, err != nil}
			}
			n := 0
			for id := range ids {
				want, wantHeld, wantErr := s.findMessageWalk(id, FindOptions{})
				assert.Equal(t, found{want, wantHeld, wantErr != nil}, before[id], "%q before the transactions are made", id)
				for _, scan := range []bool{false, true} {
					if scan && n%7 != 0 {
						continue // the scan reads the journal: a sample
					}
					want, wantHeld, wantErr := s.findMessageWalk(id, FindOptions{Scan: scan})
					got, gotHeld, gotErr := s.findMessage(id, FindOptions{Scan: scan})
					require.Equal(t, wantErr == nil, gotErr == nil, "%q: %v / %v", id, wantErr, gotErr)
					assert.Equal(t, want, got, "%q scan %v", id, scan)
					assert.Equal(t, wantHeld, gotHeld, "%q", id)
				}
				wl, wok := s.heldAtWalk(id)
				gl, gok := s.heldAt(id)
				assert.Equal(t, wok, gok, id)
				assert.Equal(t, wl, gl, id)
				n++
			}
			checked += n
		})
	}
	t.Logf("%d ids", checked)
}

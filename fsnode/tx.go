package fsnode

import (
	"fmt"
	"sort"
	"sync"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// txNames names the snapshot's transactions; built the first time
// by-transaction is used (guarded by once).
type txNames struct {
	once  sync.Once
	names *nameIndex
}

func (s *Snapshot) txIndex() *nameIndex {
	s.tn.once.Do(func() {
		txs := s.graph.Transactions()
		s.tn.names = newNameIndex(len(txs), func(i int) string { return txs[i].ID })
	})
	return s.tn.names
}

func txIno(k inoKind, t *refgraph.Transaction) uint64 {
	if len(t.Commands) == 0 {
		return inoPath(nameByTransaction, t.ID, string(rune('0'+k)))
	}
	return inoLoc(k, t.Commands[0])
}

// by-transaction: one directory per transaction, named by its escaped id.
type txsTable struct {
	s     *Snapshot
	names *nameIndex
	txs   []*refgraph.Transaction
}

func (t txsTable) len() int { return t.names.len() }

func (t txsTable) at(k int) entry {
	i, name := t.names.entry(k)
	tx := t.txs[i]
	return dirOf(name, txIno(kindTxDir, tx), func() (dirTable, error) { return t.s.transactionTable(tx) })
}

func (t txsTable) find(name string) (int, bool) { return t.names.find(name) }

// A transaction: state, info.json, in-doubt/ when prepared, and its
// commands as FILE-OFFSET-TYPE.json (file id and offset in 10 digits:
// journal order), with FILE-OFFSET-TYPE.body after each message command.
type txTable struct {
	t       *refgraph.Transaction
	members fixed
	types   []codec.EntryType // of t.Commands
	// first[k] is the position (after the members) of command k's JSON;
	// its body, if it has one, follows.
	first []int32
	n     int // entries after the members
}

const nameState = "state"

func txCommandName(loc codec.Location, typ codec.EntryType, body bool) string {
	return padInt(int64(loc.File), offsetDigits) + "-" + padInt(int64(loc.Offset), offsetDigits) + "-" + typ.String() + suffix(body)
}

// transactionTable types the commands of t (from the data files' indexes)
// and returns its directory.
func (s *Snapshot) transactionTable(t *refgraph.Transaction) (*txTable, error) {
	x := &txTable{t: t, members: fixed{
		textOf(nameState, txIno(kindTxState, t), func() ([]byte, error) { return []byte(string(t.State) + "\n"), nil }),
		textOf(nameInfo, txIno(kindTxInfo, t), func() ([]byte, error) { return s.renderTxInfo(t) }),
	}}
	if t.State == refgraph.Prepared {
		x.members = append(x.members, dirOf(nameInDoubt, txIno(kindTxInDoubt, t), func() (dirTable, error) { return messagesOf(t.InDoubt), nil }))
	}
	x.types = make([]codec.EntryType, len(t.Commands))
	x.first = make([]int32, len(t.Commands))
	for k, loc := range t.Commands {
		typ, err := s.typeAt(loc)
		if err != nil {
			return nil, fmt.Errorf("transaction %s: %w", t.ID, err)
		}
		x.types[k], x.first[k] = typ, int32(x.n)
		x.n++
		if hasBody(typ) {
			x.n++
		}
	}
	return x, nil
}

func (x *txTable) len() int { return len(x.members) + x.n }

func (x *txTable) at(i int) entry {
	if i < len(x.members) {
		return x.members[i]
	}
	j := int32(i - len(x.members))
	k := sort.Search(len(x.first), func(k int) bool { return x.first[k] > j }) - 1
	loc, typ, body := x.t.Commands[k], x.types[k], j != x.first[k]
	return commandOf(txCommandName(loc, typ, body), loc, body)
}

func (x *txTable) find(name string) (int, bool) {
	if i, ok := x.members.find(name); ok {
		return i, true
	}
	const w = offsetDigits
	if len(name) < 2*w+2 || name[w] != '-' {
		return 0, false
	}
	file, ok := parseDigits(name[:w])
	if !ok || file > 1<<31-1 {
		return 0, false
	}
	off, _, body, ok := parseCommandName(name[w+1:])
	if !ok {
		return 0, false
	}
	// Commands are in journal order.
	want, cmds := codec.Location{File: int32(file), Offset: off}, x.t.Commands
	k := sort.Search(len(cmds), func(k int) bool { return !cmds[k].Less(want) })
	if k == len(cmds) || cmds[k].File != want.File || cmds[k].Offset != want.Offset || body && !hasBody(x.types[k]) {
		return 0, false
	}
	i := len(x.members) + int(x.first[k])
	if body {
		i++
	}
	return i, true
}

// typeAt returns the type of the command at loc.
func (s *Snapshot) typeAt(loc codec.Location) (codec.EntryType, error) {
	_, e, err := s.command(loc, false)
	return e.typ, err
}

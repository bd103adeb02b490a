package fsnode

import (
	"context"
	"sort"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
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
type byTransactionDir struct{ dirNode }

var _ fs.NodeReaddirer = (*byTransactionDir)(nil)

func (d *byTransactionDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	x, txs := d.snap.txIndex(), d.snap.graph.Transactions()
	return &listStream{n: x.len(), at: func(k int) fuse.DirEntry {
		i, name := x.entry(k)
		return fuse.DirEntry{Name: name, Mode: syscall.S_IFDIR, Ino: txIno(kindTxDir, txs[i])}
	}}, 0
}

var _ fs.NodeLookuper = (*byTransactionDir)(nil)

func (d *byTransactionDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	i, ok := d.snap.txIndex().lookup(name)
	if !ok {
		return nil, noEntry()
	}
	t := d.snap.graph.Transactions()[i]
	return newDir(ctx, d.EmbeddedInode(), name, d.snap, &transactionDir{dirNode: dirNode{snap: d.snap}, t: t}, txIno(kindTxDir, t), out), 0
}

// A transaction: state, info.json, and its commands as
// FILE-OFFSET-TYPE.json (file id and offset in 10 digits: journal order),
// with FILE-OFFSET-TYPE.body next to each message command.
type transactionDir struct {
	dirNode
	t *refgraph.Transaction
}

const nameState = "state"

func txCommandName(loc codec.Location, typ codec.EntryType, body bool) string {
	return padInt(int64(loc.File), offsetDigits) + "-" + padInt(int64(loc.Offset), offsetDigits) + "-" + typ.String() + suffix(body)
}

var _ fs.NodeReaddirer = (*transactionDir)(nil)

func (d *transactionDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	ms := []member{{nameState, false, txIno(kindTxState, d.t)}, {nameInfo, false, txIno(kindTxInfo, d.t)}}
	if d.t.State == refgraph.Prepared {
		ms = append(ms, member{nameInDoubt, true, txIno(kindTxInDoubt, d.t)})
	}
	// The command types come from the files' indexes; build them now so
	// that an error is reported here rather than as a short listing.
	for _, loc := range d.t.Commands {
		typ, err := d.snap.typeAt(loc)
		if err != nil {
			return nil, d.snap.errno("list transaction "+d.t.ID, err)
		}
		ms = append(ms, member{txCommandName(loc, typ, false), false, inoLoc(kindCommand, loc)})
		if hasBody(typ) {
			ms = append(ms, member{txCommandName(loc, typ, true), false, inoLoc(kindBody, loc)})
		}
	}
	return membersStream(ms), 0
}

// typeAt returns the type of the command at loc.
func (s *Snapshot) typeAt(loc codec.Location) (codec.EntryType, error) {
	f := s.file(loc.File)
	if f == nil {
		return 0, &codec.CorruptionError{File: codec.DataFileName(loc.File), FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrMissingFile}
	}
	e, found, err := f.find(loc.Offset)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, &codec.CorruptionError{File: f.info.Path, FileID: loc.File, Offset: int64(loc.Offset), Err: errChanged, Detail: "no command at this offset"}
	}
	return e.typ, nil
}

var _ fs.NodeLookuper = (*transactionDir)(nil)

func (d *transactionDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	s, t, p := d.snap, d.t, d.EmbeddedInode()
	switch name {
	case nameState:
		return newTextFile(ctx, p, name, s, t.ID+"/"+name, txIno(kindTxState, t), func() ([]byte, error) { return []byte(string(t.State) + "\n"), nil }, out)
	case nameInfo:
		return newTextFile(ctx, p, name, s, t.ID+"/"+name, txIno(kindTxInfo, t), func() ([]byte, error) { return s.renderTxInfo(t) }, out)
	case nameInDoubt:
		if t.State == refgraph.Prepared {
			return newDir(ctx, p, name, s, messageList(s, t.ID+"/"+name, t.InDoubt), txIno(kindTxInDoubt, t), out), 0
		}
		return nil, noEntry()
	}
	// FILE-OFFSET-TYPE.json: find the command among the transaction's.
	const w = offsetDigits
	if len(name) < 2*w+2 || name[w] != '-' {
		return nil, noEntry()
	}
	file, ok := parseDigits(name[:w])
	if !ok {
		return nil, noEntry()
	}
	off, typ, body, ok := parseCommandName(name[w+1:])
	if !ok {
		return nil, noEntry()
	}
	want := codec.Location{File: int32(file), Offset: off}
	if file > 1<<31-1 || txCommandName(want, typ, body) != name {
		return nil, noEntry()
	}
	// Commands are in journal order.
	i := sort.Search(len(t.Commands), func(i int) bool { return !t.Commands[i].Less(want) })
	if i == len(t.Commands) || t.Commands[i].File != want.File || t.Commands[i].Offset != want.Offset {
		return nil, noEntry()
	}
	loc := t.Commands[i]
	if got, err := s.typeAt(loc); err != nil || got != typ {
		return nil, noEntry()
	}
	return s.commandAt(ctx, p, name, loc, body, t.ID+"/"+name, out)
}

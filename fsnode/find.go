package fsnode

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/deliver"
	"github.com/kahafs/kahafs/refgraph"
)

// ErrNoMessage: no path of the tree shows a message with the id asked for.
var ErrNoMessage = errors.New("message not found")

// FindOptions tune FindMessage.
type FindOptions struct {
	// Scan reads every command of the journal (not only what the replay
	// graph keeps), to find every command that names the message: acks
	// of messages still held, updates, and messages no longer held at
	// all. It reads every data file, as a first mount does.
	Scan bool
}

// FindMessage returns every path of the tree that shows the message with
// the given id, in tree order:
//
//   - by-file/db-N.log/OFFSET-TYPE.json (and .body) of the commands that
//     name it: the ADD or latest UPDATE of a message the store holds, the
//     adds and acks of transactions in progress (prepared or in flight),
//     and with Scan every ADD, UPDATE and REMOVE (ack) in the journal;
//   - by-destination/…/pending/N-ID.json, in-doubt/, and the pending/ and
//     in-doubt/ of topic subscriptions: where the message is listed;
//   - by-transaction/ID/… of those commands, and the in-doubt/ of prepared
//     transactions that ack it.
//
// No file is rendered: the destinations' message lists are searched
// (no more than the tree lists: a subscription with a selector is
// evaluated as its pending/ is), and the transactions through their
// command locations. ErrNoMessage when nothing shows it.
func (s *Snapshot) FindMessage(id string, opts FindOptions) ([]string, error) {
	paths, _, err := s.findMessage(id, opts)
	return paths, err
}

// findMessage is FindMessage, and the record of the message as a pending/
// or in-doubt/ entry shows it (nil if none does).
func (s *Snapshot) findMessage(id string, opts FindOptions) ([]string, *codec.Location, error) {
	if s.layout != nil {
		paths, _, err := s.layoutFindMessage(id, opts)
		return paths, nil, err
	}
	// The commands that name the message, and their types; full: their
	// locations with sizes.
	cmds := map[codec.Location]codec.EntryType{}
	var full []codec.Location
	dests, held := s.listedPaths(id, s.messageIndex().Lookup(id), cmds, &full)
	for _, t := range s.graph.OpenTransactions() { // the others have no Ops
		for _, op := range t.Ops {
			if op.MessageID == id {
				typ := codec.RemoveMessageCommand
				if op.Add {
					typ = codec.AddMessageCommand
				}
				cmds[locKey(op.Loc)] = typ
				full = append(full, op.Loc)
			}
		}
	}
	if opts.Scan {
		if err := s.scanMessage(id, cmds); err != nil {
			return nil, nil, err
		}
	}
	out := append(s.commandPaths(cmds), dests...)
	txs, err := s.findInTransactions(id, cmds, full, opts.Scan)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, txs...)
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%w: no path of the tree shows %s", ErrNoMessage, id)
	}
	return out, held, nil
}

// locKey is loc without its size (the graph's and the journal's
// locations of one record may differ in it).
func locKey(loc codec.Location) codec.Location {
	return codec.Location{File: loc.File, Offset: loc.Offset}
}

// messageIndex is the snapshot's index of held messages by id, made at
// the first lookup, or ahead of it on a mount (indexAhead).
func (s *Snapshot) messageIndex() *refgraph.IDIndex {
	s.ids.once.Do(func() {
		s.ids.x = refgraph.NewIDIndex(s.graph)
		s.ids.made.Store(true)
	})
	return s.ids.x
}

// indexAhead makes the indexes a by-message-id/ lookup uses, of a
// mounted snapshot, on a goroutine of its own, so that the first lookup
// answers in milliseconds rather than make them first: held messages by
// id (0.2 s for 812 k pending messages; 4 bytes a slot, a slot or two a
// message) and the finished transactions by id (0.1 s for 188 k; two to
// four slots of 4 bytes a transaction). The tree without FUSE (kahafs
// ls, cat, find) makes the first when it looks up, and reads the
// transactions in order.
func (s *Snapshot) indexAhead() {
	if s.layout != nil {
		for _, ls := range s.layout.stores {
			if ls.snap != nil {
				ls.snap.indexAhead()
			}
		}
		return
	}
	go func() {
		s.messageIndex()
		s.graph.IndexTransactions()
	}()
}

// listedPaths returns the paths under by-destination/ of the entries that
// list the messages refs (all with the given id), in tree order, and the
// record of the first; it adds their commands to cmds (and full, with
// sizes). A message a list does not show (a queue's message past its
// drifted count) is not counted.
func (s *Snapshot) listedPaths(id string, refs []refgraph.MessageRef, cmds map[codec.Location]codec.EntryType, full *[]codec.Location) ([]string, *codec.Location) {
	if len(refs) == 0 {
		return nil, nil
	}
	byDest := map[*refgraph.Destination][]int{}
	for _, r := range refs {
		byDest[r.Destination] = append(byDest[r.Destination], r.Index)
	}
	var out []string
	var held *codec.Location
	// list adds the entries of the messages ix of d in the list at dir,
	// at the positions pos gives.
	list := func(dir string, d *refgraph.Destination, ix []int, pos func(i int) (int, bool)) {
		type at struct{ p, i int }
		var found []at
		for _, i := range ix {
			if p, ok := pos(i); ok {
				found = append(found, at{p, i})
			}
		}
		sort.Slice(found, func(a, b int) bool { return found[a].p < found[b].p })
		for _, f := range found {
			m := &d.Messages[f.i]
			if held == nil {
				held = &m.Loc
			}
			out = append(out, path.Join(dir, pendingName(f.p, id, false)), path.Join(dir, pendingName(f.p, id, true)))
			typ := codec.AddMessageCommand
			if m.Updated {
				typ = codec.UpdateMessageCommand
			}
			cmds[locKey(m.Loc)] = typ
			*full = append(*full, m.Loc)
		}
	}
	for _, g := range s.destGroups() {
		for k := 0; k < g.names.len(); k++ {
			d := g.dests[g.names.order[k]]
			ix, ok := byDest[d]
			if !ok {
				continue
			}
			_, name := g.names.entry(k)
			dir := path.Join(nameByDestination, g.typ.Scheme(), name)
			if !d.IsTopic() {
				list(path.Join(dir, namePending), d, ix, d.PendingIndex)
				list(path.Join(dir, nameInDoubt), d, ix, d.InDoubtIndex)
				continue
			}
			list(path.Join(dir, namePending), d, ix, func(i int) (int, bool) { return i, true })
			subs := d.Subscriptions
			names := newNameIndex(len(subs), func(i int) string { return subs[i].Key })
			for k := 0; k < names.len(); k++ {
				j, name := names.entry(k)
				sub := subs[j]
				sdir := path.Join(dir, nameSubscriptions, name)
				list(path.Join(sdir, namePending), d, ix, func(i int) (int, bool) { return s.deliveredIndex(sub, i) })
				list(path.Join(sdir, nameInDoubt), d, ix, sub.InDoubtIndex)
			}
		}
	}
	return out, held
}

// deliveredIndex returns the position of the topic's message
// Destination.Messages[i] in sub's pending/ (Snapshot.delivered), if it
// is there.
func (s *Snapshot) deliveredIndex(sub *refgraph.Subscription, i int) (int, bool) {
	if !sub.HasSelector && deliver.Reaches(sub) {
		return sub.PendingIndex(i)
	}
	m := &sub.Destination.Messages[i]
	for k, d := range s.delivered(sub).delivered {
		if d == m {
			return k, true
		}
	}
	return 0, false
}

// lookupDir opens the directory called name in the directory e.
func lookupDir(e entry, name string) (dirTable, bool) {
	t, err := e.sub()
	if err != nil {
		return nil, false
	}
	c, ok := lookupEntry(t, name)
	if !ok || !c.isDir() {
		return nil, false
	}
	sub, err := c.sub()
	return sub, err == nil
}

// findInTransactions returns the paths under by-transaction/ of the
// commands in cmds and of the in-doubt entries of the message. Without
// scan the transactions that hold them are found through the records
// (full: the commands of cmds with their sizes), each of which names its
// transaction, and the prepared ones; with scan (or when a record cannot
// be read) every transaction is searched.
func (s *Snapshot) findInTransactions(id string, cmds map[codec.Location]codec.EntryType, full []codec.Location, scan bool) ([]string, error) {
	var ids []string
	all := scan
	for _, loc := range full {
		if all {
			break
		}
		tx, err := s.recordTx(loc)
		if err != nil {
			all = true
		} else if tx != "" {
			ids = append(ids, tx)
		}
	}
	for _, t := range s.graph.PreparedTransactions() {
		if inDoubt(t, id) {
			ids = append(ids, t.ID)
		}
	}
	if !all && len(ids) == 0 {
		return nil, nil
	}
	if !all {
		// by id: the finished transactions a mount keeps encoded are
		// not all made (by-transaction/'s names are their ids, the k-th
		// of an id marked as nameIndex does)
		sort.Strings(ids)
		var out []string
		for _, tx := range slices.Compact(ids) {
			for dup, t := range s.graph.TransactionsWithID(tx) {
				paths, err := s.transactionPaths(t, entryName(tx, dup), id, cmds)
				if err != nil {
					return nil, err
				}
				out = append(out, paths...)
			}
		}
		return out, nil
	}
	txs := s.graph.Transactions()
	x := s.txIndex()
	var out []string
	for k := range x.len() {
		_, name := x.entry(k)
		paths, err := s.transactionPaths(txs[x.order[k]], name, id, cmds)
		if err != nil {
			return nil, err
		}
		out = append(out, paths...)
	}
	return out, nil
}

// commandPaths returns the paths under by-file/ of the commands in cmds
// (and of their bodies), in journal order.
func (s *Snapshot) commandPaths(cmds map[codec.Location]codec.EntryType) []string {
	locs := make([]codec.Location, 0, len(cmds))
	for loc := range cmds {
		locs = append(locs, loc)
	}
	sort.Slice(locs, func(i, j int) bool { return locs[i].Less(locs[j]) })
	var out []string
	for _, loc := range locs {
		f := s.file(loc.File)
		if f == nil {
			continue
		}
		e := recEntry{off: loc.Offset, typ: cmds[loc]}
		dir := path.Join(nameByFile, f.info.Name)
		out = append(out, path.Join(dir, commandName(e, false)))
		if hasBody(e.typ) {
			out = append(out, path.Join(dir, commandName(e, true)))
		}
	}
	return out
}

// transactionPaths returns the paths under by-transaction/ of transaction
// t, called name there, that show the commands in cmds or the message id
// in doubt (none when it holds neither).
func (s *Snapshot) transactionPaths(t *refgraph.Transaction, name, id string, cmds map[codec.Location]codec.EntryType) ([]string, error) {
	if !holdsCommand(t, cmds) && !inDoubt(t, id) {
		return nil, nil
	}
	dir := path.Join(nameByTransaction, name)
	tab, err := s.transactionTable(t)
	if err != nil {
		return nil, err
	}
	var out []string
	for c, loc := range t.Commands {
		if _, ok := cmds[locKey(loc)]; !ok {
			continue
		}
		i := len(tab.members) + int(tab.first[c])
		out = append(out, path.Join(dir, tab.at(i).name))
		if hasBody(tab.types[c]) {
			out = append(out, path.Join(dir, tab.at(i+1).name))
		}
	}
	if j, ok := tab.members.find(nameInDoubt); ok {
		if l, err := tab.members[j].sub(); err == nil {
			ml := l.(*messageList)
			for i := 0; i < ml.n; i++ {
				if ml.msg(i).HasID(id) {
					d := path.Join(dir, nameInDoubt)
					out = append(out, path.Join(d, ml.at(2*i).name), path.Join(d, ml.at(2*i+1).name))
				}
			}
		}
	}
	return out, nil
}

// recordTx returns the id of the transaction the record at loc belongs
// to ("": none), read from the journal.
func (s *Snapshot) recordTx(loc codec.Location) (string, error) {
	if loc.Size == 0 {
		_, e, err := s.command(loc, false)
		if err != nil {
			return "", err
		}
		loc.Size = e.size
	}
	f := s.file(loc.File)
	if f == nil {
		return "", &codec.CorruptionError{File: codec.DataFileName(loc.File), FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrMissingFile}
	}
	fd, err := f.open()
	if err != nil {
		return "", err
	}
	buf := make([]byte, loc.Size)
	n, rerr := f.readRecord(fd, buf, recEntry{off: loc.Offset, size: loc.Size})
	data, err := codec.RecordIn(f.info, loc, buf[:n], int64(loc.Offset), rerr)
	if err != nil {
		return "", err
	}
	var c codec.Command
	if err := codec.DecodeRecord(f.info.Path, codec.Record{Loc: loc, Data: data}, &c); err != nil {
		return "", err
	}
	if c.Tx.Kind == codec.NoTx {
		return "", nil
	}
	return c.Tx.String(), nil
}

func holdsCommand(t *refgraph.Transaction, cmds map[codec.Location]codec.EntryType) bool {
	if len(cmds) == 0 {
		return false
	}
	for _, loc := range t.Commands {
		if _, ok := cmds[locKey(loc)]; ok {
			return true
		}
	}
	return false
}

func inDoubt(t *refgraph.Transaction, id string) bool {
	for _, m := range t.InDoubt {
		if m.HasID(id) {
			return true
		}
	}
	return false
}

// scanMessage adds to cmds every ADD, UPDATE and REMOVE of the journal
// (up to the end the snapshot saw) that names the message id.
func (s *Snapshot) scanMessage(id string, cmds map[codec.Location]codec.EntryType) error {
	want := []byte(id)
	for _, f := range s.files {
		end := f.sum.End
		_, err := codec.ScanFile(f.info, s.opts, func(rec codec.Record, c *codec.Command) error {
			if int64(rec.Loc.Offset) >= end {
				return nil
			}
			switch c.Type {
			case codec.AddMessageCommand, codec.UpdateMessageCommand, codec.RemoveMessageCommand:
				if bytes.Equal(c.MessageID, want) {
					cmds[locKey(rec.Loc)] = c.Type
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", f.info.Name, err)
		}
	}
	return nil
}

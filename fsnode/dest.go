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

// destTypes groups the snapshot's destinations by type, each group in a
// nameIndex over the physical names. Built the first time by-destination
// is used (guarded by once).
type destTypes struct {
	once  sync.Once
	types []*destGroup // queue, topic, then any other type present, by number
}

type destGroup struct {
	typ   codec.DestType
	dests []*refgraph.Destination
	names *nameIndex
}

func (s *Snapshot) destGroups() []*destGroup {
	s.dt.once.Do(func() {
		byType := map[codec.DestType]*destGroup{
			codec.Queue: {typ: codec.Queue},
			codec.Topic: {typ: codec.Topic},
		}
		for _, d := range s.graph.Destinations() {
			g := byType[d.Type]
			if g == nil {
				g = &destGroup{typ: d.Type}
				byType[d.Type] = g
			}
			g.dests = append(g.dests, d)
		}
		for _, g := range byType {
			dests := g.dests
			g.names = newNameIndex(len(dests), func(i int) string { return dests[i].Name })
			s.dt.types = append(s.dt.types, g)
		}
		sort.Slice(s.dt.types, func(i, j int) bool { return s.dt.types[i].typ < s.dt.types[j].typ })
	})
	return s.dt.types
}

// by-destination: one directory per destination type (queue and topic
// always, temp-queue/temp-topic when the store has some).
type destGroupsTable struct {
	s  *Snapshot
	gs []*destGroup
}

func (t destGroupsTable) len() int { return len(t.gs) }

func (t destGroupsTable) at(i int) entry {
	g := t.gs[i]
	return dirOf(g.typ.Scheme(), inoPath(nameByDestination, g.typ.Scheme()), func() (dirTable, error) { return destTypeTable{t.s, g}, nil })
}

func (t destGroupsTable) find(name string) (int, bool) {
	for i, g := range t.gs {
		if g.typ.Scheme() == name {
			return i, true
		}
	}
	return 0, false
}

// by-destination/TYPE: one directory per destination, named by its
// escaped physical name.
type destTypeTable struct {
	s *Snapshot
	g *destGroup
}

func destIno(d *refgraph.Destination, parts ...string) uint64 {
	return inoPath(append([]string{nameByDestination, d.Key}, parts...)...)
}

func (t destTypeTable) len() int { return t.g.names.len() }

func (t destTypeTable) at(k int) entry {
	i, name := t.g.names.entry(k)
	d := t.g.dests[i]
	return dirOf(name, destIno(d), func() (dirTable, error) { return t.s.destinationTable(d), nil })
}

func (t destTypeTable) find(name string) (int, bool) { return t.g.names.find(name) }

const (
	nameStats         = "stats.json"
	namePending       = "pending"
	nameInDoubt       = "in-doubt"
	nameSubscriptions = "subscriptions"
)

// A destination: stats.json, pending/, and for queues in-doubt/, for
// topics subscriptions/.
func (s *Snapshot) destinationTable(d *refgraph.Destination) fixed {
	ms := fixed{
		textOf(nameStats, destIno(d, nameStats), func() ([]byte, error) { return s.renderDestStats(d) }),
		// a queue: what a restarted broker delivers, in order; a topic:
		// every message some durable subscription still needs
		listOf(namePending, destIno(d, namePending), 2*pendingLen(d), func() (dirTable, error) {
			if d.IsTopic() {
				msgs := d.Messages
				return &messageList{n: len(msgs), msg: func(i int) *refgraph.Message { return &msgs[i] }}, nil
			}
			return &messageList{n: d.NumPending(), msg: d.PendingAt}, nil
		}),
	}
	if d.IsTopic() {
		return append(ms, dirOf(nameSubscriptions, destIno(d, nameSubscriptions), func() (dirTable, error) {
			subs := d.Subscriptions
			return subscriptionsTable{s: s, d: d, names: newNameIndex(len(subs), func(i int) string { return subs[i].Key })}, nil
		}))
	}
	return append(ms, dirOf(nameInDoubt, destIno(d, nameInDoubt), func() (dirTable, error) { return messagesOf(d.InDoubt()), nil }))
}

// pendingLen is how many messages d's pending/ lists.
func pendingLen(d *refgraph.Destination) int {
	if d.IsTopic() {
		return len(d.Messages)
	}
	return d.NumPending()
}

// subscriptions/: one directory per durable subscription of a topic, named
// by its escaped key (clientId:subscriptionName).
type subscriptionsTable struct {
	s     *Snapshot
	d     *refgraph.Destination
	names *nameIndex
}

func subIno(sub *refgraph.Subscription, parts ...string) uint64 {
	return destIno(sub.Destination, append([]string{nameSubscriptions, sub.Key}, parts...)...)
}

func (t subscriptionsTable) len() int { return t.names.len() }

func (t subscriptionsTable) at(k int) entry {
	i, name := t.names.entry(k)
	sub := t.d.Subscriptions[i]
	return dirOf(name, subIno(sub), func() (dirTable, error) { return t.s.subscriptionTable(sub), nil })
}

func (t subscriptionsTable) find(name string) (int, bool) { return t.names.find(name) }

// A durable subscription: info.json, pending/ (what the broker delivers:
// the store's candidates its selector matches) and in-doubt/.
func (s *Snapshot) subscriptionTable(sub *refgraph.Subscription) fixed {
	return fixed{
		textOf(nameInfo, subIno(sub, nameInfo), func() ([]byte, error) { return s.renderSubInfo(sub) }),
		// (sub.NumPending: the count before a selector, a bound)
		listOf(namePending, subIno(sub, namePending), 2*sub.NumPending(), func() (dirTable, error) { return messagesOf(s.delivered(sub).delivered), nil }),
		dirOf(nameInDoubt, subIno(sub, nameInDoubt), func() (dirTable, error) { return messagesOf(sub.InDoubt()), nil }),
	}
}

// commandAt adds the node of the command entry e (cmdEntry) in parent.
func (s *Snapshot) commandAt(ctx context.Context, parent *fs.Inode, e entry, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f, re, err := s.command(e.loc, e.body)
	if err != nil {
		return nil, s.errno("lookup "+parent.Path(nil)+"/"+e.name, err)
	}
	return newCommandFile(ctx, parent, e.name, f, re, e.body, e.ino, out)
}

// command returns the data file and index entry of the record at loc;
// with body, only a message command (a .body) is found.
func (s *Snapshot) command(loc codec.Location, body bool) (*dataFile, recEntry, error) {
	f := s.file(loc.File)
	if f == nil {
		return nil, recEntry{}, &codec.CorruptionError{File: codec.DataFileName(loc.File), FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrMissingFile}
	}
	e, found := f.located(loc)
	var err error
	if !found {
		e, found, err = f.find(loc.Offset)
	}
	if err == nil && !found {
		err = &codec.CorruptionError{File: f.info.Path, FileID: loc.File, Offset: int64(loc.Offset), Err: errChanged, Detail: "no command at this offset"}
	}
	if err != nil {
		return nil, recEntry{}, err
	}
	if body && !hasBody(e.typ) {
		return nil, recEntry{}, errNoEntry
	}
	return f, e, nil
}

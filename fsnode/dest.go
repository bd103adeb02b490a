package fsnode

import (
	"context"
	"sort"
	"strings"
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
type byDestinationDir struct{ dirNode }

var _ fs.NodeReaddirer = (*byDestinationDir)(nil)

func (d *byDestinationDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	gs := d.snap.destGroups()
	return &listStream{n: len(gs), at: func(i int) fuse.DirEntry {
		return fuse.DirEntry{Name: gs[i].typ.Scheme(), Mode: syscall.S_IFDIR, Ino: inoPath(nameByDestination, gs[i].typ.Scheme())}
	}}, 0
}

var _ fs.NodeLookuper = (*byDestinationDir)(nil)

func (d *byDestinationDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	for _, g := range d.snap.destGroups() {
		if g.typ.Scheme() == name {
			return newDir(ctx, d.EmbeddedInode(), name, d.snap, &destTypeDir{dirNode: dirNode{snap: d.snap}, g: g}, inoPath(nameByDestination, name), out), 0
		}
	}
	return nil, noEntry()
}

// by-destination/TYPE: one directory per destination, named by its
// escaped physical name.
type destTypeDir struct {
	dirNode
	g *destGroup
}

func destIno(d *refgraph.Destination, parts ...string) uint64 {
	return inoPath(append([]string{nameByDestination, d.Key}, parts...)...)
}

var _ fs.NodeReaddirer = (*destTypeDir)(nil)

func (d *destTypeDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	g := d.g
	return &listStream{n: g.names.len(), at: func(k int) fuse.DirEntry {
		i, name := g.names.entry(k)
		return fuse.DirEntry{Name: name, Mode: syscall.S_IFDIR, Ino: destIno(g.dests[i])}
	}}, 0
}

var _ fs.NodeLookuper = (*destTypeDir)(nil)

func (d *destTypeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	i, ok := d.g.names.lookup(name)
	if !ok {
		return nil, noEntry()
	}
	dest := d.g.dests[i]
	return newDir(ctx, d.EmbeddedInode(), name, d.snap, &destinationDir{dirNode: dirNode{snap: d.snap}, d: dest}, destIno(dest), out), 0
}

// A destination: stats.json, pending/, and for topics subscriptions/.
type destinationDir struct {
	dirNode
	d *refgraph.Destination
}

const (
	nameStats         = "stats.json"
	namePending       = "pending"
	nameInDoubt       = "in-doubt"
	nameSubscriptions = "subscriptions"
)

func (d *destinationDir) members() []member {
	ms := []member{
		{nameStats, false, destIno(d.d, nameStats)},
		{namePending, true, destIno(d.d, namePending)},
	}
	if d.d.IsTopic() {
		ms = append(ms, member{nameSubscriptions, true, destIno(d.d, nameSubscriptions)})
	} else {
		ms = append(ms, member{nameInDoubt, true, destIno(d.d, nameInDoubt)})
	}
	return ms
}

var _ fs.NodeReaddirer = (*destinationDir)(nil)

func (d *destinationDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	return membersStream(d.members()), 0
}

var _ fs.NodeLookuper = (*destinationDir)(nil)

func (d *destinationDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	s, dest, p := d.snap, d.d, d.EmbeddedInode()
	switch name {
	case nameStats:
		return newTextFile(ctx, p, name, s, dest.String()+"/"+name, destIno(dest, name), func() ([]byte, error) { return s.renderDestStats(dest) }, out)
	case namePending:
		// a queue: what a restarted broker delivers, in order; a topic:
		// every message some durable subscription still needs
		list := &pendingDir{dirNode: dirNode{snap: d.snap}, what: dest.String(), n: dest.NumPending(), at: dest.PendingAt}
		if dest.IsTopic() {
			msgs := dest.Messages
			list.n, list.at = len(msgs), func(i int) *refgraph.Message { return &msgs[i] }
		}
		return newDir(ctx, p, name, s, list, destIno(dest, name), out), 0
	case nameInDoubt:
		if !dest.IsTopic() {
			return newDir(ctx, p, name, s, messageList(s, dest.String()+"/"+name, dest.InDoubt()), destIno(dest, name), out), 0
		}
	case nameSubscriptions:
		if dest.IsTopic() {
			subs := dest.Subscriptions
			sd := &subscriptionsDir{dirNode: dirNode{snap: d.snap}, d: dest, names: newNameIndex(len(subs), func(i int) string { return subs[i].Key })}
			return newDir(ctx, p, name, s, sd, destIno(dest, name), out), 0
		}
	}
	return nil, noEntry()
}

// messageList is a pendingDir over a list of messages.
func messageList(s *Snapshot, what string, ms []*refgraph.Message) *pendingDir {
	return &pendingDir{dirNode: dirNode{snap: s}, what: what, n: len(ms), at: func(i int) *refgraph.Message { return ms[i] }}
}

// pending/: two files per message in delivery order, named by its
// position (from 1, 10 digits) and its escaped message id: N-ID.json is the
// message's command (ADD or latest UPDATE), N-ID.body its body, the same
// inodes as under by-file/.
type pendingDir struct {
	dirNode
	what string // destination or subscription, for error messages
	n    int
	at   func(i int) *refgraph.Message
}

const positionDigits = 10

// pendingName names the command (or with body the body) of the i-th
// (from 0) pending message.
func pendingName(i int, id string, body bool) string {
	return padInt(int64(i+1), positionDigits) + "-" + escapeName(id, MaxNameLen-positionDigits-1-len(suffixJSON)) + suffix(body)
}

var _ fs.NodeReaddirer = (*pendingDir)(nil)

// Readdir lists message i's command at 2i and its body at 2i+1.
func (d *pendingDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	return &listStream{n: 2 * d.n, at: func(i int) fuse.DirEntry {
		m, body := d.at(i/2), i%2 == 1
		ino := inoLoc(kindCommand, m.Loc)
		if body {
			ino = inoLoc(kindBody, m.Loc)
		}
		return fuse.DirEntry{Name: pendingName(i/2, m.ID, body), Mode: syscall.S_IFREG, Ino: ino}
	}}, 0
}

var _ fs.NodeLookuper = (*pendingDir)(nil)

func (d *pendingDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if len(name) <= positionDigits || name[positionDigits] != '-' {
		return nil, noEntry()
	}
	pos, ok := parseDigits(name[:positionDigits])
	if !ok || pos < 1 || pos > int64(d.n) {
		return nil, noEntry()
	}
	m := d.at(int(pos - 1))
	body := strings.HasSuffix(name, suffixBody)
	if pendingName(int(pos-1), m.ID, body) != name {
		return nil, noEntry()
	}
	return d.snap.commandAt(ctx, d.EmbeddedInode(), name, m.Loc, body, d.what+"/"+name, out)
}

// commandAt adds the command file of the record at loc (with body, the
// body of its message), called entry in parent.
func (s *Snapshot) commandAt(ctx context.Context, parent *fs.Inode, entry string, loc codec.Location, body bool, what string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	f := s.file(loc.File)
	if f == nil {
		return nil, s.errno("lookup "+what, &codec.CorruptionError{File: codec.DataFileName(loc.File), FileID: loc.File, Offset: int64(loc.Offset), Err: codec.ErrMissingFile})
	}
	e, found, err := f.find(loc.Offset)
	if err == nil && !found {
		err = &codec.CorruptionError{File: f.info.Path, FileID: loc.File, Offset: int64(loc.Offset), Err: errChanged, Detail: "no command at this offset"}
	}
	if err != nil {
		return nil, s.errno("lookup "+what, err)
	}
	if body && !hasBody(e.typ) {
		return nil, noEntry()
	}
	return newCommandFile(ctx, parent, entry, f, e, body, out)
}

// subscriptions/: one directory per durable subscription of a topic, named
// by its escaped key (clientId:subscriptionName).
type subscriptionsDir struct {
	dirNode
	d     *refgraph.Destination
	names *nameIndex
}

func subIno(sub *refgraph.Subscription, parts ...string) uint64 {
	return destIno(sub.Destination, append([]string{nameSubscriptions, sub.Key}, parts...)...)
}

var _ fs.NodeReaddirer = (*subscriptionsDir)(nil)

func (d *subscriptionsDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	return &listStream{n: d.names.len(), at: func(k int) fuse.DirEntry {
		i, name := d.names.entry(k)
		return fuse.DirEntry{Name: name, Mode: syscall.S_IFDIR, Ino: subIno(d.d.Subscriptions[i])}
	}}, 0
}

var _ fs.NodeLookuper = (*subscriptionsDir)(nil)

func (d *subscriptionsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	i, ok := d.names.lookup(name)
	if !ok {
		return nil, noEntry()
	}
	sub := d.d.Subscriptions[i]
	return newDir(ctx, d.EmbeddedInode(), name, d.snap, &subscriptionDir{dirNode: dirNode{snap: d.snap}, sub: sub}, subIno(sub), out), 0
}

// A durable subscription: info.json and pending/.
type subscriptionDir struct {
	dirNode
	sub *refgraph.Subscription
}

var _ fs.NodeReaddirer = (*subscriptionDir)(nil)

func (d *subscriptionDir) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	return membersStream([]member{
		{nameInfo, false, subIno(d.sub, nameInfo)},
		{namePending, true, subIno(d.sub, namePending)},
		{nameInDoubt, true, subIno(d.sub, nameInDoubt)},
	}), 0
}

var _ fs.NodeLookuper = (*subscriptionDir)(nil)

func (d *subscriptionDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	s, sub, p := d.snap, d.sub, d.EmbeddedInode()
	what := sub.Destination.String() + "/" + sub.Key
	switch name {
	case nameInfo:
		return newTextFile(ctx, p, name, s, what+"/"+name, subIno(sub, name), func() ([]byte, error) { return s.renderSubInfo(sub) }, out)
	case namePending:
		// what the broker delivers: the store's candidates its selector matches
		return newDir(ctx, p, name, s, messageList(s, what+"/"+name, s.delivered(sub).delivered), subIno(sub, name), out), 0
	case nameInDoubt:
		return newDir(ctx, p, name, s, messageList(s, what+"/"+name, sub.InDoubt()), subIno(sub, name), out), 0
	}
	return nil, noEntry()
}

package fsnode

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/kahafs/kahafs/codec"
)

// The ack chain in the tree (refgraph.File.AcksFor, AckedBy):
//
//	by-file/db-N.log/acks-for/db-M.log -> ../../db-M.log
//	    acks in db-N.log are for messages in db-M.log: the broker keeps
//	    db-N.log as long as it keeps db-M.log
//	by-file/db-M.log/acked-by/db-N.log -> ../../db-N.log
//	    the reverse: the files holding acks for db-M.log's messages
//
// Each is a symbolic link to the other file's directory (linkEntry), so
// that `ls -l` shows the edge and `cd acks-for/db-M.log` follows it.

const (
	nameAcksFor = "acks-for"
	nameAckedBy = "acked-by"
)

// ackDirs are the acks-for/ and acked-by/ entries of the data file f.
func (s *Snapshot) ackDirs(f *dataFile) []entry {
	id, name := f.info.ID, f.info.Name
	links := func(dir string, ids func() []int32) func() (dirTable, error) {
		return func() (dirTable, error) {
			var t fixed
			for _, o := range ids() {
				on := codec.DataFileName(o)
				t = append(t, linkOf(on, inoPath(nameByFile, name, dir, on), "../../"+on))
			}
			return t, nil
		}
	}
	file := func() ([]int32, []int32) {
		if gf, ok := s.graph.File(id); ok {
			return gf.AcksFor, gf.AckedBy
		}
		return nil, nil
	}
	return []entry{
		dirOf(nameAcksFor, inoAt(kindDataMember, id, memberAcksFor), links(nameAcksFor, func() []int32 { a, _ := file(); return a })),
		dirOf(nameAckedBy, inoAt(kindDataMember, id, memberAckedBy), links(nameAckedBy, func() []int32 { _, b := file(); return b })),
	}
}

// linkOf is the entry of a symbolic link called name to target.
func linkOf(name string, ino uint64, target string) entry {
	return entry{name: name, ino: ino, kind: linkEntry, link: target}
}

// linkMode is a symbolic link's mode: its permission bits are not used.
const linkMode = syscall.S_IFLNK | 0o777

// linkNode is a symbolic link of the tree.
type linkNode struct {
	roNode
	snap   *Snapshot
	target string
}

// newLinkNode adds the linkNode called entry in parent.
func newLinkNode(ctx context.Context, parent *fs.Inode, entry string, s *Snapshot, ino uint64, target string, out *fuse.EntryOut) *fs.Inode {
	n := &linkNode{snap: s, target: target}
	s.attr(&out.Attr, linkMode, int64(len(target)))
	return s.newInode(ctx, parent, entry, n, fs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino, Gen: s.Gen})
}

var _ fs.NodeGetattrer = (*linkNode)(nil)

func (n *linkNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.snap.attr(&out.Attr, linkMode, int64(len(n.target)))
	return 0
}

var _ fs.NodeReadlinker = (*linkNode)(nil)

func (n *linkNode) Readlink(context.Context) ([]byte, syscall.Errno) {
	return []byte(n.target), 0
}

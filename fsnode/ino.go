package fsnode

import (
	"hash/fnv"

	"github.com/kahafs/kahafs/codec"
)

// Inode numbers are derived from what a node shows, never allocated, so
// that they are the same every time a node is looked up, in every mount of
// the same store, and across refreshes (a refresh changes the generation,
// not the number):
//
//	bit 63..59  kind
//	bit 58..31  data file id     (location kinds)
//	bit 30..0   record offset    (location kinds), or a member number
//
// A command's file has the number of its journal location, so the same
// command listed in by-file/, in a pending/ directory and in a
// transaction has one inode number under several names (its link count
// stays 1: see attr); so has the .body file of a message, in a kind of its
// own. Nodes without
// a location (destinations, subscriptions) hash their tree path into the
// last kind's 59 bits. Numbers 0 and 1 (root) are never produced.
type inoKind uint64

const (
	kindStatic     inoKind = iota // fixed top-level nodes, by number
	kindCommand                   // a command file: file id + offset
	kindDataDir                   // by-file/db-N.log
	kindDataMember                // by-file/db-N.log/{holders,...}: file id + member
	kindTxDir                     // by-transaction/ID: first command's location
	kindTxState                   // by-transaction/ID/state
	kindTxInfo                    // by-transaction/ID/info.json
	kindTxInDoubt                 // by-transaction/ID/in-doubt
	kindBody                      // a message body (.body): file id + offset of its command
	kindHashed     inoKind = 31   // everything else: hash of the tree path
)

const (
	kindShift = 59
	fileShift = 31
	maxFileID = 1<<(kindShift-fileShift) - 1
	maxLow    = 1<<fileShift - 1
)

// Fixed numbers of the static nodes (kindStatic).
const (
	inoRoot uint64 = 1 + iota // FUSE's root id
	inoReadme
	inoSummary
	inoPinned
	inoFree
	inoByFile
	inoByDestination
	inoByTransaction
	inoDestTypeBase      // + codec.DestType
	inoControl           = inoDestTypeBase + 16
	inoByMessageID       = inoControl + 1
	inoByMessageIDReadme = inoControl + 2
)

// Members of a data file directory (kindDataMember).
const (
	memberHolders uint64 = 1 + iota
	memberHoldersJSON
	memberInfo
	memberAcksFor
	memberAckedBy
)

// ino is the inode number the snapshot's tree gives a node its tables
// number n: n itself, but in a store of a layout of several (storeNo > 0),
// where every store's tables number their nodes alike, n made the store's
// own: a location kind keeps its order, with the store's number in the
// top 8 bits of the file id (ids below 2^20), anything else is hashed with
// the store's number.
func (s *Snapshot) ino(n uint64) uint64 {
	if s == nil || s.storeNo == 0 {
		return n
	}
	const storeShift = 20
	k := inoKind(n >> kindShift)
	file := n >> fileShift & maxFileID
	if k >= kindCommand && k <= kindBody && file < 1<<storeShift && s.storeNo < 1<<(kindShift-fileShift-storeShift) {
		return uint64(k)<<kindShift | (s.storeNo<<storeShift|file)<<fileShift | n&maxLow
	}
	return inoHash(kindHashed, s.storeNo, n)
}

// inoAt numbers a node of a location kind; file ids beyond 2^28 (never seen
// in practice) fall back to a hash.
func inoAt(k inoKind, file int32, low uint64) uint64 {
	if file < 0 || file > maxFileID || low > maxLow {
		return inoHash(k, uint64(file), low)
	}
	return uint64(k)<<kindShift | uint64(file)<<fileShift | low
}

// inoLoc numbers a node tied to a journal location.
func inoLoc(k inoKind, loc codec.Location) uint64 {
	return inoAt(k, loc.File, uint64(uint32(loc.Offset)))
}

// inoPath numbers a node by its path in the tree.
func inoPath(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return uint64(kindHashed)<<kindShift | h.Sum64()&(1<<kindShift-1)
}

func inoHash(k inoKind, a, b uint64) uint64 {
	h := fnv.New64a()
	var buf [17]byte
	buf[0] = byte(k)
	for i := 0; i < 8; i++ {
		buf[1+i] = byte(a >> (8 * i))
		buf[9+i] = byte(b >> (8 * i))
	}
	h.Write(buf[:])
	return uint64(kindHashed)<<kindShift | h.Sum64()&(1<<kindShift-1)
}

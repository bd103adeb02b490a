package compact

import (
	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/kahafs/kahafs/store"
)

// analyse replays the store in dir as a broker restarted on it would
// (store.Open: an unreadable index is ignored, as the broker rebuilds it
// from the journal), through the analysis cache when one is given, with
// the journalMaxFileLength given (> 0) or read off the store the way
// every command reads it. progress, when set, is told the journal bytes
// read.
//
// The cache trusts a data file only when its device, inode, size, mtime
// and ctime are the ones recorded (and, for the last one, its bytes up to
// the recorded end), and it is consulted under the store's lock, so a
// stale cache cannot drive a compaction; the verification replays the new
// journal in full all the same.
func analyse(dir string, given int64, cache *replaycache.Options, progress func(done, total int64)) (*codec.Store, *refgraph.Graph, Analysis, replaycache.MaxFileLength, error) {
	l, err := store.Locate(dir)
	if err == nil {
		err = l.SingleError("compaction")
	}
	var a *store.Analysis
	if err == nil {
		a, err = store.Analyse(l, store.Options{MaxFileLength: given, Cache: cache, Progress: progress})
	}
	if err != nil {
		return nil, nil, Analysis{}, replaycache.MaxFileLength{}, err
	}
	return a.Journal(), a.Graph, Analysis{Cache: string(a.Cache), Reason: a.CacheReason, BytesRead: a.BytesRead}, a.MaxFileLength, nil
}

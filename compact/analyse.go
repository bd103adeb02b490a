package compact

import (
	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
)

// analyse replays the store in dir as a broker restarted on it would,
// through the analysis cache when one is given (see loadCached), with the
// journalMaxFileLength given (> 0) or read off the store the way every
// command reads it (replaycache.LoadMaxFileLength). progress, when set,
// is told the journal bytes read.
func analyse(dir string, given int64, cache *replaycache.Options, progress func(done, total int64)) (*codec.Store, *refgraph.Graph, Analysis, replaycache.MaxFileLength, error) {
	st, err := codec.OpenStore(dir)
	if err != nil {
		return nil, nil, Analysis{}, replaycache.MaxFileLength{}, err
	}
	opts := refgraph.StoreOptions(st, true, nil)
	co := replaycache.Options{Disable: true}
	if cache != nil {
		co = *cache
	}
	if progress != nil {
		co.Progress = progress
	}
	res, mfl, err := replaycache.LoadMaxFileLength(st, opts, given, codec.ReadOptions{}, co)
	if err != nil {
		return nil, nil, Analysis{}, mfl, err
	}
	a := Analysis{Cache: string(res.Outcome), Reason: res.Reason, BytesRead: res.BytesRead}
	if cache == nil {
		a.Reason = ""
	}
	return st, res.Graph, a, mfl, nil
}

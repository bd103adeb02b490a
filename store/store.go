// Package store is the one way into a store: Locate finds what a path
// holds (a KahaDB store, or a broker's data directory that has one
// below it: codec.OpenStore names it), and Open analyses it, replaying its
// journal as ActiveMQ 5.17 would (package refgraph) through the analysis
// cache (package replaycache), with the journalMaxFileLength settled the
// one way every command settles it (replaycache.LoadMaxFileLength).
//
// The defaults of an analysis live here and nowhere else: what a zero
// Options means (the length read off the store, the index used when it is
// readable, the cache off). Every command of kahafs, the mount (fsnode),
// the compaction (compact), the differential test and the benchmark open
// their stores through this package.
//
// A layout can have children (mKahaDB keeps one KahaDB store per
// destination filter, and a broker's data directory holds its stores and
// its job scheduler's): Layout and Analysis have a Children slice for them
// (layout.go). A single store (KindKahaDB) has none.
package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/kahafs/kahafs/scheduler"
)

// Kind is what kind of store a Layout is.
type Kind int

// Kinds of store.
const (
	// KindKahaDB: one KahaDB store, its db-N.log data files and db.data
	// index in one directory.
	KindKahaDB Kind = iota + 1
	// KindScheduler: a broker's job scheduler store (JobSchedulerStoreImpl,
	// schedulerSupport="true"): db-N.log data files in the KahaDB journal
	// format with the scheduler's own commands, and its own index
	// (scheduleDB.data) and cleanup rules. Analyse refuses it
	// (ErrSchedulerStore): refgraph does not model it.
	KindScheduler
	// KindMKahaDB: an mKahaDB root; Children are its stores.
	KindMKahaDB
	// KindDataDir: a broker's data directory; Children are the stores
	// below it.
	KindDataDir
	// KindTxStore: an mKahaDB's txStore, the journal of the transactions
	// that span stores (read as a KahaDB journal).
	KindTxStore
	// KindUnmodelled: a store kahafs does not model (Layout.Unmodelled says
	// what it is); never analysed, never given a cleanup prediction.
	KindUnmodelled
)

func (k Kind) String() string {
	switch k {
	case KindKahaDB:
		return "kahadb"
	case KindScheduler:
		return "scheduler"
	case KindMKahaDB:
		return "mkahadb"
	case KindDataDir:
		return "datadir"
	case KindTxStore:
		return "txstore"
	case KindUnmodelled:
		return "unmodelled"
	}
	return "unknown"
}

// Layout is where a store's files are.
type Layout struct {
	Kind Kind
	// Journal is the store's directory and data files (KindKahaDB,
	// KindTxStore; nil for a layout of several stores).
	Journal *codec.Store
	// Path is the directory (Dir).
	Path string
	// Children are the stores this layout is made of (KindMKahaDB,
	// KindDataDir; layout.go).
	Children []*Layout
	// Name is a child's directory name as on disk, Rel its path relative
	// to the layout's root, Filter the destination filter an mKahaDB
	// store is named after, decoded (DecodeFilterName).
	Name, Rel, Filter string
	// Unmodelled says what a KindUnmodelled store is, and UnmodelledKind
	// its kind in JSON ("scheduler").
	Unmodelled, UnmodelledKind string
}

// Dir is the store's directory.
func (l *Layout) Dir() string {
	if l.Journal != nil {
		return l.Journal.Dir
	}
	return l.Path
}

// Locate lists the store at path: one KahaDB store, or a layout of several
// (an mKahaDB root, a broker's data directory: layout.go). A path that is
// neither is an error wrapping codec.ErrNotStore that names the stores
// below it.
func Locate(path string) (*Layout, error) {
	st, err := codec.OpenStore(path)
	if err != nil {
		if errors.Is(err, codec.ErrNotStore) {
			if l, lerr := locateLayout(path); lerr != nil {
				return nil, lerr
			} else if l != nil {
				return l, nil
			}
		}
		return nil, err
	}
	l := &Layout{Kind: KindKahaDB, Journal: st, Path: st.Dir}
	if _, err := os.Stat(filepath.Join(st.Dir, SchedulerIndex)); err == nil {
		l.Kind = KindScheduler
		l.Name = filepath.Base(st.Dir)
	} else if MKahaDBRoot(path) != "" {
		// A store of an mKahaDB, read alone.
		l.Name = filepath.Base(filepath.Clean(path))
		if l.Name == txStoreDirName {
			l.Kind = KindTxStore
		} else {
			l.Filter = DecodeFilterName(l.Name)
		}
	}
	return l, nil
}

// Options say how to analyse a store. The zero value analyses it as a
// broker restarted on it would, its journalMaxFileLength read off the
// store, without the cache.
type Options struct {
	// MaxFileLength is the broker's journalMaxFileLength (> 0: given, as
	// --max-file-length; the store's files are checked against it). Zero:
	// read off the store (replaycache.LoadMaxFileLength).
	MaxFileLength int64
	// Running predicts the next periodic cleanup of a broker running on
	// the store now, instead of the first cleanup of a broker started on
	// it (refgraph.Options.Running).
	Running bool
	// NoIndex ignores db.data, as a broker whose index was deleted does.
	NoIndex bool
	// SkipChecksums reads without verifying batch checksums.
	SkipChecksums bool
	// KeepCompleted bounds the finished transactions the graph lists
	// (refgraph.Options.KeepCompleted: 0 its default, < 0 all).
	KeepCompleted int
	// Cache, when set, analyses the store through the analysis cache
	// (package replaycache). Nil: the cache is off, the store read in
	// full and nothing written.
	Cache *replaycache.Options
	// Progress, when set, is called after each data file read with the
	// journal bytes read so far and in all (it overrides Cache.Progress).
	Progress func(done, total int64)
	// IndexProblem, when set, is told why an index that is there cannot
	// be used: the analysis then replays the whole journal, as a broker
	// rebuilding its index does.
	IndexProblem func(error)
}

// readOptions are the journal reading options of an analysis.
func (o Options) readOptions() codec.ReadOptions {
	return codec.ReadOptions{SkipChecksums: o.SkipChecksums}
}

// cacheOptions are the replaycache options of an analysis (Disable when
// the cache is off).
func (o Options) cacheOptions() replaycache.Options {
	co := replaycache.Options{Disable: true}
	if o.Cache != nil {
		co = *o.Cache
	}
	if o.Progress != nil {
		co.Progress = o.Progress
	}
	return co
}

// ReplayOptions are the replay options of a broker restarted on the store
// of l (its data files, and its index when readable and not
// opts.NoIndex), with opts.MaxFileLength as it is (0: refgraph's
// default). Open uses them, settling the length first; a caller that
// replays with a visitor of its own (compact's verification) starts from
// them.
func ReplayOptions(l *Layout, opts Options) refgraph.Options {
	ro := refgraph.StoreOptions(l.Journal, !opts.NoIndex, opts.IndexProblem)
	ro.MaxFileLength = opts.MaxFileLength
	ro.Running = opts.Running
	ro.KeepCompleted = opts.KeepCompleted
	return ro
}

// Analysis is what Open found in a store.
type Analysis struct {
	Layout *Layout
	// Graph is the replay: what the broker holds, and why each data file
	// is kept or deleted at its next cleanup.
	Graph *refgraph.Graph
	// Files is what reading each data file found (Layout.Journal.Files
	// order).
	Files []replaycache.FileResult
	// MaxFileLength is the journalMaxFileLength the analysis assumed, and
	// where it came from.
	MaxFileLength replaycache.MaxFileLength
	// OpenWireVersion is the OpenWire version of the store's messages
	// (the index's, also with NoIndex).
	OpenWireVersion int
	// Cache says how the analysis used the cache (replaycache.Off when
	// Options.Cache was nil); CacheReason why it was not hit;
	// CacheSaved that the cache file was (re)written.
	Cache       replaycache.Outcome
	CacheReason string
	CacheSaved  bool
	// BytesRead are the journal bytes read (0 on a cache hit).
	BytesRead int64
	// Children are the analyses of Layout.Children (a layout of several
	// stores has no Graph of its own).
	Children []*Analysis
	// Scheduler is the scheduler's own model of a layout's job scheduler
	// store (KindScheduler; Graph is nil).
	Scheduler *scheduler.Report
	// NotAnalysed says why a store was not analysed (Layout.Unmodelled):
	// Graph is nil.
	NotAnalysed string

	// cached is the replaycache result the analysis came from (its side
	// files: SaveSide).
	cached *replaycache.Result
}

// Journal is the store's directory and data files.
func (a *Analysis) Journal() *codec.Store { return a.Layout.Journal }

// AnalyseScheduler is the job scheduler store of l (KindScheduler) as
// package scheduler models it: its jobs and the files its next cleanup
// deletes. An error (a journal or index it cannot model) says that no
// prediction is made.
func AnalyseScheduler(l *Layout, opts Options) (*scheduler.Report, error) {
	if l.Journal == nil {
		return nil, fmt.Errorf("%s: job scheduler store: %s", l.Dir(), l.Unmodelled)
	}
	r, err := scheduler.Analyse(l.Journal, scheduler.Options{
		MaxFileLength: opts.MaxFileLength,
		Running:       opts.Running,
		SkipChecksums: opts.SkipChecksums,
	})
	if err != nil {
		return nil, fmt.Errorf("job scheduler store: %w; kahafs makes no cleanup prediction for it", err)
	}
	return r, nil
}

// Open locates the store at path and analyses it.
func Open(path string, opts Options) (*Analysis, error) {
	l, err := Locate(path)
	if err != nil {
		return nil, err
	}
	return Analyse(l, opts)
}

// Analyse analyses the store of l, or each store of a layout of several
// (Analysis.Children; an unmodelled one is not analysed).
func Analyse(l *Layout, opts Options) (*Analysis, error) {
	switch {
	case l.Multi():
		a := &Analysis{Layout: l}
		for _, c := range l.Children {
			ca, err := Analyse(c, opts)
			if err != nil {
				return nil, err
			}
			a.Children = append(a.Children, ca)
		}
		return a, nil
	case l.Kind == KindScheduler && l.Rel != "":
		// a layout's job scheduler store: the scheduler's own model
		// (package scheduler), or said not analysed with why
		r, err := AnalyseScheduler(l, opts)
		if err != nil {
			return &Analysis{Layout: l, NotAnalysed: "not analysed: " + err.Error()}, nil
		}
		return &Analysis{Layout: l, Scheduler: r}, nil
	case l.Kind == KindScheduler:
		// alone: refused before any replay (a cache file is not written
		// for it); holders answers it with AnalyseScheduler
		return nil, CheckModeled(l, opts.readOptions(), func(int) bool { return true })
	case l.Unmodelled != "":
		return &Analysis{Layout: l, NotAnalysed: "not analysed: " + l.Unmodelled}, nil
	}
	ro := ReplayOptions(l, opts)
	res, mfl, err := replaycache.LoadMaxFileLength(l.Journal, ro, opts.MaxFileLength, opts.readOptions(), opts.cacheOptions())
	if err != nil {
		return nil, err
	}
	// A journal holding commands refgraph does not model gets no
	// prediction (counts and damage come from the cache on a hit).
	if err := CheckModeled(l, opts.readOptions(), func(i int) bool {
		return Suspect(&res.Files[i].Counts, res.Files[i].Summary.Damage)
	}); err != nil {
		return nil, err
	}
	a := &Analysis{Layout: l, Graph: res.Graph, Files: res.Files, MaxFileLength: mfl,
		Cache: res.Outcome, CacheReason: res.Reason, CacheSaved: res.Saved, BytesRead: res.BytesRead, cached: res}
	if opts.Cache == nil {
		a.CacheReason = ""
	}
	if l.Kind == KindTxStore {
		if err := pinTxStoreOutcomes(a, opts.readOptions()); err != nil {
			return nil, err
		}
	}
	if ro.Index != nil {
		a.OpenWireVersion = ro.Index.MessageOpenWireVersion()
	} else {
		a.OpenWireVersion = kahaindex.StoreOpenWireVersion(l.Dir()) // NoIndex: the version is still the index's
	}
	return a, nil
}

// LoadSide is the side file kind (replaycache.SaveSide: an answer derived
// from an analysis, kept next to its cache file) of the store of l, a
// single store (KindKahaDB, KindTxStore), when Analyse(l, opts) would
// answer from the analysis cache unchanged: a hit (replaycache.LoadSide);
// and the journalMaxFileLength that analysis settled. Otherwise false and
// why: analyse the store, and SaveSide.
func LoadSide(l *Layout, opts Options, kind string) ([]byte, replaycache.MaxFileLength, string, bool) {
	switch {
	case opts.Cache == nil:
		return nil, replaycache.MaxFileLength{}, "cache off", false
	case l.Journal == nil || l.Multi() || l.Unmodelled != "" || (l.Kind != KindKahaDB && l.Kind != KindTxStore):
		return nil, replaycache.MaxFileLength{}, "not a KahaDB store", false
	}
	// an index that cannot be used is reported once: here when the side
	// file answers, else by the analysis that follows
	var problems []error
	o := opts
	o.IndexProblem = func(err error) { problems = append(problems, err) }
	ro := ReplayOptions(l, o)
	data, m, why, ok := replaycache.LoadSide(l.Journal, ro, opts.MaxFileLength, opts.readOptions(), opts.cacheOptions(), kind)
	if ok && opts.IndexProblem != nil {
		for _, err := range problems {
			opts.IndexProblem(err)
		}
	}
	return data, m, why, ok
}

// SaveSide keeps data, derived from the analysis a, as its side file kind
// (replaycache.SaveSide): false when a has no cache file to go with it.
func SaveSide(a *Analysis, kind string, data []byte) bool {
	return replaycache.SaveSide(a.cached, a.MaxFileLength, kind, data)
}

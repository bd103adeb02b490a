package fsnode

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/openwire"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
	"github.com/kahafs/kahafs/scheduler"
	"github.com/kahafs/kahafs/store"
)

// A layout of several stores (an mKahaDB root, a broker's data directory:
// package store) is served as one tree: at the top a README, summary.json,
// pinned and free across all stores (paths relative to the layout's
// directory), by-message-id/ looking a message up in every store, and one
// directory per store, named by its destination filter ("queue://ORDERS.>",
// escaped as every name of the tree: queue:%2F%2FORDERS.>), "catch-all",
// or its directory's name ("txStore", "kahadb"), holding that store's
// whole tree as a mount of the store alone shows it. The job scheduler's
// store is a directory with its holders and holders.json (package
// scheduler's model: its files are in pinned and free) and jobs/, one
// JSON a job; a store kahafs does
// not model (or a scheduler store it cannot) is a directory with one file,
// not-analysed, that says so: nothing is predicted of its files.
//
// Each store has a snapshot of its own (storeNo 1, 2, …: its inode
// numbers are its own, see Snapshot.ino), and the layout's snapshot holds
// them; a refresh reads every store again.
type layoutView struct {
	l      *store.Layout
	stores []layoutStore
	// txStore is the store of the mKahaDB's transaction store (nil:
	// none); spans the transactions it records, made when by-transaction/
	// is first used.
	txStore *layoutStore
	txOnce  sync.Once
	spans   []spanTx
	txNames *nameIndex
}

// spanTx is a transaction that spans stores: in each store that has it,
// and what the txStore records of it.
type spanTx struct {
	id     string
	stores []spanStore
	// txStore is what the txStore journal records: "" nothing,
	// "commit-pending" (its KAHA_PREPARE_COMMAND: the commit is decided,
	// a restarted broker completes it in every store), "completed" (its
	// KAHA_COMMIT_COMMAND), "rolled-back".
	txStore string
}

// state is the transaction's state: the stores' when they agree, else
// "mixed".
func (sp *spanTx) state() string {
	st := ""
	for _, s := range sp.stores {
		switch {
		case st == "":
			st = string(s.tx.State)
		case st != string(s.tx.State):
			return "mixed"
		}
	}
	if st == "" {
		return "unknown"
	}
	return st
}

type spanStore struct {
	ls *layoutStore
	tx *refgraph.Transaction
}

// layoutStore is one store of a layout.
type layoutStore struct {
	l     *store.Layout
	name  string    // the directory's name in the tree
	snap  *Snapshot // nil: not analysed (why), or a job scheduler store (sched)
	sched *scheduler.Report
	why   string
}

// files are the data files of the store with their verdict (pinned or
// free): its graph's, or its scheduler model's; none when not analysed.
func (ls *layoutStore) files() []layoutFile {
	var fs []layoutFile
	switch {
	case ls.snap != nil:
		for _, f := range ls.snap.graph.Files() {
			fs = append(fs, layoutFile{name: f.Name, pinned: f.Pinned})
		}
	case ls.sched != nil:
		for _, f := range ls.sched.Prediction.Files {
			fs = append(fs, layoutFile{name: f.Name, pinned: f.Pinned, size: f.Size})
		}
	}
	return fs
}

// layoutFile is a data file of a layout's store and its verdict (size:
// a scheduler store's file's length).
type layoutFile struct {
	name   string
	pinned bool
	size   int64
}

// nameNotAnalysed is the one file of an unmodelled store's directory.
const nameNotAnalysed = "not-analysed"

// loadLayout reads every store of l into a snapshot of its own, and the
// layout's snapshot that holds them.
func loadLayout(l *store.Layout, gen uint64, m *mountState, opts Options) (*Snapshot, error) {
	s := &Snapshot{Gen: gen, Read: time.Now(), m: m, layout: &layoutView{l: l}}
	s.Store = nil
	used := map[string]int{}
	for i, c := range l.Children {
		ls := layoutStore{l: c, name: EscapeName(c.Title())}
		// Two stores with one title (a filter cut to 64 characters):
		// numbered as a directory's duplicate names are.
		if n := used[ls.name]; n > 0 {
			ls.name += "%~" + strconv.Itoa(n+1)
		}
		used[ls.name]++
		switch {
		case c.Kind == store.KindScheduler && c.Unmodelled == "":
			r, err := store.AnalyseScheduler(c, opts.Options)
			if err != nil {
				ls.why = "not analysed: " + err.Error()
			} else {
				ls.sched = r
			}
		case !c.Analysable():
			ls.why = c.NotAnalysedText()
		default:
			cs, err := loadOneStore(c, gen, m, opts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Rel, err)
			}
			cs.storeNo = uint64(i + 1)
			s.commands += cs.commands
			s.bytes += cs.bytes
			s.alloc += cs.alloc
			ls.snap = cs
		}
		s.layout.stores = append(s.layout.stores, ls)
	}
	for i := range s.layout.stores {
		if ls := &s.layout.stores[i]; ls.snap != nil && ls.l.Kind == store.KindTxStore {
			s.layout.txStore = ls
		}
	}
	return s, nil
}

// storeIno numbers the directory of the i-th store of a layout.
func storeIno(i int) uint64 { return inoHash(kindStatic, uint64(i), 0) }

// layoutRootTable is the top of a layout's tree.
func (s *Snapshot) layoutRootTable() fixed {
	t := fixed{
		textOf(nameReadme, inoReadme, s.renderLayoutReadme),
		textOf(nameSummary, inoSummary, s.renderLayoutSummary),
		textOf(namePinned, inoPinned, func() ([]byte, error) { return s.renderLayoutFileList(true), nil }),
		textOf(nameFree, inoFree, func() ([]byte, error) { return s.renderLayoutFileList(false), nil }),
		s.metricsEntry(),
	}
	if s.layout.txStore != nil {
		t = append(t, dirOf(nameByTransaction, inoByTransaction, func() (dirTable, error) {
			s.layoutSpans()
			return layoutTxsTable{s}, nil
		}))
	}
	t = append(t, dirOf(nameByMessageID, inoByMessageID, func() (dirTable, error) { return layoutByMessageIDTable{s}, nil }))
	t = append(t, s.planEntries()...)
	for i, ls := range s.layout.stores {
		e := dirOf(ls.name, storeIno(i), nil)
		if r := ls.sched; r != nil {
			e.sub = func() (dirTable, error) {
				return fixed{
					textOf(nameHolders, inoHash(kindStatic, uint64(i), 2), func() ([]byte, error) {
						return []byte(strings.Join(append(r.Header(), r.Table()...), "\n") + "\n"), nil
					}),
					textOf(nameHoldersJSON, inoHash(kindStatic, uint64(i), 3), func() ([]byte, error) {
						var b bytes.Buffer
						err := r.WriteJSON(&b)
						return b.Bytes(), err
					}),
					dirOf(nameJobs, inoPath(ls.name, nameJobs), func() (dirTable, error) { return newJobsTable(ls.name, r), nil }),
				}, nil
			}
		} else if ls.snap == nil {
			why := []byte(ls.why + "\n")
			e.sub = func() (dirTable, error) {
				return fixed{textOf(nameNotAnalysed, inoHash(kindStatic, uint64(i), 1), func() ([]byte, error) { return why, nil })}, nil
			}
		} else {
			cs := ls.snap
			e.snap = cs
			e.sub = func() (dirTable, error) { return cs.rootTable(), nil }
		}
		t = append(t, e)
	}
	return t
}

// layoutSpans makes the list of the transactions the txStore records, each
// with the stores that have it.
func (s *Snapshot) layoutSpans() {
	v := s.layout
	v.txOnce.Do(func() {
		byID := map[string][]spanStore{}
		var ids []string
		for i := range v.stores {
			ls := &v.stores[i]
			if ls.snap == nil || ls == v.txStore {
				continue
			}
			for _, tx := range ls.snap.graph.Transactions() {
				if byID[tx.ID] == nil {
					ids = append(ids, tx.ID)
				}
				byID[tx.ID] = append(byID[tx.ID], spanStore{ls: ls, tx: tx})
			}
		}
		recorded := map[string]string{}
		if tx := v.txStore; tx != nil {
			for _, fi := range tx.snap.Store.Files {
				_, _ = codec.ScanFile(fi, tx.snap.opts, func(_ codec.Record, c *codec.Command) error {
					id := c.Tx.String()
					switch c.Type {
					case codec.PrepareCommand:
						recorded[id] = "commit-pending"
					case codec.CommitCommand:
						recorded[id] = "completed"
					case codec.RollbackCommand:
						recorded[id] = "rolled-back"
					default:
						return nil
					}
					if byID[id] == nil {
						ids = append(ids, id)
						byID[id] = []spanStore{}
					}
					return nil
				})
			}
		}
		for _, id := range ids {
			if len(byID[id]) > 1 || recorded[id] != "" {
				v.spans = append(v.spans, spanTx{id: id, stores: byID[id], txStore: recorded[id]})
			}
		}
		v.txNames = newNameIndex(len(v.spans), func(i int) string { return v.spans[i].id })
	})
}

// layoutTxsTable is a layout's by-transaction/: one directory per
// transaction that spans stores (in two stores or more, or recorded by the
// txStore), named by its escaped id: state (the stores' state when they
// agree, else "mixed"), stores (each store that has it with its state
// there, one a line, then what the txStore records) and info.json.
type layoutTxsTable struct{ s *Snapshot }

func (t layoutTxsTable) len() int { return t.s.layout.txNames.len() }

func (t layoutTxsTable) at(k int) entry {
	i, name := t.s.layout.txNames.entry(k)
	sp := &t.s.layout.spans[i]
	id := sp.id
	return dirOf(name, inoPath(nameByTransaction, id), func() (dirTable, error) {
		return fixed{
			textOf(nameState, inoPath(nameByTransaction, id, nameState), func() ([]byte, error) { return []byte(sp.state() + "\n"), nil }),
			textOf(nameStores, inoPath(nameByTransaction, id, nameStores), func() ([]byte, error) { return t.s.renderSpanStores(sp), nil }),
			textOf(nameInfo, inoPath(nameByTransaction, id, nameInfo), func() ([]byte, error) { return t.s.renderSpanInfo(sp, name) }),
		}, nil
	})
}

func (t layoutTxsTable) find(name string) (int, bool) { return t.s.layout.txNames.find(name) }

// nameStores lists the stores a transaction of by-transaction/ touches.
const nameStores = "stores"

// renderSpanStores is one line per store that has the transaction: its
// directory in the tree and the transaction's state there.
func (s *Snapshot) renderSpanStores(sp *spanTx) []byte {
	var b []byte
	for _, st := range sp.stores {
		b = fmt.Appendf(b, "%s %s\n", st.ls.name, st.tx.State)
	}
	if sp.txStore != "" {
		b = fmt.Appendf(b, "%s %s\n", s.layout.txStore.name, sp.txStore)
	}
	return b
}

func (s *Snapshot) renderSpanInfo(sp *spanTx, name string) ([]byte, error) {
	type storeTx struct {
		Store string `json:"store"`
		Dir   string `json:"dir"`
		State string `json:"state"`
		Path  string `json:"path"`
	}
	doc := struct {
		ID    string `json:"id"`
		State string `json:"state"`
		// TxStore is what the txStore records of it ("" nothing).
		TxStore string    `json:"txStore"`
		Stores  []storeTx `json:"stores"`
	}{ID: sp.id, State: sp.state(), TxStore: sp.txStore, Stores: []storeTx{}}
	for _, st := range sp.stores {
		doc.Stores = append(doc.Stores, storeTx{Store: st.ls.name, Dir: st.ls.l.Rel, State: string(st.tx.State),
			Path: path.Join(st.ls.name, nameByTransaction, txPathName(st.ls.snap, st.tx.ID, name))})
	}
	return marshal(doc)
}

// txPathName is the name of the transaction id under by-transaction/ of
// the store s (fallback when the store names it otherwise: not found).
func txPathName(s *Snapshot, id, fallback string) string {
	txs := s.graph.Transactions()
	names := s.txIndex()
	for k := 0; k < names.len(); k++ {
		if i, name := names.entry(k); txs[i].ID == id {
			return name
		}
	}
	return fallback
}

// layoutFindMessage finds the message id in every analysed store: the
// paths of the tree that show it (each below its store's directory), and
// the store that holds its record (nil if none does; else its location
// there). ErrNoMessage when no store shows it.
func (s *Snapshot) layoutFindMessage(id string, opts FindOptions) ([]string, *Snapshot, error) {
	var all []string
	var holder, first *Snapshot
	for _, ls := range s.layout.stores {
		cs := ls.snap
		if cs == nil {
			continue
		}
		paths, held, err := cs.findMessage(id, opts)
		if errors.Is(err, ErrNoMessage) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", ls.l.Rel, err)
		}
		for _, p := range paths {
			all = append(all, ls.name+"/"+p)
		}
		if first == nil {
			first = cs
		}
		if holder == nil {
			if _, ok := cs.heldAt(id); held != nil || ok {
				holder = cs
			}
		}
	}
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("%w: no path of the tree shows %s", ErrNoMessage, id)
	}
	if holder == nil {
		holder = first
	}
	return all, holder, nil
}

// layoutByMessageIDTable is a layout's by-message-id/: a message looked up
// in every store; its paths list what each store shows of it, its
// message.json and message.body are the record of the store that holds it.
type layoutByMessageIDTable struct{ s *Snapshot }

func (t layoutByMessageIDTable) len() int { return 1 }

func (t layoutByMessageIDTable) at(int) entry {
	return textOf(nameReadme, inoByMessageIDReadme, func() ([]byte, error) { return []byte(byMessageIDReadme), nil })
}

func (t layoutByMessageIDTable) find(name string) (int, bool) { return 0, name == nameReadme }

func (t layoutByMessageIDTable) findHidden(name string) (entry, bool) {
	id, full, err := UnescapeName(name)
	if err != nil || !full || id == "" {
		return entry{}, false
	}
	paths, holder, err := t.s.layoutFindMessage(id, FindOptions{})
	if err != nil {
		return entry{}, false
	}
	e := dirOf(name, inoPath(nameByMessageID, id), func() (dirTable, error) { return holder.messageIDDir(id, paths, nil), nil })
	e.snap = holder
	return e, true
}

// rel is the path of a store's data file relative to the layout's
// directory ("mKahaDB/queue#3a#2f#2fORDERS.#3e/db-3.log").
func (ls *layoutStore) rel(file string) string { return path.Join(ls.l.Rel, file) }

// renderLayoutFileList lists the pinned or the free data files of every
// analysed store, one a line, relative to the layout's directory.
func (s *Snapshot) renderLayoutFileList(pinned bool) []byte {
	var b []byte
	for i := range s.layout.stores {
		ls := &s.layout.stores[i]
		for _, f := range ls.files() {
			if f.pinned == pinned {
				b = append(b, ls.rel(f.name)...)
				b = append(b, '\n')
			}
		}
	}
	return b
}

// renderLayoutSummary is the layout's summary.json: per store its name on
// disk and in the tree, kind, filter, pinned and free files, messages and
// transactions; the totals; the stores not analysed.
func (s *Snapshot) renderLayoutSummary() ([]byte, error) {
	type storeSum struct {
		Name          string                     `json:"name"`
		Kind          string                     `json:"kind"`
		Filter        string                     `json:"filter,omitempty"`
		Dir           string                     `json:"dir"`
		Tree          string                     `json:"tree"`
		NotAnalysed   string                     `json:"notAnalysed,omitempty"`
		Files         int                        `json:"files"`
		Bytes         int64                      `json:"bytes"`
		Commands      int64                      `json:"commands"`
		Pinned        []string                   `json:"pinned"`
		Free          []string                   `json:"free"`
		Messages      int64                      `json:"messages"`
		InFlight      int                        `json:"inFlightTransactions"`
		Prepared      int                        `json:"preparedTransactions"`
		MaxFileLength *replaycache.MaxFileLength `json:"maxFileLength,omitempty"`
		Warnings      []string                   `json:"warnings,omitempty"`
		// IfIndexDeleted: what deleting the store's db.data loses
		// (refgraph RebuildLoss)
		IfIndexDeleted []refgraph.RebuildLoss `json:"ifIndexDeleted,omitempty"`
	}
	doc := struct {
		Layout   string     `json:"layout"`
		Kind     string     `json:"kind"`
		ReadAt   string     `json:"readAt"`
		Snapshot uint64     `json:"snapshot"`
		Files    int        `json:"files"`
		Bytes    int64      `json:"bytes"`
		Commands int64      `json:"commands"`
		Messages int64      `json:"messages"`
		Pinned   []string   `json:"pinned"`
		Free     []string   `json:"free"`
		Stores   []storeSum `json:"stores"`
	}{
		Layout: s.layout.l.Dir(), Kind: s.layout.l.KindName(), ReadAt: s.Read.UTC().Format(time.RFC3339Nano), Snapshot: s.Gen,
		Bytes: s.bytes, Commands: s.commands, Pinned: []string{}, Free: []string{}, Stores: []storeSum{},
	}
	for i := range s.layout.stores {
		ls := &s.layout.stores[i]
		ss := storeSum{Name: ls.l.Name, Kind: ls.l.KindName(), Filter: ls.l.Filter, Dir: ls.l.Rel, Tree: ls.name,
			NotAnalysed: ls.why, Pinned: []string{}, Free: []string{}}
		if cs := ls.snap; cs != nil {
			gs := cs.graph.Summary()
			ss.Files, ss.Bytes, ss.Commands, ss.Messages = len(cs.files), cs.bytes, cs.commands, gs.Messages
			ss.InFlight, ss.Prepared = gs.InFlight, gs.Prepared
			mfl := cs.mfl
			ss.MaxFileLength = &mfl
			ss.Warnings = cs.graph.Warnings()
			ss.IfIndexDeleted = cs.graph.RebuildLosses()
			doc.Files += ss.Files
			doc.Messages += ss.Messages
		}
		if r := ls.sched; r != nil {
			ss.Files = len(r.Prediction.Files)
			for _, f := range r.Prediction.Files {
				ss.Bytes += f.Size
			}
			doc.Files += ss.Files
			doc.Bytes += ss.Bytes
		}
		for _, f := range ls.files() {
			if f.pinned {
				ss.Pinned = append(ss.Pinned, f.name)
				doc.Pinned = append(doc.Pinned, ls.rel(f.name))
			} else {
				ss.Free = append(ss.Free, f.name)
				doc.Free = append(doc.Free, ls.rel(f.name))
			}
		}
		doc.Stores = append(doc.Stores, ss)
	}
	return marshal(doc)
}

const layoutReadmeText = `kahafs: a read-only view of the ActiveMQ stores of %s

Layout:   %s
Read at:  %s (snapshot %d)

Nothing here can be changed, and nothing below the directory is ever
written. Each store has a directory of its own, holding the tree a mount of
that store alone shows (see its README):

%s
README                        this text
summary.json                  per store: its directory, kind, filter, pinned
                              and free files, messages, transactions; totals
pinned                        data files the brokers keep, every store's, one
                              a line, relative to the directory above
                              (mKahaDB/queue#3a#2f#2fORDERS.#3e/db-3.log)
free                          data files the next cleanup of their store
                              deletes, one a line, relative as in pinned
plan, plan.json               per store, what each action an admin can take
                              frees at its next cleanup (kahafs plan)
metrics                       every store's numbers as Prometheus metrics,
                              labelled store_dir: what "kahafs metrics" prints
by-transaction/ID/            (with a txStore) every transaction that spans
                              stores: in two stores or more, or recorded by
                              the txStore
  state                       the stores' state when they agree, else mixed
  stores                      each store that has it and its state there, one
                              a line; then "txStore commit-pending" (the
                              commit is decided: a restarted broker completes
                              it in every store), "completed" or "rolled-back"
                              when the txStore records it
  info.json                   the same, with each store's path to it
by-message-id/ID/             a message looked up in every store: paths lists
                              every path that shows it, message.json and
                              message.body are its record

A store of an mKahaDB is named by the destination filter its directory is
named after (the broker writes "queue://ORDERS.>" as queue#3a#2f#2fORDERS.#3e),
escaped as every name of the tree; the catch-all store (#210) is "catch-all".
The job scheduler's store (its own model) holds holders and holders.json
(its files, pinned or free, and why) and jobs/ (one JSON a job: its
destination, delay, period, repeats, cron, next run and message). A store
kahafs does not model holds only the file not-analysed: nothing is
predicted of its files.
`

func (s *Snapshot) renderLayoutReadme() ([]byte, error) {
	var list []byte
	for _, ls := range s.layout.stores {
		what := ls.l.KindName()
		if ls.snap == nil && ls.sched == nil {
			what += ", not analysed"
		}
		list = fmt.Appendf(list, "%-29s %s (%s)\n", ls.name+"/", ls.l.Rel, what)
	}
	what := "an mKahaDB store"
	if s.layout.l.Kind == store.KindDataDir {
		what = "a broker data directory"
	}
	b := fmt.Appendf(nil, layoutReadmeText, what, s.layout.l.Dir(), s.Read.UTC().Format(time.RFC3339), s.Gen, list)
	if s.m != nil && s.m.control {
		b = append(b, controlText...)
		b = append(b, "Here it compacts each KahaDB store in turn (the txStore and the\nscheduler's store are skipped).\n"...)
	}
	for _, ls := range s.layout.stores {
		if ls.snap != nil && ls.snap.graph != nil {
			b = appendIndexDeleted(b, ls.snap.graph.RebuildLosses(), ls.name+"/: ")
		}
	}
	return b, nil
}

// nameJobs is a job scheduler store's directory of its jobs.
const nameJobs = "jobs"

// jobsTable is a job scheduler store's jobs/: one JSON a job
// (scheduler.JobJSON: its destination, delay, period, repeats, cron, next
// run and message), named by its escaped id, in the scheduler's order.
type jobsTable struct {
	store  string
	r      *scheduler.Report
	jobs   []*scheduler.Job
	names  []string
	byName map[string]int
}

func newJobsTable(storeName string, r *scheduler.Report) *jobsTable {
	jobs := r.Model.Jobs()
	t := &jobsTable{store: storeName, r: r, jobs: jobs, names: make([]string, len(jobs)), byName: make(map[string]int, len(jobs))}
	for i, j := range jobs {
		name := EscapeName(j.ID) + suffixJSON
		if _, dup := t.byName[name]; dup { // one id in two schedulers
			name = EscapeName(j.ID) + "%~" + strconv.Itoa(i+1) + suffixJSON
		}
		t.names[i] = name
		t.byName[name] = i
	}
	return t
}

func (t *jobsTable) len() int { return len(t.jobs) }

func (t *jobsTable) at(i int) entry {
	j := t.jobs[i]
	return textOf(t.names[i], inoPath(t.store, nameJobs, j.Scheduler, j.ID), func() ([]byte, error) {
		b, err := scheduler.JobJSON(t.r.Store, j, openwire.JSONOptions{})
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	})
}

func (t *jobsTable) find(name string) (int, bool) {
	i, ok := t.byName[name]
	return i, ok
}

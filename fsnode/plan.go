package fsnode

import (
	"bytes"
	"strings"
	"sync"

	"github.com/kahafs/kahafs/plan"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/store"
)

// The unpin plan at the tree's root (package plan): plan (text, as
// `kahafs plan` prints it) and plan.json (as `kahafs plan --json`); and
// what resolving a destination or a subscription frees, in its stats.json
// or info.json ("resolvingFrees").
const (
	namePlan     = "plan"
	namePlanJSON = "plan.json"

	inoPlan     = inoControl + 20
	inoPlanJSON = inoControl + 21
)

// planState is a snapshot's plan, made when first asked for: its
// resolver, and the plan itself, kept for the life of the snapshot (plan
// and plan.json render the same one: a listing of the top looks both up,
// and making it runs the cleanup emulation for every candidate action).
type planState struct {
	once sync.Once
	r    *plan.Resolver

	docOnce sync.Once
	doc     any
	docErr  error
}

// resolver is the snapshot's plan.Resolver (nil without a graph).
func (s *Snapshot) resolver() *plan.Resolver {
	s.pl.once.Do(func() {
		if s.graph != nil {
			s.pl.r = plan.NewResolver(s.Store.Dir, s.graph)
		}
	})
	return s.pl.r
}

// planEntries are the root's plan and plan.json.
func (s *Snapshot) planEntries() []entry {
	return []entry{
		textOf(namePlan, inoPlan, s.renderPlanText),
		textOf(namePlanJSON, inoPlanJSON, s.renderPlanJSON),
	}
}

// planDoc is the plan of the snapshot: a plan.Doc, or a plan.LayoutDoc
// for a layout of several stores; made once.
func (s *Snapshot) planDoc() (any, error) {
	s.pl.docOnce.Do(func() { s.pl.doc, s.pl.docErr = s.makePlanDoc() })
	return s.pl.doc, s.pl.docErr
}

func (s *Snapshot) makePlanDoc() (any, error) {
	if s.layout == nil {
		return plan.Make(s.Store.Dir, s.graph)
	}
	ld := plan.LayoutDoc{Stores: []plan.StoreDoc{}}
	for _, ls := range s.layout.stores {
		sd := plan.StoreDoc{Name: ls.l.Name, Kind: ls.l.KindName(), Filter: ls.l.Filter, NotAnalysed: ls.why}
		switch {
		case ls.l.Kind == store.KindTxStore:
			sd.NotAnalysed = plan.TxStoreNote
		case ls.snap != nil && ls.snap.graph != nil:
			doc, err := plan.Make(ls.snap.Store.Dir, ls.snap.graph)
			if err != nil {
				return nil, err
			}
			sd.Doc = &doc
		case ls.sched != nil:
			sd.NotAnalysed = "a job scheduler store: its files are kept by scheduled jobs, which none of these actions removes (kahafs holders names them)"
		}
		ld.Stores = append(ld.Stores, sd)
	}
	return ld, nil
}

func (s *Snapshot) renderPlanJSON() ([]byte, error) {
	doc, err := s.planDoc()
	if err != nil {
		return nil, err
	}
	return marshal(doc)
}

func (s *Snapshot) renderPlanText() ([]byte, error) {
	doc, err := s.planDoc()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	oneLine := func(l string) string { return strings.ReplaceAll(l, "\n", " ") }
	switch d := doc.(type) {
	case plan.Doc:
		err = d.WriteText(&b, oneLine)
	case plan.LayoutDoc:
		for i, sd := range d.Stores {
			if i > 0 {
				b.WriteByte('\n')
			}
			l := s.layout.stores[i].l
			b.WriteString(oneLine("== "+l.Title()+" ("+l.Rel+", "+sd.Kind+")") + "\n")
			if sd.Doc == nil {
				b.WriteString(oneLine(sd.NotAnalysed) + "\n")
				continue
			}
			if err = sd.Doc.WriteText(&b, oneLine); err != nil {
				break
			}
		}
	}
	return b.Bytes(), err
}

// resolvingDest is what resolving d frees (stats.json): a queue purged,
// a topic's durable subscriptions deleted.
func (s *Snapshot) resolvingDest(d *refgraph.Destination) (*plan.Resolved, error) {
	r := s.resolver()
	if r == nil {
		return nil, nil
	}
	res, err := r.Destination(d)
	return &res, err
}

// resolvingSub is what deleting sub frees (info.json).
func (s *Snapshot) resolvingSub(sub *refgraph.Subscription) (*plan.Resolved, error) {
	r := s.resolver()
	if r == nil {
		return nil, nil
	}
	res, err := r.Subscription(sub)
	return &res, err
}

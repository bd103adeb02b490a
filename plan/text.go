package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/holders"
	"github.com/kahafs/kahafs/store"
)

// Text is the plan for an admin, a line each (the texts as the graph says
// them: a terminal needs them escaped).
func (doc Doc) Text() []string {
	lines := []string{
		"the next cleanup deletes anyway: " + filesText(doc.FreedAnyway),
		"it keeps: " + filesText(doc.Pinned),
		"what each action frees at the broker's next cleanup (beyond the files it deletes anyway), most first;",
		"the files are the broker's cleanup emulated with the action done; the bytes written first are estimates:",
	}
	for i, a := range doc.Actions {
		lines = append(lines, fmt.Sprintf("%2d. %s", i+1, a.line()))
		for k, h := range a.HeldBy {
			if k == maxHeldByLines && len(a.HeldBy) > maxHeldByLines+1 {
				lines = append(lines, fmt.Sprintf("      … and %d more file(s) kept by others (--json lists them all)", len(a.HeldBy)-k))
				break
			}
			lines = append(lines, "      kept by: "+h)
		}
		if a.Note != "" {
			lines = append(lines, "      "+a.Note)
		}
	}
	if c := doc.Combined; c != nil {
		var nums []string
		for _, i := range c.Actions {
			nums = append(nums, fmt.Sprint(i+1))
		}
		kept := ""
		if c.Keeps != nil {
			kept = ", but keeps " + filesText(*c.Keeps) + ", which it deletes otherwise"
		}
		lines = append(lines, fmt.Sprintf("combined: %s together (of every purge, subscription deletion and transaction decision, those without which the others free less: the most freed with the least written): frees %s%s; writes ~%s first (%d records, estimate)",
			strings.Join(nums, ", "), filesText(c.Frees), kept, holders.SizeText(c.Writes.Bytes), c.Writes.Records))
	}
	for _, l := range doc.IfIndexDeleted {
		lines = append(lines, "warning: "+l.Text())
	}
	return lines
}

// maxHeldByLines is how many files' other holders the text names.
const maxHeldByLines = 3

func (a Action) line() string {
	var sb strings.Builder
	sb.WriteString(a.Action)
	t := a.Target
	switch {
	case a.Action == DeleteSubscription:
		fmt.Fprintf(&sb, " %s:%s on %s", t.ClientID, t.SubscriptionName, t.Destination)
	case t.Destination != "":
		sb.WriteString(" " + t.Destination)
	case t.Transaction != "":
		sb.WriteString(" " + t.Transaction)
	}
	switch a.Action {
	case Purge, DeleteSubscription:
		fmt.Fprintf(&sb, " (%d message(s))", a.Messages)
	}
	if len(a.Frees.Files) == 0 {
		sb.WriteString(": frees nothing")
	} else {
		sb.WriteString(": frees " + filesText(a.Frees))
	}
	if a.Keeps != nil {
		sb.WriteString(", but keeps " + filesText(*a.Keeps) + ", which it deletes otherwise")
	}
	if a.Writes.Records > 0 {
		fmt.Fprintf(&sb, "; writes ~%s first (%d record(s), estimate)", holders.SizeText(a.Writes.Bytes), a.Writes.Records)
	}
	return sb.String()
}

// filesText is "db-2.log, db-3.log (2 files, 32.0 KiB)".
func filesText(f Frees) string {
	if len(f.Files) == 0 {
		return "no file"
	}
	names := make([]string, 0, len(f.Files))
	for i, id := range f.Files {
		if i == 8 && len(f.Files) > 10 {
			names = append(names, fmt.Sprintf("… %s", codec.DataFileName(f.Files[len(f.Files)-1])))
			break
		}
		names = append(names, codec.DataFileName(id))
	}
	return fmt.Sprintf("%s (%d file(s), %s)", strings.Join(names, ", "), len(f.Files), holders.SizeText(f.Bytes))
}

// WriteText writes the lines of Text.
func (doc Doc) WriteText(w io.Writer, escape func(string) string) error {
	for _, l := range doc.Text() {
		if _, err := io.WriteString(w, escape(l)+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// StoreDoc is the plan of one store of a layout of several (an mKahaDB
// root, a broker's data directory), named as holders names it. A store
// kahafs does not model (a transaction store, a job scheduler store) has
// no plan: NotAnalysed says why.
type StoreDoc struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Filter      string `json:"filter,omitempty"`
	NotAnalysed string `json:"notAnalysed,omitempty"`
	*Doc
	title string // store.Layout.Title
}

// LayoutDoc is the plan of every store of a layout of several: a purge
// frees files of the store that holds the destination.
type LayoutDoc struct {
	Stores []StoreDoc `json:"stores"`
	// Transactions: each decision of a prepared XA transaction that spans
	// stores, with what it frees in every store it spans (each store's
	// plan has the action too, with its part); checked against the
	// broker's mKahaDB adapter by TestPlanBrokerAgreesLayouts.
	Transactions []SpanningTx `json:"transactions,omitempty"`
}

// SpanningTx is committing or rolling back (Action) a prepared XA
// transaction that spans stores: what it frees and writes in each store,
// and the bytes it frees in all.
type SpanningTx struct {
	Action      string       `json:"action"`
	Transaction string       `json:"transaction"`
	Stores      []StoreFrees `json:"stores"`
	Bytes       int64        `json:"bytes"`
}

// StoreFrees is an action's part in one store of a layout (Store: its
// name as in LayoutDoc.Stores).
type StoreFrees struct {
	Store  string `json:"store"`
	Frees  Frees  `json:"frees"`
	Keeps  *Frees `json:"keeps,omitempty"`
	Writes Writes `json:"writes"`
	label  string // the store's title
}

// spanning lists the decisions of the prepared transactions that appear
// in the plans of two stores or more, in the order of the stores' plans.
func spanning(stores []StoreDoc) []SpanningTx {
	var out []SpanningTx
	at := map[[2]string]int{}
	for _, sd := range stores {
		if sd.Doc == nil {
			continue
		}
		for _, a := range sd.Actions {
			if a.Action != Commit && a.Action != Rollback {
				continue
			}
			k := [2]string{a.Action, a.Target.Transaction}
			i, ok := at[k]
			if !ok {
				i = len(out)
				at[k] = i
				out = append(out, SpanningTx{Action: a.Action, Transaction: a.Target.Transaction})
			}
			label := sd.title + " store"
			if sd.title == "" {
				label = sd.Name
			}
			out[i].Stores = append(out[i].Stores, StoreFrees{Store: sd.Name, Frees: a.Frees, Keeps: a.Keeps, Writes: a.Writes, label: label})
			out[i].Bytes += a.Frees.Bytes
		}
	}
	kept := out[:0]
	for _, t := range out {
		if len(t.Stores) > 1 {
			kept = append(kept, t)
		}
	}
	return kept
}

// TransactionsText is Transactions for an admin, a line each.
func (doc LayoutDoc) TransactionsText() []string {
	if len(doc.Transactions) == 0 {
		return nil
	}
	lines := []string{"prepared XA transactions spanning stores: what deciding each frees in every store it spans (at each store's next cleanup):"}
	for _, t := range doc.Transactions {
		var parts []string
		for _, s := range t.Stores {
			what := "nothing"
			if len(s.Frees.Files) > 0 {
				what = filesText(s.Frees)
			}
			if s.Keeps != nil {
				what += ", but keeps " + filesText(*s.Keeps)
			}
			label := s.label
			if label == "" {
				label = s.Store
			}
			parts = append(parts, what+" in the "+label)
		}
		lines = append(lines, fmt.Sprintf("  %s %s: frees %s (%s in all)", t.Action, t.Transaction, strings.Join(parts, "; "), holders.SizeText(t.Bytes)))
	}
	return lines
}

// WriteJSON writes doc as indented JSON.
func (doc LayoutDoc) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// TxStoreNote is what the plan says of an mKahaDB's transaction store.
const TxStoreNote = "the transaction store of an mKahaDB: it keeps the transactions that span stores until every store has their outcome; commit or roll back a prepared one (its plan is in the stores it spans)"

// Of is the plan of the analysed store a: a Doc for one store, a
// LayoutDoc for a layout of several.
func Of(a *store.Analysis) (any, error) {
	if !a.Layout.Multi() {
		doc, err := Make(a.Journal().Dir, a.Graph)
		return doc, err
	}
	ld := LayoutDoc{Stores: []StoreDoc{}}
	for _, s := range a.Children {
		l := s.Layout
		sd := StoreDoc{Name: l.Name, Kind: l.KindName(), Filter: l.Filter, NotAnalysed: s.NotAnalysed, title: l.Title()}
		switch {
		case l.Kind == store.KindTxStore:
			sd.NotAnalysed = TxStoreNote
		case s.Graph != nil:
			doc, err := Make(l.Dir(), s.Graph)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", l.Rel, err)
			}
			sd.Doc = &doc
		case s.Scheduler != nil:
			sd.NotAnalysed = "a job scheduler store: its files are kept by scheduled jobs, which none of these actions removes (kahafs holders names them)"
		}
		ld.Stores = append(ld.Stores, sd)
	}
	ld.Transactions = spanning(ld.Stores)
	return ld, nil
}

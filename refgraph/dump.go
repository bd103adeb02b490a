package refgraph

import (
	"fmt"
	"strings"
)

// Dump renders everything the Graph tells through its methods, one fact
// a line, in a stable order: for comparing two graphs in full (a replay
// resumed from a saved state against a full one, in tests) and for bug
// reports.
func (g *Graph) Dump() string {
	var sb strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&sb, format+"\n", args...) }
	for _, f := range g.Files() {
		p("file %d %q size=%d end=%d commands=%d skipped=%d compaction=%v source=%d pinned=%v",
			f.ID, f.Name, f.Size, f.End, f.Commands, f.Skipped, f.Compaction, f.Source, f.Pinned)
		for _, r := range f.Reasons {
			pending := ptrStr(r.Pending)
			r.Pending = nil
			p("  reason %+v pending=%s", r, pending)
		}
		for _, r := range f.Notes {
			pending := ptrStr(r.Pending)
			r.Pending = nil
			p("  note %+v pending=%s", r, pending)
		}
		for _, d := range f.Damage {
			p("  damage %+v", *d)
		}
	}
	p("gc %v", g.GCCandidates())
	for _, l := range g.GCLog() {
		p("gclog %s", l)
	}
	p("order %v", g.DestinationOrder())
	for _, d := range g.Destinations() {
		p("dest %d %q key=%q next=%d stats=%+v", d.Type, d.Name, d.Key, d.NextSeq, d.Stats)
		for _, m := range d.Messages {
			id, tx := m.ID(), d.AckedInPreparedTx(&m)
			m.id = msgID{} // a pointer: not stable
			p("  msg id=%s ackedInPreparedTx=%q %+v", id, tx, m)
		}
		for _, m := range d.Pending() {
			p("  deliver %s %v", m.ID(), m.Seq)
		}
		for _, m := range d.InDoubt() {
			p("  in-doubt %s %v", m.ID(), m.Seq)
		}
		for _, s := range d.Subscriptions {
			p("  sub key=%q client=%q name=%q sel=%q/%v nolocal=%v retro=%v loc=%v count=%d lastAck=%d positions=%v",
				s.Key, s.ClientID, s.SubscriptionName, s.Selector, s.HasSelector, s.NoLocal, s.Retroactive, s.Loc, s.Count, s.LastAck, s.AckPositions)
			for i := 0; i < s.NumPending(); i++ {
				p("    pending %s %v", s.PendingAt(i).ID(), s.PendingAt(i).Seq)
			}
			for _, m := range s.InDoubt() {
				p("    in-doubt %s %v", m.ID(), m.Seq)
			}
		}
	}
	for _, tx := range g.Transactions() {
		t := *tx
		t.InDoubt = nil
		p("tx %+v", t)
		for _, m := range tx.InDoubt {
			p("  in-doubt %s %v", m.ID(), m.Seq)
		}
	}
	for _, d := range g.IndexDiffs() {
		p("index-diff %+v", d)
	}
	p("summary %+v", g.Summary())
	p("damaged %v", g.Damaged())
	for _, w := range g.Warnings() {
		p("warning %s", w)
	}
	return sb.String()
}

func ptrStr(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

package compact

import (
	"github.com/kahafs/kahafs/store"
)

// Reclaimable is what an offline compaction of the analysed store a
// would change: the length of its data files now (before) and of the
// compacted journal (after), laid out exactly as Compact writes it, into
// no file: what `kahafs compact --dry-run` reports as "Journals before"
// and "after", computed from an analysis already made (a's journal and
// graph; no lock is taken). ok is false when Compact would refuse the
// store: not one KahaDB store (a layout of several, a job scheduler's,
// an mKahaDB's txStore), or damage (which only --force compacts).
//
// It reads every record the compaction copies (the pending messages,
// the prepared transactions): about half the cost of reading the whole
// journal on the bench's big-pending store.
func Reclaimable(a *store.Analysis) (before, after FilesBytes, ok bool, err error) {
	g, st := a.Graph, a.Journal()
	if g == nil || st == nil || a.Layout.Multi() || a.Layout.Kind != store.KindKahaDB || g.Damaged() {
		return FilesBytes{}, FilesBytes{}, false, nil
	}
	for _, d := range g.Destinations() {
		for i := range d.Messages {
			if d.Messages[i].Unreadable {
				return FilesBytes{}, FilesBytes{}, false, nil
			}
		}
	}
	p, err := plan(st, g, false)
	if err != nil {
		return FilesBytes{}, FilesBytes{}, false, err
	}
	opts := Options{DryRun: true, MaxFileLength: a.MaxFileLength.Value,
		crash: func(string) {}, fault: func(string) error { return nil }}
	pf := p.read(st)
	defer pf.close()
	if _, _, err := p.write(pf, "", opts); err != nil {
		return FilesBytes{}, FilesBytes{}, false, err
	}
	return journalSize(st), p.written, true, nil
}

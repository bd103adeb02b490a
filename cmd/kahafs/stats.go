package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

type statsFlags struct {
	json     bool
	noVerify bool
}

func newStatsCmd() *cobra.Command {
	var f statsFlags
	cmd := &cobra.Command{
		Use:   "stats STORE",
		Short: "Count and size the journal's commands per file, destination and type",
		Args:  withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStats(cmd, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON")
	cmd.Flags().BoolVar(&f.noVerify, "no-verify", false, "do not verify batch checksums")
	return cmd
}

func runStats(cmd *cobra.Command, dir string, f statsFlags) error {
	l, err := store.Locate(dir)
	if err != nil {
		return err
	}
	if l.Multi() {
		return runLayoutStats(cmd, l, f)
	}
	st := l.Journal
	if pid, _ := compact.LockHolder(l.Dir()); pid != 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), liveLine(pid, "its newest data file may end in a batch it is writing"))
	}
	ro := codec.ReadOptions{SkipChecksums: f.noVerify}
	s, err := codec.ComputeStats(st, ro, 0)
	if err != nil {
		return err
	}
	// counts of a journal kahafs does not model (a job scheduler's) are
	// not shown: they would read as a KahaDB store's
	if err := store.CheckModeled(l, ro, func(i int) bool {
		var n [codec.NumEntryTypes]int64
		for t := range s.Files[i].ByType {
			n[t] = s.Files[i].ByType[t].Count
		}
		return store.Suspect(&n, s.Files[i].Damage)
	}); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.json {
		if err := writeJSON(out, statsDoc(st, s)); err != nil {
			return err
		}
	} else {
		writeStatsText(out, st, s)
	}
	if reportStatsDamage(cmd.ErrOrStderr(), s) {
		return errDamaged
	}
	return nil
}

// runLayoutStats prints the stats of each store of a layout of several: as
// JSON {"stores":[{"name":…,"kind":…, the single-store document…}]}, else
// each store's tables under a heading. An unmodelled store is said not
// analysed.
func runLayoutStats(cmd *cobra.Command, l *store.Layout, f statsFlags) error {
	type storeStats struct {
		Name        string `json:"name"`
		Kind        string `json:"kind"`
		Filter      string `json:"filter,omitempty"`
		NotAnalysed string `json:"notAnalysed,omitempty"`
		*statsJSON
	}
	var doc struct {
		Stores []storeStats `json:"stores"`
	}
	doc.Stores = []storeStats{}
	out := cmd.OutOrStdout()
	damaged := false
	for i, c := range l.Children {
		ss := storeStats{Name: c.Name, Kind: c.KindName(), Filter: c.Filter}
		if !f.json {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintln(out, storeHeading(c))
		}
		if !c.Analysable() {
			ss.NotAnalysed = c.NotAnalysedText()
			doc.Stores = append(doc.Stores, ss)
			if !f.json {
				fmt.Fprintln(out, safe(ss.NotAnalysed))
			}
			continue
		}
		s, err := codec.ComputeStats(c.Journal, codec.ReadOptions{SkipChecksums: f.noVerify}, 0)
		if err != nil {
			return err
		}
		ss.statsJSON = statsDoc(c.Journal, s)
		doc.Stores = append(doc.Stores, ss)
		if !f.json {
			writeStatsText(out, c.Journal, s)
		}
		if reportStatsDamage(&prefixWriter{w: cmd.ErrOrStderr(), prefix: safe(c.Rel) + ": "}, s) {
			damaged = true
		}
	}
	if f.json {
		if err := writeJSON(out, doc); err != nil {
			return err
		}
	}
	if damaged {
		return errDamaged
	}
	return nil
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// reportStatsDamage reports the damage the stats found on w; true when
// some is more than a torn tail.
func reportStatsDamage(w io.Writer, s *codec.Stats) bool {
	damaged := false
	for i := range s.Files {
		if reportDamage(w, s.Files[i].Damage) {
			damaged = true
		}
	}
	return damaged
}

type sizeJSON struct {
	Type string `json:"type,omitempty"`
	codec.SizeStat
	Average int64 `json:"average"`
}

func typeRows(t *codec.TypeStats) []sizeJSON {
	var rows []sizeJSON
	for i := range t {
		if t[i].Count > 0 {
			rows = append(rows, sizeJSON{Type: codec.EntryType(i).String(), SizeStat: t[i], Average: t[i].Average()})
		}
	}
	return rows
}

func total(t *codec.TypeStats) sizeJSON {
	s := t.Sum()
	return sizeJSON{SizeStat: s, Average: s.Average()}
}

// statsJSON is stats --json of one store.
type statsJSON struct {
	Store        string          `json:"store"`
	Files        []statsFileJSON `json:"files"`
	Destinations []statsDestJSON `json:"destinations"`
	NoDest       []sizeJSON      `json:"withoutDestination"`
	Types        []sizeJSON      `json:"types"`
	Total        sizeJSON        `json:"total"`
	Clean        bool            `json:"clean"`
}

type statsFileJSON struct {
	ID          int32      `json:"id"`
	Name        string     `json:"name"`
	Size        int64      `json:"size"`
	Allocated   int64      `json:"allocated"`
	End         int64      `json:"logicalEnd"`
	Batches     int        `json:"batches"`
	Checksummed int        `json:"checksummedBatches"`
	Damage      []string   `json:"damage"`
	Total       sizeJSON   `json:"total"`
	Types       []sizeJSON `json:"types"`
}

type statsDestJSON struct {
	Destination string     `json:"destination"`
	Total       sizeJSON   `json:"total"`
	Types       []sizeJSON `json:"types"`
}

// statsDoc is the stats s of the store st as stats --json prints them.
func statsDoc(st *codec.Store, s *codec.Stats) *statsJSON {
	doc := &statsJSON{}
	doc.Store = st.Dir
	doc.Files = []statsFileJSON{}
	for i := range s.Files {
		fs := &s.Files[i]
		fj := statsFileJSON{ID: fs.Info.ID, Name: fs.Info.Name, Size: fs.Size, Allocated: fs.Allocated, End: fs.End,
			Batches: fs.Batches, Checksummed: fs.Checksummed, Damage: []string{}, Total: total(&fs.ByType), Types: typeRows(&fs.ByType)}
		for _, d := range fs.Damage {
			fj.Damage = append(fj.Damage, d.Error())
		}
		doc.Files = append(doc.Files, fj)
	}
	doc.Destinations = []statsDestJSON{}
	for i := range s.Destinations {
		d := &s.Destinations[i]
		doc.Destinations = append(doc.Destinations, statsDestJSON{Destination: d.Destination, Total: total(&d.ByType), Types: typeRows(&d.ByType)})
	}
	doc.NoDest = typeRows(&s.NoDest)
	doc.Types = typeRows(&s.ByType)
	doc.Total = total(&s.ByType)
	doc.Clean = s.Clean()
	return doc
}

func writeStatsText(w io.Writer, st *codec.Store, s *codec.Stats) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, x codec.SizeStat) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", name, x.Count, x.Total, x.Average(), x.Largest, x.Last)
	}
	header := func(first string) {
		fmt.Fprintf(tw, "%s\tcount\tbytes\taverage\tlargest\tlast\t\n", first)
	}
	fmt.Fprintf(w, "Store %s: %d data files\n\n", st.Dir, len(s.Files))
	header("FILE")
	for i := range s.Files {
		fs := &s.Files[i]
		row(fs.Info.Name, fs.ByType.Sum())
	}
	tw.Flush()
	fmt.Fprintln(w)
	header("DESTINATION")
	for i := range s.Destinations {
		row(safe(s.Destinations[i].Destination), s.Destinations[i].ByType.Sum())
	}
	row("(no destination)", s.NoDest.Sum())
	tw.Flush()
	fmt.Fprintln(w)
	header("COMMAND TYPE")
	for i := range s.ByType {
		if s.ByType[i].Count > 0 {
			row(codec.EntryType(i).String(), s.ByType[i])
		}
	}
	row("TOTAL", s.ByType.Sum())
	tw.Flush()
}

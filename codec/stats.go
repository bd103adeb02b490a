package codec

import "sort"

// SizeStat aggregates record sizes.
type SizeStat struct {
	Count   int64 `json:"count"`
	Total   int64 `json:"totalBytes"`
	Largest int64 `json:"largest"`
	Last    int64 `json:"lastSize"`
}

// Add counts one record of size n (journal order: Last is the latest).
func (s *SizeStat) Add(n int64) {
	s.Count++
	s.Total += n
	if n > s.Largest {
		s.Largest = n
	}
	s.Last = n
}

// Merge adds o, which comes after s in journal order.
func (s *SizeStat) Merge(o SizeStat) {
	if o.Count == 0 {
		return
	}
	s.Count += o.Count
	s.Total += o.Total
	if o.Largest > s.Largest {
		s.Largest = o.Largest
	}
	s.Last = o.Last
}

// Average size, 0 when empty.
func (s SizeStat) Average() int64 {
	if s.Count == 0 {
		return 0
	}
	return s.Total / s.Count
}

// TypeStats is a SizeStat per command type.
type TypeStats [NumEntryTypes]SizeStat

// Sum is the total over all types.
func (t *TypeStats) Sum() SizeStat {
	var s SizeStat
	for i := range t {
		s.Merge(t[i])
	}
	return s
}

func (t *TypeStats) merge(o *TypeStats) {
	for i := range t {
		t[i].Merge(o[i])
	}
}

// FileStats are the statistics of one data file.
type FileStats struct {
	FileSummary
	ByType TypeStats
}

// DestStats are the statistics of one destination over the whole store.
type DestStats struct {
	Destination string // queue://NAME
	ByType      TypeStats
}

// Stats are journal statistics of a store.
type Stats struct {
	Files        []FileStats
	Destinations []DestStats // sorted by qualified name
	NoDest       TypeStats   // commands without a destination (tx, trace, audit, ...)
	ByType       TypeStats
}

// Clean reports whether no file has damage other than a torn tail.
func (s *Stats) Clean() bool {
	for i := range s.Files {
		if !s.Files[i].Clean() {
			return false
		}
	}
	return true
}

type fileStatsPart struct {
	stats  FileStats
	dests  map[string]*TypeStats
	order  []string
	noDest TypeStats
}

// ComputeStats reads every data file (in parallel) and aggregates record
// sizes per file, per destination and per command type.
func ComputeStats(s *Store, opts ReadOptions, workers int) (*Stats, error) {
	out := &Stats{}
	all := map[string]*TypeStats{}
	err := ScanOrdered(s.Files, workers, func(fi FileInfo) (*fileStatsPart, error) {
		p := &fileStatsPart{dests: map[string]*TypeStats{}}
		var key []byte
		sum, err := ScanFile(fi, opts, func(rec Record, c *Command) error {
			n := int64(rec.Loc.Size)
			p.stats.ByType[c.Type].Add(n)
			if c.Dest.HasName || c.Dest.HasType {
				key = append(append(key[:0], c.Dest.Type.Scheme()...), "://"...)
				key = append(key, c.Dest.Name...)
				ts := p.dests[string(key)]
				if ts == nil {
					ts = &TypeStats{}
					k := string(key)
					p.dests[k] = ts
					p.order = append(p.order, k)
				}
				ts[c.Type].Add(n)
			} else {
				p.noDest[c.Type].Add(n)
			}
			return nil
		})
		if fi.ID != s.Files[len(s.Files)-1].ID {
			sum.NotLast()
		}
		p.stats.FileSummary = sum
		return p, err
	}, func(fi FileInfo, p *fileStatsPart) error {
		out.Files = append(out.Files, p.stats)
		out.ByType.merge(&p.stats.ByType)
		out.NoDest.merge(&p.noDest)
		for _, k := range p.order {
			ts := all[k]
			if ts == nil {
				ts = &TypeStats{}
				all[k] = ts
			}
			ts.merge(p.dests[k])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for k, ts := range all {
		out.Destinations = append(out.Destinations, DestStats{Destination: k, ByType: *ts})
	}
	sort.Slice(out.Destinations, func(i, j int) bool { return out.Destinations[i].Destination < out.Destinations[j].Destination })
	return out, nil
}

package difftest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Report formats a seed's result for people: every disagreement with what
// kahafs and the broker say and the workload steps that touched it.
// known is the seed's entry in known.json ("" if none).
func Report(r *Result, known string) string {
	var b strings.Builder
	status := "agrees"
	switch {
	case r.Err != nil:
		status = "could not be compared"
	case len(r.Findings) == 1:
		status = "1 disagreement"
	case len(r.Findings) > 1:
		status = fmt.Sprintf("%d disagreements", len(r.Findings))
	}
	fmt.Fprintf(&b, "=== seed %d: %s", r.Seed, status)
	if known != "" {
		fmt.Fprintf(&b, " (known: %s)", known)
	}
	b.WriteString("\n")
	if r.Workload != nil {
		b.WriteString("workload: " + describeWorkload(r.Workload) + "\n")
	}
	if len(r.Timings) > 0 {
		var ts []string
		for _, t := range r.Timings {
			c := ""
			if t.Cached {
				c = " cached"
			}
			ts = append(ts, fmt.Sprintf("%s %.1fs%s", t.Phase, t.Seconds, c))
		}
		b.WriteString("times: " + strings.Join(ts, ", ") + "\n")
	}
	b.WriteString("store: " + r.Dir + "\n")
	if r.Err != nil {
		b.WriteString("ERROR: " + r.Err.Error() + "\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "[%s | %s]", f.Kind, f.View)
		if f.Where != "" {
			b.WriteString(" " + f.Where)
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "  kahafs: %s\n  broker: %s\n", f.Kahafs, f.Broker)
		for _, d := range f.Detail {
			b.WriteString("  " + d + "\n")
		}
		if f.Explained != "" {
			b.WriteString("  explained: " + f.Explained + "\n")
		}
		if r.Workload != nil && f.Where != "" {
			if st := stepsFor(r.Workload, f.Where); len(st) > 0 {
				b.WriteString("  steps: " + strings.Join(st, "; ") + "\n")
			}
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("broker notes:\n")
		for _, n := range r.Notes {
			b.WriteString("  - " + n + "\n")
		}
	}
	return b.String()
}

func describeWorkload(w *Workload) string {
	c := w.Config
	var segs []string
	for _, s := range w.Segments {
		segs = append(segs, s.End)
	}
	ack := "ack compaction off"
	if c.EnableAckCompaction {
		ack = fmt.Sprintf("ack compaction after %d cycles", c.CompactAcksAfterNoGC)
		if c.CompactAcksIgnoresStoreGrowth {
			ack += " (ignores store growth)"
		}
	}
	gc := "explicit checkpoints"
	if c.PeriodicCheckpoints {
		gc = fmt.Sprintf("periodic checkpoints %d/%d ms", c.CheckpointInterval, c.CleanupInterval)
	}
	var pol []string
	for _, p := range w.Policies {
		var f []string
		if p.PrioritizedMessages {
			f = append(f, "prioritized")
		}
		if p.PersistJMSRedelivered {
			f = append(f, "persistJMSRedelivered")
		}
		pol = append(pol, p.Queue+" "+strings.Join(f, "+"))
	}
	s := fmt.Sprintf("%d steps, broker runs: %s; journal %d KiB, preallocation %s, %s, %s, cleanupOnStop %v",
		len(w.Steps), strings.Join(segs, ", "), c.JournalMaxFileLength/1024, c.PreallocationScope, ack, gc, c.CleanupOnStop)
	if len(pol) > 0 {
		s += "; policies: " + strings.Join(pol, ", ")
	}
	if len(w.Prepared) > 0 {
		s += fmt.Sprintf("; %d XA left prepared", len(w.Prepared))
	}
	if len(w.Rejected) > 0 {
		s += fmt.Sprintf("; %d ack(s) refused by the broker, their steps cut short: %s", len(w.Rejected), strings.Join(w.Rejected, "; "))
	}
	return s
}

// stepsFor lists the workload steps that touched where (a destination, a
// subscription key or an XID), with the restarts.
func stepsFor(w *Workload, where string) []string {
	topic, sub := where, ""
	if i := strings.Index(where, "|"); i >= 0 {
		topic, sub = where[:i], where[i+1:]
	}
	subOf := func(s *SubscriptionRef) bool {
		return s != nil && "topic://"+s.Topic == topic && (sub == "" || s.ClientID+":"+s.SubscriptionName == sub)
	}
	var out []string
	for _, s := range w.Steps {
		touches := s.Dest == where || s.From == where || s.XID == where || s.Dest == topic && strings.HasPrefix(topic, "topic://") ||
			subOf(s.Sub) || subOf(s.Via) || s.Op == "restart" || s.Op == "end"
		if !touches {
			continue
		}
		out = append(out, describeStep(s))
	}
	const max = 30
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("… %d more", len(out)-max))
	}
	return out
}

func describeStep(s Step) string {
	d := fmt.Sprintf("#%d %s", s.N, s.Op)
	switch s.Op {
	case "restart", "end":
		return d + " " + s.How
	}
	if s.Outcome != "" {
		d += " " + s.Outcome
	}
	var parts []string
	if len(s.Messages) > 0 {
		prios := map[int]int{}
		ttl := 0
		for _, m := range s.Messages {
			prios[m.Prio]++
			if m.TTL > 0 {
				ttl++
			}
		}
		p := fmt.Sprintf("sent %d to %s", len(s.Messages), s.Dest)
		if len(prios) > 1 {
			var ks []int
			for k := range prios {
				ks = append(ks, k)
			}
			sort.Ints(ks)
			p += fmt.Sprintf(" (priorities %d..%d)", ks[0], ks[len(ks)-1])
		}
		if ttl > 0 {
			p += fmt.Sprintf(" (%d with a TTL)", ttl)
		}
		parts = append(parts, p)
	}
	if s.Via != nil {
		parts = append(parts, "on "+s.Via.ClientID+"'s connection")
	}
	if s.Receive != nil || len(s.Received) > 0 {
		src := s.From
		if s.Sub != nil {
			src = s.Sub.ClientID + ":" + s.Sub.SubscriptionName
		} else if src == "" {
			src = s.Dest
		}
		p := fmt.Sprintf("received %d from %s, acked %d", len(s.Received), src, len(s.AckedIDs))
		if s.Receive != nil && s.Receive.Ack != "" {
			p += " (" + s.Receive.Ack + ")"
		}
		parts = append(parts, p)
	} else if s.Sub != nil {
		parts = append(parts, s.Sub.ClientID+":"+s.Sub.SubscriptionName)
	}
	if s.Error != "" {
		parts = append(parts, "ERROR "+s.Error)
	}
	if s.Rejected != "" {
		parts = append(parts, "cut short, the broker refused an ack: "+s.Rejected)
	}
	if len(parts) > 0 {
		d += ": " + strings.Join(parts, ", ")
	}
	return d
}

// Summary formats the table of a run: seeds run, seeds agreeing, and
// disagreements by kind (findings, and seeds with at least one).
func Summary(rs []*Result, known map[int64]string) string {
	var b strings.Builder
	agree, errs, knownN := 0, 0, 0
	findings := map[Kind]int{}
	seeds := map[Kind][]int64{}
	explained := map[Kind]int{}
	for _, r := range rs {
		if r.Err != nil {
			errs++
		}
		if r.Agrees() {
			agree++
		}
		if _, ok := known[r.Seed]; ok && !r.Agrees() {
			knownN++
		}
		seen := map[Kind]bool{}
		for _, f := range r.Findings {
			findings[f.Kind]++
			if f.Explained != "" {
				explained[f.Kind]++
			}
			if !seen[f.Kind] {
				seen[f.Kind] = true
				seeds[f.Kind] = append(seeds[f.Kind], r.Seed)
			}
		}
	}
	fmt.Fprintf(&b, "seeds run: %d, agreeing: %d, disagreeing: %d (known: %d), could not be compared: %d\n",
		len(rs), agree, len(rs)-agree-errs, knownN, errs)
	fmt.Fprintf(&b, "%-34s %8s %9s %6s  %s\n", "kind", "findings", "explained", "seeds", "seeds with it")
	for _, k := range Kinds {
		fmt.Fprintf(&b, "%-34s %8d %9d %6d  %s\n", k, findings[k], explained[k], len(seeds[k]), seedList(seeds[k]))
	}
	return b.String()
}

func seedList(s []int64) string {
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var parts []string
	for i, n := range s {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(s)-20))
			break
		}
		parts = append(parts, fmt.Sprint(n))
	}
	return strings.Join(parts, ",")
}

// ResultsJSON is the machine-readable form of a run (KAHAFS_DIFF_RESULTS):
// per seed whether it agrees, the error, and every finding.
func ResultsJSON(rs []*Result) ([]byte, error) {
	type finding struct {
		Kind      Kind     `json:"kind"`
		View      string   `json:"view"`
		Where     string   `json:"where,omitempty"`
		Kahafs    string   `json:"kahafs"`
		Broker    string   `json:"broker"`
		Detail    []string `json:"detail,omitempty"`
		Explained string   `json:"explained,omitempty"`
	}
	type seed struct {
		Seed     int64     `json:"seed"`
		Agrees   bool      `json:"agrees"`
		Error    string    `json:"error,omitempty"`
		Dir      string    `json:"dir"`
		Findings []finding `json:"findings"`
		Notes    []string  `json:"notes,omitempty"`
		Timings  []Timing  `json:"timings"`
	}
	out := []seed{}
	for _, r := range rs {
		s := seed{Seed: r.Seed, Agrees: r.Agrees(), Dir: r.Dir, Findings: []finding{}, Notes: r.Notes, Timings: r.Timings}
		if r.Err != nil {
			s.Error = r.Err.Error()
		}
		for _, f := range r.Findings {
			s.Findings = append(s.Findings, finding{f.Kind, f.View, f.Where, f.Kahafs, f.Broker, f.Detail, f.Explained})
		}
		out = append(out, s)
	}
	return json.MarshalIndent(out, "", "  ")
}

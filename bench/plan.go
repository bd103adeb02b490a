package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// stepPlan times `kahafs plan` as the holders row times holders (cold,
// --no-cache): issue 23's target is at most twice the time of holders.
const stepPlan = "plan"

// targetPlanRatio: plan's time over holders' (issue 23).
const targetPlanRatio = 2.0

func (b *bench) planStep() []*result {
	r := &result{step: stepPlan, command: "`kahafs plan STORE --json --no-cache`"}
	if !b.needs(r, "plan") {
		return []*result{r}
	}
	out := filepath.Join(b.work, "plan.json")
	b.repeat(r, func() (child, error) {
		f, err := os.Create(out)
		if err != nil {
			return child{}, err
		}
		defer f.Close()
		return b.runChild(f, nil, b.bin, []string{"plan", b.cs.store, "--json", "--max-file-length", b.fileLengthArg(), "--no-cache"})
	})
	if r.err == nil {
		var doc struct {
			Actions []json.RawMessage `json:"actions"`
		}
		if raw, err := os.ReadFile(out); err != nil || json.Unmarshal(raw, &doc) != nil {
			r.note("output not understood")
		} else {
			r.note("%d actions ranked", len(doc.Actions))
		}
	}
	return []*result{r}
}

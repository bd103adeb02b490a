package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/require"
)

// planCheck is what brokerkit PlanCheck reports.
type planCheck struct {
	Deleted []int32 `json:"deleted"`
	Writes  struct {
		Records int64 `json:"records"`
		Bytes   int64 `json:"bytes"`
	} `json:"writes"`
}

// runPlanCheck does the actions (PlanCheck's arguments) with the broker's
// own classes on a copy of the store, lets its stop-time cleanup run and
// returns what it deleted and wrote.
func runPlanCheck(t *testing.T, storeDir string, maxLen int, args []string) planCheck {
	t.Helper()
	cp := brokertest.CopyStore(t, storeDir)
	out := filepath.Join(t.TempDir(), "plancheck.json")
	brokertest.Run(t, "PlanCheck", append([]string{cp, out, "--max-file-length", fmt.Sprint(maxLen)}, args...)...)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var pc planCheck
	require.NoError(t, json.Unmarshal(raw, &pc))
	return pc
}

// checkArgs are PlanCheck's arguments for a.
func checkArgs(a Action) []string {
	switch a.Action {
	case Purge:
		return []string{Purge, a.Target.Destination}
	case DeleteSubscription:
		return []string{DeleteSubscription, a.Target.Destination, a.Target.ClientID, a.Target.SubscriptionName}
	case Commit, Rollback:
		return []string{a.Action, a.Target.Transaction}
	}
	return nil
}

// afterwards is what the plan says the cleanup deletes after an action:
// what it deletes anyway and what the action frees, less what it keeps.
func afterwards(base []int32, frees Frees, keeps *Frees) []int32 {
	set := map[int32]bool{}
	for _, id := range base {
		set[id] = true
	}
	for _, id := range frees.Files {
		set[id] = true
	}
	if keeps != nil {
		for _, id := range keeps.Files {
			delete(set, id)
		}
	}
	out := []int32{}
	for id := range set {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestPlanBrokerAgrees does every action of the plan of the real-broker
// fixtures with the broker's own classes (purge the queue, delete the
// subscription, commit or roll back the prepared transaction), and all of
// the combination together, each on a copy; the files the broker's
// cleanup then deletes must be exactly those the plan says, and the
// records the action wrote the sizes the plan estimated.
func TestPlanBrokerAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the real broker")
	}
	brokertest.Require(t)
	for _, name := range []string{"queues", "topics", "tx", "messages", "crash", "ackcompact", "ackfwd-chain", "priority"} {
		fx := brokertest.Named(t, name)
		t.Run(name, func(t *testing.T) {
			maxLen := fx.Expected.MaxFileLength
			l, err := store.Locate(fx.StoreDir)
			require.NoError(t, err)
			an, err := store.Analyse(l, store.Options{MaxFileLength: int64(maxLen)})
			require.NoError(t, err)
			doc, err := Make(fx.StoreDir, an.Graph)
			require.NoError(t, err)
			base := doc.FreedAnyway.Files
			pc := runPlanCheck(t, fx.StoreDir, maxLen, []string{"none"})
			require.Equal(t, base, nonNil(pc.Deleted), "no action: what the cleanup deletes anyway")
			checked := 0
			var all []string
			for i, a := range doc.Actions {
				args := checkArgs(a)
				if args == nil {
					continue
				}
				if doc.Combined != nil && contains(doc.Combined.Actions, i) {
					all = append(all, args...)
				}
				pc := runPlanCheck(t, fx.StoreDir, maxLen, args)
				require.Equal(t, afterwards(base, a.Frees, a.Keeps), nonNil(pc.Deleted), "%v: the files the broker's cleanup deleted", args)
				var est int64
				for _, w := range a.w {
					est += int64(w.Size)
				}
				require.Equal(t, a.Writes.Records, pc.Writes.Records, "%v: records written", args)
				// an estimate: the numbers in a message id are marshalled
				// in as few bytes as they need
				if est == 0 {
					require.Zero(t, pc.Writes.Bytes, "%v: record bytes", args)
				} else {
					require.InEpsilon(t, pc.Writes.Bytes, est, 0.01, "%v: the estimated record bytes", args)
				}
				checked++
			}
			if doc.Combined != nil {
				pc := runPlanCheck(t, fx.StoreDir, maxLen, all)
				require.Equal(t, afterwards(base, doc.Combined.Frees, doc.Combined.Keeps), nonNil(pc.Deleted), "all together %v", all)
			}
			t.Logf("%s: %d actions and the combination agree with the broker", name, checked)
		})
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

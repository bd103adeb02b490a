package fsnode

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/plan"
	"github.com/stretchr/testify/require"
)

// TestPlanAtRoot: plan.json at the root is `kahafs plan --json` of the
// store, plan its text; a queue's stats.json and a subscription's
// info.json say what the plan's purge and delete-subscription free.
func TestPlanAtRoot(t *testing.T) {
	for _, name := range []string{"queues", "topics"} {
		fx := brokertest.Named(t, name)
		s := openFixture(t, fx)
		want, err := plan.Make(fx.StoreDir, s.graph)
		require.NoError(t, err)
		raw, err := s.ReadFile(namePlanJSON)
		require.NoError(t, err)
		var got plan.Doc
		require.NoError(t, json.Unmarshal(raw, &got))
		require.Equal(t, len(want.Actions), len(got.Actions), name)
		for i := range want.Actions {
			require.Equal(t, want.Actions[i].Action, got.Actions[i].Action)
			require.Equal(t, want.Actions[i].Target, got.Actions[i].Target)
			require.Equal(t, want.Actions[i].Frees, got.Actions[i].Frees)
		}
		text, err := s.ReadFile(namePlan)
		require.NoError(t, err)
		require.Equal(t, strings.Join(want.Text(), "\n")+"\n", string(text))

		for _, a := range want.Actions {
			var p string
			switch a.Action {
			case plan.Purge:
				p = "by-destination/queue/" + EscapeName(strings.TrimPrefix(a.Target.Destination, "queue://")) + "/stats.json"
			case plan.DeleteSubscription:
				p = "by-destination/topic/" + EscapeName(strings.TrimPrefix(a.Target.Destination, "topic://")) + "/subscriptions/" +
					EscapeName(a.Target.ClientID+":"+a.Target.SubscriptionName) + "/info.json"
			default:
				continue
			}
			raw, err := s.ReadFile(p)
			require.NoError(t, err, p)
			var doc struct {
				ResolvingFrees *plan.Resolved `json:"resolvingFrees"`
			}
			require.NoError(t, json.Unmarshal(raw, &doc), p)
			require.NotNil(t, doc.ResolvingFrees, p)
			require.Equal(t, a.Action, doc.ResolvingFrees.Action, p)
			require.Equal(t, a.Frees.Files, doc.ResolvingFrees.Files, p)
			require.Equal(t, a.Frees.Bytes, doc.ResolvingFrees.Bytes, p)
		}
	}
}

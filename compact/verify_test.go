package compact

import (
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/require"
)

// TestVerifyCatchesBodies writes the compacted journal of fixtures, checks
// that verification accepts it, and that it rejects a message whose bytes
// or priority changed on the way and one that was never written.
func TestVerifyCatchesBodies(t *testing.T) {
	checked := 0
	for _, fx := range brokertest.Fixtures(t) {
		st, og, err := load(fx.StoreDir, maxLen(fx))
		require.NoError(t, err, fx.Name)
		if og.Damaged() {
			continue
		}
		p, err := plan(st, og, false)
		require.NoError(t, err, fx.Name)
		if p.counts.Messages == 0 {
			continue
		}
		dir := t.TempDir()
		pf := p.read(st)
		_, _, err = p.write(pf, dir, Options{MaxFileLength: int64(maxLen(fx)), crash: func(string) {}})
		pf.close()
		require.NoError(t, err, fx.Name)
		_, ng, after, err := loadWithBodies(dir, int64(maxLen(fx)), 0, nil)
		require.NoError(t, err, fx.Name)
		require.NoError(t, verify(og, p.bodies, ng, after, false), fx.Name)
		require.Len(t, p.bodies, p.counts.Messages, fx.Name)

		// One message of the new journal, changed in each way.
		var loc codec.Location
		for _, d := range ng.Destinations() {
			if len(d.Messages) > 0 {
				loc = d.Messages[len(d.Messages)-1].Loc
				break
			}
		}
		orig := after[loc]
		for name, change := range map[string]func(*bodySum){
			"one byte":         func(b *bodySum) { b.sum[7] ^= 1 },
			"priority":         func(b *bodySum) { b.prio++ },
			"priority support": func(b *bodySum) { b.supported = !b.supported },
		} {
			b := orig
			change(&b)
			after[loc] = b
			require.ErrorContains(t, verify(og, p.bodies, ng, after, false), "differs after compaction", "%s: %s", fx.Name, name)
		}
		after[loc] = orig
		delete(after, loc)
		require.ErrorContains(t, verify(og, p.bodies, ng, after, false), "differs after compaction", fx.Name)
		after[loc] = orig

		for k, v := range p.bodies {
			delete(p.bodies, k)
			require.ErrorContains(t, verify(og, p.bodies, ng, after, false), "was not written", fx.Name)
			p.bodies[k] = v
			break
		}
		require.NoError(t, verify(og, p.bodies, ng, after, false), fx.Name)
		checked++
	}
	require.Greater(t, checked, 2, "fixtures with messages to move")
}

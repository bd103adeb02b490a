package compact

import (
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/require"
)

// TestVerifyCatchesBodies writes the compacted journal of fixtures, checks
// that verification accepts it, and that it rejects a journal in which one
// message was written wrong (its bytes, priority, priority flag, id or
// destination changed on the way) or not at all, and origins that are not
// those of what was written.
func TestVerifyCatchesBodies(t *testing.T) {
	checked := 0
	for _, fx := range brokertest.Fixtures(t) {
		st, og, err := load(fx.StoreDir, maxLen(fx))
		require.NoError(t, err, fx.Name)
		if og.Damaged() {
			continue
		}
		want := stateOf(og)
		// write writes the compacted journal with tamper applied to its
		// last message, and returns the plan and the journal's directory.
		write := func(tamper func(c *codec.Command) bool) (*compactPlan, string) {
			p, err := plan(st, og, false)
			require.NoError(t, err, fx.Name)
			dir := t.TempDir()
			pf := p.read(st)
			defer pf.close()
			seen := 0
			opts := Options{MaxFileLength: int64(maxLen(fx)), crash: func(string) {}}
			if tamper != nil {
				opts.tamper = func(c *codec.Command) bool {
					seen++
					if seen == p.counts.Messages {
						return tamper(c)
					}
					return true
				}
			}
			_, _, err = p.write(pf, dir, opts)
			require.NoError(t, err, fx.Name)
			return p, dir
		}
		check := func(p *compactPlan, dir string) error {
			_, ng, err := replayChecked(dir, int64(maxLen(fx)), p.expected(st), nil)
			if err != nil {
				return err
			}
			return verify(want, ng)
		}

		p, dir := write(nil)
		if p.counts.Messages == 0 {
			continue
		}
		require.NoError(t, check(p, dir), fx.Name)
		require.Equal(t, p.messages, p.origins.len()+p.placeholders.len(), fx.Name)
		require.GreaterOrEqual(t, p.origins.len(), p.counts.Messages, fx.Name)

		for name, tamper := range map[string]func(c *codec.Command) bool{
			"one byte": func(c *codec.Command) bool {
				c.Message = append([]byte(nil), c.Message...)
				c.Message[len(c.Message)/2] ^= 1
				return true
			},
			"priority":         func(c *codec.Command) bool { c.Priority++; return true },
			"priority support": func(c *codec.Command) bool { c.PrioritySupported = !c.PrioritySupported; return true },
			"id": func(c *codec.Command) bool {
				c.MessageID = append(append([]byte(nil), c.MessageID...), '0')
				return true
			},
			"destination": func(c *codec.Command) bool {
				c.Dest.Name = append(append([]byte(nil), c.Dest.Name...), 'X')
				return true
			},
		} {
			p, dir := write(tamper)
			require.ErrorContains(t, check(p, dir), "differs after compaction", "%s: %s", fx.Name, name)
		}
		p, dir = write(func(*codec.Command) bool { return false })
		require.ErrorIs(t, check(p, dir), ErrVerify, "%s: a message left out", fx.Name)

		// What the write took the messages from, wrong or one short.
		p, dir = write(nil)
		if o := p.origins.chunks[0]; len(o) >= 2 {
			o[0], o[1] = o[1], o[0]
			require.ErrorContains(t, check(p, dir), "differs after compaction", fx.Name)
		}
		p, dir = write(nil)
		k := len(p.origins.chunks) - 1
		p.origins.chunks[k] = p.origins.chunks[k][:len(p.origins.chunks[k])-1]
		p.origins.n--
		require.ErrorContains(t, check(p, dir), "differs after compaction", fx.Name)
		p, dir = write(nil)
		p.messages--
		require.ErrorContains(t, check(p, dir), "differs after compaction", fx.Name)
		checked++
	}
	require.Greater(t, checked, 2, "fixtures with messages to move")
}

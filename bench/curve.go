package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The memory curve (issue 15): peak RSS against pending messages, one
// store per size of the same shape, held against the budget of
// 64 MiB + 100 B per pending message (rssBase, rssPerPending).

// curvePoint is one store of the curve.
type curvePoint struct {
	size             string
	pending          int64
	bytes            int64
	holders, mountAt int64 // peak RSS in bytes, 0 when unknown
	holdersWall      string
	err              error
}

func (p curvePoint) budget() int64 { return rssBase + rssPerPending*p.pending }

// memoryCurve measures `holders --no-cache` (its peak RSS) and the mount
// (its peak RSS when it first answers) on a store of each size.
func memoryCurve(root string, o options, stdout, stderr io.Writer) error {
	var points []curvePoint
	for _, size := range strings.Split(o.curve, ",") {
		oo := o
		oo.size, oo.runs, oo.steps = strings.TrimSpace(size), 1, stepHolders+","+stepMount
		cfg, err := oo.genConfig()
		if err != nil {
			return err
		}
		cs, err := ensureStore(root, o.cache, cfg, o.regen, stderr)
		if err != nil {
			return err
		}
		if err := o.indexed(root, cs, stderr); err != nil {
			return err
		}
		points = append(points, measurePoint(root, cs, oo, stderr))
	}
	fmt.Fprint(stdout, curveReport(o, points))
	return nil
}

func measurePoint(root string, cs *cachedStore, o options, log io.Writer) curvePoint {
	p := curvePoint{size: o.size, pending: cs.man.Pending, bytes: cs.man.Bytes}
	b, err := newBench(root, cs, o, log)
	if err != nil {
		p.err = err
		return p
	}
	defer b.close()
	h := b.holdersStep()[0]
	if !h.ok() {
		p.err = fmt.Errorf("holders: %v %s", h.err, h.skipped)
		return p
	}
	p.holders, p.holdersWall = h.rss, seconds(h.wall)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return p // the mount's column says unknown
	}
	mnt := filepath.Join(b.work, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		p.err = err
		return p
	}
	s, err := b.startMount(mnt, "--no-cache")
	if err != nil {
		p.err = err
		return p
	}
	p.mountAt = s.hwmAtReady
	if _, err := s.stop(mnt); err != nil {
		p.err = err
	}
	return p
}

func curveReport(o options, points []curvePoint) string {
	var sb strings.Builder
	index := "each store with the index a real broker wrote for it (adopted)"
	if o.bare {
		index = "each store without an index (`-bare`)"
	}
	fmt.Fprintf(&sb, "Memory curve (`-shape %s -curve %s`), %s: peak RSS against pending messages, %s; budget 64 MiB + 100 B per pending message.\n\n", o.shape, o.curve, machine(), index)
	sb.WriteString("| store | pending | holders --no-cache | mount, at its first answer | budget | holders, bytes per extra pending message | within |\n|---|---:|---:|---:|---:|---:|---|\n")
	for i, p := range points {
		if p.err != nil {
			fmt.Fprintf(&sb, "| %s | %d | failed: %v | | | | |\n", mib(p.bytes), p.pending, p.err)
			continue
		}
		per := "—" // the slope from the point before
		if q := points[max(i-1, 0)]; i > 0 && q.err == nil && p.pending > q.pending {
			per = fmt.Sprintf("%.0f B", float64(p.holders-q.holders)/float64(p.pending-q.pending))
		}
		within := "yes"
		if p.holders > p.budget() || p.mountAt > p.budget() {
			within = "no"
		}
		fmt.Fprintf(&sb, "| %s | %s | %s (%s) | %s | %s | %s | %s |\n", mib(p.bytes), thousands(p.pending),
			mibOrUnknown(p.holders), p.holdersWall, mibOrUnknown(p.mountAt), mibOrUnknown(p.budget()), per, within)
	}
	return sb.String()
}

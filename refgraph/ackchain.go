package refgraph

import "slices"

// The ack chain. A data file A that holds acks for messages in a data
// file B is kept as long as B is (the broker's ack-message-file map, the
// last step of its cleanup): deleting A would let a replay deliver B's
// messages again. So B keeps A, and A may in turn keep a file C holding
// acks for A's messages: a chain of files none of which holds anything
// but acks, started by the file B whose own holders (pending messages, a
// subscription, the write position, ...) pin it.
//
// ackChains lays the map out on the files: File.AcksFor (the edges A →
// B), File.AckedBy (the reverse) and File.ChainStart (for a file kept by
// its acks, the files that start its chains).

// AckMap returns the ack-message-file map the emulated cleanup saw: for
// each data file holding acks (the key), the files holding the messages
// they acknowledge, as the broker records them (recordAckMessageReferenceLocation;
// the index's reloaded map plus what the replay recorded). Values may
// name files that no longer exist. The map is shared: do not modify it.
func (g *Graph) AckMap() map[int32][]int32 {
	if g.cleanIn == nil {
		return nil
	}
	return g.cleanIn.ackMap
}

// ackChains sets AcksFor, AckedBy and ChainStart of files (sorted by id)
// from the ack map acks.
func ackChains(files []*File, byID map[int32]*File, acks map[int32][]int32) {
	for _, f := range files {
		f.AcksFor, f.AckedBy, f.ChainStart = nil, nil, nil
	}
	for _, a := range files {
		for _, b := range acks[a.ID] {
			fb, ok := byID[b]
			if !ok || b == a.ID || slices.Contains(a.AcksFor, b) {
				continue
			}
			a.AcksFor = append(a.AcksFor, b)
			fb.AckedBy = append(fb.AckedBy, a.ID)
		}
		slices.Sort(a.AcksFor)
	}
	for _, f := range files {
		slices.Sort(f.AckedBy)
	}
	for _, f := range files {
		if !f.Pinned || !keptByAcks(f) {
			continue
		}
		// The files reachable over edges to kept files, up to those
		// kept by something else than acks.
		seen := map[int32]bool{f.ID: true}
		queue := []*File{f}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for _, id := range x.AcksFor {
				y := byID[id]
				if seen[id] || !y.Pinned {
					continue
				}
				seen[id] = true
				if startsChain(y) {
					f.ChainStart = append(f.ChainStart, id)
					continue
				}
				queue = append(queue, y)
			}
		}
		slices.Sort(f.ChainStart)
	}
}

// keptByAcks: one of f's holders is its acks.
func keptByAcks(f *File) bool {
	return slices.ContainsFunc(f.Reasons, func(r Reason) bool { return r.Kind == KindAcks })
}

// startsChain: f is kept by a holder other than its acks.
func startsChain(f *File) bool {
	return slices.ContainsFunc(f.Reasons, func(r Reason) bool { return r.Kind != KindAcks })
}

// Package plan is the exact unpin plan of a store: what `kahafs plan`
// prints and the mount's plan and plan.json. It ranks what an admin can do
// (purge a queue, delete a durable subscription, commit or roll back a
// prepared transaction, wait for the broker's ack compaction, compact
// offline) by what each frees at the broker's next cleanup: the files are
// not estimated but computed by running refgraph's cleanup emulation again
// with that holder resolved (Graph.CleanupAfter), the records the action
// writes first appended before it. Only the sizes of those records are
// estimates (from the sizes of the records a 5.17.2 broker writes).
package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/refgraph"
)

// Action names, as in the JSON.
const (
	Purge              = "purge"
	DeleteSubscription = "delete-subscription"
	Commit             = "commit"
	Rollback           = "rollback"
	WaitAckCompaction  = "wait-ack-compaction"
	Compact            = "compact"
)

// Target is what an action is done to.
type Target struct {
	Destination      string `json:"destination,omitempty"`
	ClientID         string `json:"clientId,omitempty"`
	SubscriptionName string `json:"subscriptionName,omitempty"`
	Transaction      string `json:"transaction,omitempty"`
}

// Frees is data files (ids) and the disk space they take.
type Frees struct {
	Files []int32 `json:"files"`
	Bytes int64   `json:"bytes"`
}

// Writes is what an action appends to the journal before anything is
// freed: Records records of Bytes bytes in all (batch headers included).
// Estimate: the sizes are estimated from the records a broker writes.
type Writes struct {
	Bytes    int64 `json:"bytes"`
	Records  int64 `json:"records"`
	Estimate bool  `json:"estimate"`
}

// Action is one thing an admin can do and what it gives back.
type Action struct {
	Action string `json:"action"`
	Target Target `json:"target"`
	// Frees: the files the next cleanup deletes because of the action,
	// beyond those it deletes anyway (Doc.FreedAnyway).
	Frees  Frees  `json:"frees"`
	Writes Writes `json:"writes"`
	// Keeps: files the next cleanup deletes anyway that it keeps after
	// the action (the oldest candidate moved: a subscription with nothing
	// pending is no longer rewritten; the action's acks refer to kept
	// files).
	Keeps *Frees `json:"keeps,omitempty"`
	// Messages the action removes or decides (pending, in doubt).
	Messages int64 `json:"messages,omitempty"`
	// Holds: the files the holder keeps; HeldBy: when the action frees
	// none of them, what else keeps each ("db-9.log: …").
	Holds  []int32  `json:"holds,omitempty"`
	HeldBy []string `json:"heldBy,omitempty"`
	// Note says how the numbers were found when not by the emulation.
	Note string `json:"note,omitempty"`

	ref refgraph.Action
	w   []refgraph.Write
}

// Combined is what several actions free together: Method "greedy", the
// combination that frees the most with the least written, found greedily
// (combine): from every purge and subscription deletion and each prepared
// transaction decided the way that frees more alone (rolled back on a
// tie), the actions are left out, the one that writes most first, while
// the others free as much without it, each step the cleanup emulation run
// again.
type Combined struct {
	Method  string `json:"method"`
	Actions []int  `json:"actions"` // indexes in Doc.Actions
	Frees   Frees  `json:"frees"`
	Keeps   *Frees `json:"keeps,omitempty"`
	Writes  Writes `json:"writes"`
}

// keeps are the files of base (deleted anyway) that gc (after an action)
// keeps.
func keeps(base, gc []int32, sz sizes) *Frees {
	k := minus(base, gc)
	if len(k) == 0 {
		return nil
	}
	return &Frees{Files: k, Bytes: sz.of(k)}
}

// Doc is the plan of one store.
type Doc struct {
	// FreedAnyway: what the next cleanup deletes with no action.
	FreedAnyway Frees     `json:"freedAnyway"`
	Actions     []Action  `json:"actions"`
	Combined    *Combined `json:"combined,omitempty"`
	// Pinned: the files the next cleanup keeps.
	Pinned Frees `json:"pinned"`
	// IfIndexDeleted: what deleting db.data (to rebuild the index, an
	// action not to take) loses of each durable subscription's pending
	// messages (refgraph RebuildLoss).
	IfIndexDeleted []refgraph.RebuildLoss `json:"ifIndexDeleted,omitempty"`
}

// sizes are the disk space of each data file of a store.
type sizes map[int32]int64

// existing are the ids of files the store has now: not those an action's
// own writes create (the same cleanup may delete them again).
func (s sizes) existing(ids []int32) []int32 {
	var out []int32
	for _, id := range ids {
		if _, ok := s[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

func (s sizes) of(ids []int32) int64 {
	var n int64
	for _, id := range ids {
		n += s[id]
	}
	return n
}

// Resolver runs the cleanup emulation of one store with holders
// resolved: what Make ranks, and what the mount's stats.json and
// info.json say resolving a destination or a subscription frees.
type Resolver struct {
	g    *refgraph.Graph
	sz   sizes
	base []int32
}

// NewResolver is the Resolver of the store in dir, whose replay graph is
// g (the files' disk space is read from dir).
func NewResolver(dir string, g *refgraph.Graph) *Resolver {
	r := &Resolver{g: g, sz: sizes{}, base: g.GCCandidates()}
	for _, f := range g.Files() {
		r.sz[f.ID] = allocated(filepath.Join(dir, f.Name), f.Size)
	}
	return r
}

// frees is what the next cleanup deletes after refs (writing ws first)
// beyond what it deletes anyway, and what it deletes anyway but keeps
// after them.
func (r *Resolver) frees(refs []refgraph.Action, ws []refgraph.Write) (Frees, *Frees, error) {
	gc, err := r.g.CleanupAfter(refs, ws)
	if err != nil {
		return Frees{}, nil, err
	}
	f := nonNil(r.sz.existing(minus(gc, r.base)))
	return Frees{Files: f, Bytes: r.sz.of(f)}, keeps(r.base, gc, r.sz), nil
}

// Resolved is what resolving one holder frees at the next cleanup (the
// mount's "resolvingFrees"): Action names how (purge, delete-subscription;
// for a topic, delete-subscription of every subscription).
type Resolved struct {
	Action string  `json:"action"`
	Files  []int32 `json:"files"`
	Bytes  int64   `json:"bytes"`
	Keeps  *Frees  `json:"keeps,omitempty"`
}

// Destination is what purging queue d frees, or for a topic deleting all
// its durable subscriptions.
func (r *Resolver) Destination(d *refgraph.Destination) (Resolved, error) {
	if !d.IsTopic() {
		a := purgeAction(d)
		f, k, err := r.frees([]refgraph.Action{a.ref}, a.w)
		return Resolved{Action: Purge, Files: f.Files, Bytes: f.Bytes, Keeps: k}, err
	}
	var refs []refgraph.Action
	var ws []refgraph.Write
	for _, s := range d.Subscriptions {
		a := subscriptionAction(s)
		refs, ws = append(refs, a.ref), append(ws, a.w...)
	}
	f, k, err := r.frees(refs, ws)
	return Resolved{Action: DeleteSubscription, Files: f.Files, Bytes: f.Bytes, Keeps: k}, err
}

// Subscription is what deleting durable subscription s frees.
func (r *Resolver) Subscription(s *refgraph.Subscription) (Resolved, error) {
	a := subscriptionAction(s)
	f, k, err := r.frees([]refgraph.Action{a.ref}, a.w)
	return Resolved{Action: DeleteSubscription, Files: f.Files, Bytes: f.Bytes, Keeps: k}, err
}

// Make is the plan of the store in dir, whose replay graph is g.
func Make(dir string, g *refgraph.Graph) (Doc, error) {
	r := NewResolver(dir, g)
	sz, base := r.sz, r.base
	doc := Doc{FreedAnyway: Frees{Files: nonNil(base), Bytes: sz.of(base)}, Actions: []Action{}, IfIndexDeleted: g.RebuildLosses()}
	var pinned []int32
	for _, f := range g.Files() {
		if f.Pinned {
			pinned = append(pinned, f.ID)
		}
	}
	doc.Pinned = Frees{Files: nonNil(pinned), Bytes: sz.of(pinned)}

	acts := candidates(g)
	for i := range acts {
		a := &acts[i]
		var err error
		a.Frees, a.Keeps, err = r.frees([]refgraph.Action{a.ref}, a.w)
		if err != nil {
			return Doc{}, err
		}
		if len(a.Holds) > 0 && !anyIn(a.Holds, a.Frees.Files) {
			a.HeldBy = heldBy(g, a)
		}
	}
	// the combination that frees the most with the least written (none
	// when no action frees anything)
	var comb *Combined
	if all := everyAction(acts); len(all) > 0 {
		var err error
		if comb, err = r.combine(acts, all); err != nil {
			return Doc{}, err
		}
		if len(comb.Actions) == 0 {
			comb = nil
		}
	}
	extra := []Action{}
	if kept := g.KeptForAcks(); len(kept) > 0 {
		extra = append(extra, Action{Action: WaitAckCompaction, Frees: Frees{Files: kept, Bytes: sz.of(kept)},
			Writes: Writes{Estimate: true},
			Note:   "files the next cleanup keeps only for their acks: with enableAckCompaction (default) the broker forwards the acks of the oldest such file to a new file after compactAcksAfterNoGC (default 10) cleanups that deleted nothing, one file at a time; an upper bound, not emulated, and it writes a copy of the acks first"})
	}
	extra = append(extra, compactAction(g, sz))
	doc.Actions = append(acts, extra...)
	// sorted by bytes freed, most first; then by action and target
	order := make([]int, len(doc.Actions))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool {
		return doc.Actions[order[x]].Frees.Bytes > doc.Actions[order[y]].Frees.Bytes
	})
	sorted := make([]Action, len(order))
	pos := make([]int, len(order))
	for k, i := range order {
		sorted[k] = doc.Actions[i]
		pos[i] = k
	}
	doc.Actions = sorted
	if comb != nil {
		for k, i := range comb.Actions {
			comb.Actions[k] = pos[i]
		}
		sort.Ints(comb.Actions)
		doc.Combined = comb
	}
	return doc, nil
}

// everyAction is every action of acts once: every purge and subscription
// deletion, each prepared transaction decided the way that frees more
// alone (rolled back on a tie). Indexes in acts, ascending.
func everyAction(acts []Action) []int {
	best := map[string]int{}
	var all []int
	for i, a := range acts {
		if a.ref.Kind != refgraph.ActCommit && a.ref.Kind != refgraph.ActRollback {
			all = append(all, i)
			continue
		}
		j, ok := best[a.Target.Transaction]
		if !ok || a.Frees.Bytes > acts[j].Frees.Bytes || a.Frees.Bytes == acts[j].Frees.Bytes && a.ref.Kind == refgraph.ActRollback {
			best[a.Target.Transaction] = i
		}
	}
	for _, i := range best {
		all = append(all, i)
	}
	sort.Ints(all)
	return all
}

// refsOf are the refgraph actions of acts[i] for i in set, and the
// records they write.
func refsOf(acts []Action, set []int) ([]refgraph.Action, []refgraph.Write) {
	return appendRefs(nil, nil, acts, set)
}

// appendRefs is refsOf appended to refs[:0] and ws[:0]: the greedy
// combination's trials reuse one array of the writes (a purge writes an
// ack per message: millions of writes a trial on a big store).
func appendRefs(refs []refgraph.Action, ws []refgraph.Write, acts []Action, set []int) ([]refgraph.Action, []refgraph.Write) {
	n := 0
	for _, i := range set {
		n += len(acts[i].w)
	}
	refs, ws = slices.Grow(refs[:0], len(set)), slices.Grow(ws[:0], n)
	for _, i := range set {
		refs = append(refs, acts[i].ref)
		ws = append(ws, acts[i].w...)
	}
	return refs, ws
}

// net is what a combination gives back: the disk space of the files it
// frees less that of the files the cleanup deletes anyway that it keeps.
func net(f Frees, k *Frees) int64 {
	if k == nil {
		return f.Bytes
	}
	return f.Bytes - k.Bytes
}

// combine is the combination of the actions all (indexes in acts) that
// frees the most with the least written, greedily: every one of them
// together first, then each left out in turn, the one that writes most
// first (then the one that frees least alone, then by index), when the
// others give back as much without it (net: freed less kept), each trial
// a run of the cleanup emulation. Its Actions are indexes in acts.
func (r *Resolver) combine(acts []Action, all []int) (*Combined, error) {
	in := append([]int(nil), all...)
	refs, ws := refsOf(acts, in)
	f, k, err := r.frees(refs, ws)
	if err != nil {
		return nil, err
	}
	cur := net(f, k)
	order := append([]int(nil), all...)
	sort.SliceStable(order, func(x, y int) bool {
		a, b := &acts[order[x]], &acts[order[y]]
		if a.Writes.Bytes != b.Writes.Bytes {
			return a.Writes.Bytes > b.Writes.Bytes
		}
		return a.Frees.Bytes < b.Frees.Bytes
	})
	// until a whole pass leaves none out: then leaving out any one of
	// them gives back less
	tried := map[int]bool{} // kept in the last pass that left one out
	for changed := true; changed; {
		changed = false
		for _, drop := range order {
			if !slices.Contains(in, drop) || tried[drop] {
				continue
			}
			rest := slices.DeleteFunc(slices.Clone(in), func(i int) bool { return i == drop })
			rf := Frees{Files: []int32{}}
			var rk *Frees
			if len(rest) > 0 {
				refs, ws = appendRefs(refs, ws, acts, rest)
				if rf, rk, err = r.frees(refs, ws); err != nil {
					return nil, err
				}
			}
			if n := net(rf, rk); n >= cur {
				in, f, k, cur = rest, rf, rk, n
				changed = true
				clear(tried)
			} else {
				tried[drop] = true
			}
		}
	}
	c := &Combined{Method: "greedy", Actions: in, Frees: f, Keeps: k, Writes: Writes{Estimate: true}}
	for _, i := range in {
		c.Writes.Bytes += acts[i].Writes.Bytes
		c.Writes.Records += acts[i].Writes.Records
	}
	return c, nil
}

// candidates are the actions on the holders of g, with the records each
// writes: a purge for every queue, a subscription deletion for every
// durable subscription with something pending, a commit and a rollback for
// every prepared transaction.
func candidates(g *refgraph.Graph) []Action {
	var out []Action
	for _, d := range g.Destinations() {
		if d.IsTopic() {
			continue
		}
		out = append(out, purgeAction(d))
	}
	for _, s := range g.Subscriptions() {
		if s.NumPending() == 0 && len(s.InDoubt()) == 0 {
			continue
		}
		out = append(out, subscriptionAction(s))
	}
	for _, t := range g.PreparedTransactions() {
		for _, kind := range []refgraph.ActionKind{refgraph.ActCommit, refgraph.ActRollback} {
			a := Action{Action: string(kind), Target: Target{Transaction: t.ID}, Writes: Writes{Estimate: true},
				ref: refgraph.Action{Kind: kind, Transaction: t.ID}}
			a.w = []refgraph.Write{{Size: OutcomeRecordSize(t.ID)}}
			a.Messages = int64(len(t.Ops))
			files := map[int32]bool{}
			for _, c := range t.Commands {
				files[c.File] = true
			}
			for f := range files {
				a.Holds = append(a.Holds, f)
			}
			sort.Slice(a.Holds, func(i, j int) bool { return a.Holds[i] < a.Holds[j] })
			a.Writes.add(a.w)
			out = append(out, a)
		}
	}
	return out
}

// purgeAction is the purge of queue d: one ack a message the store
// recovers (all but those a prepared transaction acked).
func purgeAction(d *refgraph.Destination) Action {
	a := Action{Action: Purge, Target: Target{Destination: d.String()},
		ref: refgraph.Action{Kind: refgraph.ActPurge, Destination: d.Key}, Writes: Writes{Estimate: true}}
	inDoubt := map[*refgraph.Message]bool{}
	for _, m := range d.InDoubt() {
		inDoubt[m] = true
	}
	var id []byte
	a.w = make([]refgraph.Write, 0, len(d.Messages)-len(inDoubt))
	for i := range d.Messages {
		m := &d.Messages[i]
		if inDoubt[m] {
			continue
		}
		id = m.AppendID(id[:0])
		a.w = append(a.w, refgraph.Write{Size: ackRecordSize(d.Name, id), Refers: m.Loc.File})
	}
	a.Messages = int64(len(a.w))
	a.Holds = d.Stats.Files
	a.Writes.add(a.w)
	return a
}

// subscriptionAction is the deletion of durable subscription s: one
// record.
func subscriptionAction(s *refgraph.Subscription) Action {
	a := Action{Action: DeleteSubscription, Writes: Writes{Estimate: true},
		Target: Target{Destination: s.Destination.String(), ClientID: s.ClientID, SubscriptionName: s.SubscriptionName},
		ref:    refgraph.Action{Kind: refgraph.ActDeleteSubscription, Destination: s.Destination.Key, Subscription: s.Key}}
	a.w = []refgraph.Write{{Size: SubscriptionRemoveSize(s.Destination.Name, s.Key)}}
	a.Messages = int64(s.NumPending() + len(s.InDoubt()))
	a.Holds = subscriptionFiles(s)
	a.Writes.add(a.w)
	return a
}

func (w *Writes) add(ws []refgraph.Write) {
	for _, x := range ws {
		w.Records++
		w.Bytes += int64(x.Size) + codec.BatchHeaderSize
	}
}

// subscriptionFiles are the files of the messages s still needs and of its
// command.
func subscriptionFiles(s *refgraph.Subscription) []int32 {
	files := map[int32]bool{s.Loc.File: true}
	for i := 0; i < s.NumPending(); i++ {
		files[s.PendingAt(i).Loc.File] = true
	}
	for _, m := range s.InDoubt() {
		files[m.Loc.File] = true
	}
	out := make([]int32, 0, len(files))
	for f := range files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// compactAction is an offline compaction: it rewrites the store keeping
// only what is live, so every pinned file goes and the live records are
// written again.
func compactAction(g *refgraph.Graph, sz sizes) Action {
	var live int64
	var records int64
	for _, d := range g.Destinations() {
		for i := range d.Messages {
			live += int64(d.Messages[i].Loc.Size) + codec.BatchHeaderSize
			records++
		}
		for _, s := range d.Subscriptions {
			live += int64(s.Loc.Size) + codec.BatchHeaderSize
			records++
		}
	}
	for _, t := range g.PreparedTransactions() {
		for _, c := range t.Commands {
			live += int64(c.Size) + codec.BatchHeaderSize
			records++
		}
	}
	var pinned []int32
	for _, f := range g.Files() {
		if f.Pinned {
			pinned = append(pinned, f.ID)
		}
	}
	bytes := sz.of(pinned) - live
	if bytes < 0 {
		bytes = 0
	}
	return Action{Action: Compact, Frees: Frees{Files: nonNil(pinned), Bytes: bytes},
		Writes: Writes{Bytes: live, Records: records, Estimate: true},
		Note:   "offline, with the broker stopped (kahafs compact): every pinned file is replaced by new files holding only the live records; bytes is the pinned files' disk space less the live records it writes again (an estimate: kahafs compact --dry-run says exactly)"}
}

// heldBy says what else keeps the files a's holder keeps, one line a file.
func heldBy(g *refgraph.Graph, a *Action) []string {
	var out []string
	for _, id := range a.Holds {
		f, ok := g.File(id)
		if !ok || !f.Pinned {
			continue
		}
		var by []string
		seen := map[string]bool{}
		for _, r := range f.Reasons {
			if mine(a, r) {
				continue
			}
			s := reasonShort(r)
			if !seen[s] {
				seen[s] = true
				by = append(by, s)
			}
		}
		if len(by) > 0 {
			out = append(out, f.Name+": "+strings.Join(by, "; "))
		}
	}
	return out
}

// mine says whether r is a's holder itself.
func mine(a *Action, r refgraph.Reason) bool {
	switch a.Action {
	case Purge:
		// a purge empties the location index too
		return (r.Kind == refgraph.KindPendingMessages || r.Kind == refgraph.KindIndexKey) && r.Destination == a.Target.Destination
	case DeleteSubscription:
		key := a.Target.ClientID + ":" + a.Target.SubscriptionName
		if r.Destination != a.Target.Destination {
			return false
		}
		if r.Kind == refgraph.KindSubscription && r.Subscription == key {
			return true
		}
		return r.Kind == refgraph.KindPendingMessages && len(r.Subscriptions) == 1 && r.Subscriptions[0] == key
	default:
		if r.Kind != refgraph.KindTransactionRange {
			return false
		}
		return len(r.Transactions) == 1 && r.Transactions[0] == a.Target.Transaction
	}
}

// reasonShort is a holder in a few words.
func reasonShort(r refgraph.Reason) string {
	switch r.Kind {
	case refgraph.KindPendingMessages:
		s := fmt.Sprintf("%d pending message(s) of %s", r.Messages, r.Destination)
		if len(r.Subscriptions) > 0 {
			s += " for " + strings.Join(r.Subscriptions, ", ")
		}
		return s
	case refgraph.KindSubscription:
		return fmt.Sprintf("the command of subscription %s on %s", r.Subscription, r.Destination)
	case refgraph.KindTransactionRange:
		return "the range of prepared/in-progress transaction(s) " + strings.Join(r.Transactions, ", ")
	case refgraph.KindAcks:
		var fs []string
		for _, id := range r.Files {
			fs = append(fs, codec.DataFileName(id))
		}
		return "acks for messages in " + strings.Join(fs, ", ")
	case refgraph.KindLastUpdate:
		return "the broker's write position"
	case refgraph.KindIndexKey:
		return "a key of " + r.Destination + "'s location index"
	default:
		return string(r.Kind)
	}
}

// AckRecordSize estimates the record a 5.17.2 broker writes for the ack of
// message id on queue dest when it purges it (Queue.removeMessage: a
// STANDARD ack with destination and message id, no consumer), as measured
// with brokerkit PlanCheck on the fixtures: 151 bytes, 2 a byte of the
// queue's name (in the command and in the ack), 1 a byte of the id (the
// command's) and 1 a byte of its connection id (the ack's message id; its
// numbers are marshalled in as few bytes as they need, which the estimate
// does not follow).
func AckRecordSize(dest, id string) int32 { return ackRecordSize(dest, id) }

// ackRecordSize is AckRecordSize of an id held as a string or as bytes (a
// purge's estimate reads every message's id: no string made for each).
func ackRecordSize[T string | []byte](dest string, id T) int32 {
	conn, colons := len(id), 0
	for i := len(id) - 1; i >= 0 && colons < 3; i-- {
		if id[i] == ':' {
			conn, colons = i, colons+1
		}
	}
	return int32(151 + 2*len(dest) + len(id) + conn)
}

// SubscriptionRemoveSize is the record deleting durable subscription key
// of topic dest: 15 bytes, the topic's name and the key (measured).
func SubscriptionRemoveSize(dest, key string) int32 {
	return int32(15 + len(dest) + len(key))
}

// OutcomeRecordSize is the commit or rollback record of XA transaction id
// ("XID:[fmt,globalId=HEX,branchId=HEX]"): 18 bytes and the two ids
// (measured).
func OutcomeRecordSize(id string) int32 {
	n := 0
	for _, part := range []string{"globalId=", "branchId="} {
		if i := strings.Index(id, part); i >= 0 {
			h := id[i+len(part):]
			if j := strings.IndexAny(h, ",]"); j >= 0 {
				h = h[:j]
			}
			n += len(h) / 2
		}
	}
	return int32(18 + n)
}

// WriteJSON writes doc as indented JSON.
func (doc Doc) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func minus(a, b []int32) []int32 {
	in := map[int32]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []int32
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

func anyIn(a, b []int32) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

// allocated is the disk space of the file at p (its length when it cannot
// be stat'ed).
func allocated(p string, size int64) int64 {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		return size
	}
	return st.Blocks * 512
}

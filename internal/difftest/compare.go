package difftest

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/refgraph"
)

// Kind classifies a disagreement.
type Kind string

// The kinds of disagreement, in the order of the summary table.
const (
	KindCleanup       Kind = "cleanup"
	KindQueueOrder    Kind = "queue order"
	KindQueuePriority Kind = "queue order (priority dispatch)"
	KindQueueCount    Kind = "queue count"
	KindSubDelivered  Kind = "subscription delivered set"
	KindSubCount      Kind = "subscription count"
	KindSubListed     Kind = "subscriptions listed"
	KindDestinations  Kind = "destinations"
	KindPrepared      Kind = "prepared"
	KindCompaction    Kind = "compaction round trip"
)

// Kinds lists every kind, in table order.
var Kinds = []Kind{KindCleanup, KindQueueOrder, KindQueuePriority, KindQueueCount, KindSubDelivered,
	KindSubCount, KindSubListed, KindDestinations, KindPrepared, KindCompaction}

// Views compared.
const (
	ViewIndex      = "with index"
	ViewNoIndex    = "without index"
	ViewCompaction = "compacted vs original"
)

// Finding is one disagreement between kahafs and the broker.
type Finding struct {
	Kind Kind
	// View: with index, without index, or compacted vs original.
	View string
	// Where: the destination, subscription or transaction concerned ("" for
	// the whole store).
	Where  string
	Kahafs string
	Broker string
	Detail []string
	// Explained names a known broker behaviour that accounts for the
	// difference ("" when none does).
	Explained string
}

// info is what the workload tells about the messages.
type info struct {
	w        *Workload
	sent     map[string]SentMessage
	sentStep map[string]int
	sentTo   map[string]string // id -> destination it was sent to
	// ackedStep: where ("queue://Q" or "topic://T|cid:name") -> message
	// id -> the step whose acknowledgement took effect (the first one)
	ackedStep map[string]map[string]int
	prio      map[string]bool // prioritized queues
	// delivered is what the tree lists for a durable subscription (its
	// candidates its selector matches: package deliver); nil: the
	// candidates (Subscription.Pending)
	delivered func(*refgraph.Subscription) []*refgraph.Message
	// pending is what the tree lists for a queue, in delivery order; nil:
	// Destination.Pending (a Fault replaces it)
	pending func(*refgraph.Destination) []*refgraph.Message
}

// queuePending is what the tree lists for the queue d (in.pending).
func (in *info) queuePending(d *refgraph.Destination) []*refgraph.Message {
	if in.pending != nil {
		return in.pending(d)
	}
	return d.Pending()
}

func newInfo(w *Workload) *info {
	in := &info{w: w, sent: map[string]SentMessage{}, sentStep: map[string]int{}, sentTo: map[string]string{},
		ackedStep: map[string]map[string]int{}, prio: map[string]bool{}}
	held := map[string]Step{} // XID -> the xa step left prepared
	ack := func(s Step, ids []string) {
		where := s.From
		switch {
		case s.Sub != nil:
			where = s.Sub.Key()
		case where == "":
			where = s.Dest
		}
		if in.ackedStep[where] == nil {
			in.ackedStep[where] = map[string]int{}
		}
		for _, id := range ids {
			if _, ok := in.ackedStep[where][id]; !ok {
				in.ackedStep[where][id] = s.N
			}
		}
	}
	for _, s := range w.Steps {
		for _, m := range s.Messages {
			in.sent[m.ID] = m
			in.sentStep[m.ID] = s.N
			in.sentTo[m.ID] = s.Dest
		}
		switch s.Op {
		case "consume", "redeliver":
			ack(s, s.AckedIDs)
		case "localtx", "xa":
			switch s.Outcome {
			case "commit", "onephase":
				ack(s, s.AckedIDs)
			case "prepare-leave":
				held[s.XID] = s
			}
		case "xaresolve":
			if p, ok := held[s.XID]; ok && s.Outcome == "commit" {
				ack(p, p.AckedIDs)
			}
			delete(held, s.XID)
		}
	}
	for _, p := range w.Policies {
		if p.PrioritizedMessages {
			in.prio[p.Queue] = true
		}
	}
	return in
}

// expired: the message, in the destination it was sent to, had expired
// when the broker view started (the broker discards it instead of
// delivering it). The copy an expired message leaves in the DLQ has the
// same id and no expiration.
func (in *info) expired(dest, id string, at int64) bool {
	e, ok := in.w.Expirations[id]
	return ok && e > 0 && e <= at && in.sentTo[id] == dest
}

// describe annotates a message id of where (a queue or a subscription
// key) for a report line.
func (in *info) describe(where, id string, d *refgraph.Destination, m *refgraph.Message) string {
	var parts []string
	if m != nil {
		parts = append(parts, fmt.Sprintf("prio %d", m.Priority))
		if tx := d.AckedInPreparedTx(m); tx != "" {
			parts = append(parts, "acked in prepared "+tx)
		}
	} else if s, ok := in.sent[id]; ok {
		parts = append(parts, fmt.Sprintf("prio %d", s.Prio))
	}
	if n, ok := in.sentStep[id]; ok {
		parts = append(parts, fmt.Sprintf("sent #%d idx %d", n, in.sent[id].Idx))
	}
	if n, ok := in.ackedStep[where][id]; ok {
		parts = append(parts, fmt.Sprintf("ACKED by the client #%d", n))
	}
	if len(parts) == 0 {
		return id
	}
	return id + " (" + strings.Join(parts, ", ") + ")"
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// setDiff returns the elements of a not in b, in a's order.
func setDiff(a, b []string) []string {
	in := map[string]int{}
	for _, x := range b {
		in[x]++
	}
	var out []string
	for _, x := range a {
		if in[x] > 0 {
			in[x]--
			continue
		}
		out = append(out, x)
	}
	return out
}

func sortedCopy(a []string) []string {
	b := append([]string(nil), a...)
	sort.Strings(b)
	return b
}

// listDiff describes how kahafs's list for where differs from the
// broker's.
func (in *info) listDiff(where string, kahafs, broker []string, dest *refgraph.Destination, byID map[string]*refgraph.Message) []string {
	var d []string
	const show = 6
	missing := setDiff(kahafs, broker)
	extra := setDiff(broker, kahafs)
	if len(missing) > 0 {
		d = append(d, fmt.Sprintf("%d listed by kahafs, not delivered by the broker:", len(missing)))
		for i, id := range missing {
			if i == show {
				d = append(d, fmt.Sprintf("  … %d more", len(missing)-show))
				break
			}
			d = append(d, "  "+in.describe(where, id, dest, byID[id]))
		}
	}
	if len(extra) > 0 {
		d = append(d, fmt.Sprintf("%d delivered by the broker, not listed by kahafs:", len(extra)))
		for i, id := range extra {
			if i == show {
				d = append(d, fmt.Sprintf("  … %d more", len(extra)-show))
				break
			}
			d = append(d, "  "+in.describe(where, id, dest, byID[id]))
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		for i := range kahafs {
			if kahafs[i] != broker[i] {
				d = append(d, fmt.Sprintf("same messages, order differs from position %d: kahafs %s, broker %s", i+1,
					in.describe(where, kahafs[i], dest, byID[kahafs[i]]), in.describe(where, broker[i], dest, byID[broker[i]])))
				break
			}
		}
	}
	return d
}

// ----------------------------------------------------------------------------------------------
// cleanup

// gcLineRE picks the lines of a cleanup both the broker and kahafs's
// emulation (Graph.GCLog) write (the same selection as refgraph's broker
// tests).
var gcLineRE = regexp.MustCompile(`(Last update: .*|gc candidates after (producerSequenceIdTrackerLocation|ackMessageFileMapLocation):\S*, .*|gc candidates after (in progress tx range|dest):.*|gc candidates: .*|Found candidate for rewrite: .*|sub \S+ on \S+ in dataFile .*|not removing data file: .*|Cleanup removing the data files: .*)$`)

var locRE = regexp.MustCompile(`(TrackerLocation|FileMapLocation):\S*,`)

func gcLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if m := gcLineRE.FindStringSubmatch(l); m != nil {
			out = append(out, locRE.ReplaceAllString(m[1], "$1:_,"))
		}
	}
	return out
}

// brokerGCLines are the first cleanup's lines in an Inspect log.
func brokerGCLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var lines []string
	started := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "Last update: ") {
			if started {
				break
			}
			started = true
		}
		if started || strings.Contains(l, "Cleanup removing the data files") {
			lines = append(lines, strings.TrimSpace(l))
		}
		if strings.Contains(l, "Cleanup removing the data files") {
			break
		}
	}
	return gcLines(lines)
}

// compareCleanup compares kahafs's cleanup prediction got (the files
// g.GCCandidates deletes) with what the broker's first cleanup deleted.
// trace, when the two disagree, returns an Inspect run at TRACE (its
// candidate lines) or why there is none.
func compareCleanup(view string, g *refgraph.Graph, got []int32, ins *Inspected, trace func() (*Inspected, error)) []Finding {
	want := append([]int32{}, ins.Deleted...)
	if fmt.Sprint(want) == fmt.Sprint(got) {
		return nil
	}
	f := Finding{Kind: KindCleanup, View: view, Kahafs: fmt.Sprintf("the first cleanup deletes %v", got),
		Broker: fmt.Sprintf("the first cleanup deleted %v", want)}
	gotSet := map[int32]bool{}
	for _, id := range got {
		gotSet[id] = true
	}
	wantSet := map[int32]bool{}
	for _, id := range want {
		wantSet[id] = true
	}
	for _, file := range g.Files() {
		if gotSet[file.ID] == wantSet[file.ID] {
			continue
		}
		if wantSet[file.ID] {
			var rs []string
			for _, r := range file.Reasons {
				rs = append(rs, string(r.Kind)+": "+r.Text)
			}
			f.Detail = append(f.Detail, fmt.Sprintf("%s: kahafs keeps it: %s", file.Name, strings.Join(rs, "; ")))
		} else {
			f.Detail = append(f.Detail, fmt.Sprintf("%s: kahafs deletes it, the broker kept it", file.Name))
		}
	}
	kl := gcLines(g.GCLog())
	tr, err := trace()
	if err != nil {
		f.Detail = append(f.Detail, "no broker candidate lines: its run at TRACE failed: "+firstLine(err.Error()))
		return []Finding{f}
	}
	if fmt.Sprint(tr.Deleted) != fmt.Sprint(ins.Deleted) {
		f.Detail = append(f.Detail, fmt.Sprintf("(the broker's run at TRACE deleted %v)", tr.Deleted))
	}
	bl := brokerGCLines(tr.Log)
	for i := 0; i < len(kl) || i < len(bl); i++ {
		var k, b string
		if i < len(kl) {
			k = kl[i]
		}
		if i < len(bl) {
			b = bl[i]
		}
		if k != b {
			f.Detail = append(f.Detail, "first differing cleanup line:", "  kahafs: "+k, "  broker: "+b)
			break
		}
	}
	return []Finding{f}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ----------------------------------------------------------------------------------------------
// the tree's view against the broker's

// kahafsDestinations are the destinations kahafs lists, as the broker
// lists them (brokertest.ListedName).
func kahafsDestinations(g *refgraph.Graph) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range g.Destinations() {
		q := d.Type.Scheme() + "://" + brokertest.ListedName(d.Name)
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

func subKey(s *refgraph.Subscription) string {
	return s.Destination.String() + "|" + s.ClientID + ":" + s.SubscriptionName
}

// selectorMatch evaluates the workload's selectors (parity = 'even'|'odd',
// idx < N, idx >= N) on a message it sent; ok is false when it cannot.
func (in *info) selectorMatch(sel *string, id string) (match, ok bool) {
	if sel == nil {
		return true, true
	}
	m, known := in.sent[id]
	if !known {
		return false, false
	}
	s := strings.TrimSpace(*sel)
	switch {
	case s == "parity = 'even'":
		return m.Idx%2 == 0, true
	case s == "parity = 'odd'":
		return m.Idx%2 != 0, true
	case strings.HasPrefix(s, "idx >= "):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "idx >= "))
		return m.Idx >= n, err == nil
	case strings.HasPrefix(s, "idx < "):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "idx < "))
		return m.Idx < n, err == nil
	}
	return false, false
}

// compareTree compares kahafs's view of the store (g) with the broker's
// (v). other is the broker's view of the same store the other way (without
// its index when v is with it, and the reverse; nil if none): a finding
// says when it agrees with kahafs.
func compareTree(view string, g *refgraph.Graph, v, other *View, in *info) []Finding {
	c := &treeCmp{view: view, g: g, v: v, other: other, in: in}
	c.destinations()
	c.queues()
	c.subscriptions()
	c.prepared()
	return c.fs
}

// treeCmp is one comparison of kahafs's tree with a broker view (see
// compareTree); its methods add the findings of one kind each, in the
// order compareTree calls them.
type treeCmp struct {
	view     string
	g        *refgraph.Graph
	v, other *View
	in       *info
	fs       []Finding
}

func (c *treeCmp) add(f Finding) {
	f.View = c.view
	c.fs = append(c.fs, f)
}

// agrees notes in f that the broker's other view says what kahafs says
// (when there is one and same).
func (c *treeCmp) agrees(f *Finding, what string, same bool) {
	if c.other == nil || !same {
		return
	}
	otherName := "with its index"
	if c.view == ViewIndex {
		otherName = "without its index"
	}
	f.Detail = append(f.Detail, fmt.Sprintf("the broker %s %s what kahafs says", otherName, what))
}

// destinations compares the destinations listed.
func (c *treeCmp) destinations() {
	kd := kahafsDestinations(c.g)
	bd := sortedCopy(c.v.Destinations)
	if equalStrings(kd, bd) {
		return
	}
	f := Finding{Kind: KindDestinations, Kahafs: fmt.Sprintf("%d destinations", len(kd)), Broker: fmt.Sprintf("%d destinations", len(bd))}
	if x := setDiff(kd, bd); len(x) > 0 {
		f.Detail = append(f.Detail, "listed by kahafs only: "+strings.Join(x, ", "))
	}
	if x := setDiff(bd, kd); len(x) > 0 {
		f.Detail = append(f.Detail, "listed by the broker only: "+strings.Join(x, ", "))
		if c.view == ViewIndex && c.other != nil && len(setDiff(x, c.other.Destinations)) == len(x) {
			f.Detail = append(f.Detail, "the broker does not list them without its index: its index holds destinations no journal record names "+
				"(MessageDatabase.getStoredDestination creates the index entry whenever the broker touches a destination's store, "+
				"MessageDatabase.java:2679-2733, e.g. KahaDBTopicMessageStore's constructor, KahaDBStore.java:886-888; no command is journaled), "+
				"which a replay and kahafs (index metadata only) cannot see")
		}
	}
	if c.other != nil {
		c.agrees(&f, "lists", equalStrings(kd, sortedCopy(c.other.Destinations)))
	}
	c.add(f)
}

// queues compares, for each queue both list, what the tree shows
// (Destination.Pending in delivery order, Stats.Count) with what the
// broker counts and delivers; a queue only one side lists is the
// destinations finding's.
func (c *treeCmp) queues() {
	kq := map[string]*refgraph.Destination{}
	for _, d := range c.g.Destinations() {
		if d.Type == codec.Queue && brokertest.ListedName(d.Name) == d.Name {
			kq[d.Name] = d
		}
	}
	var qnames []string
	for n := range kq {
		qnames = append(qnames, n)
	}
	for n := range c.v.Queues {
		if _, ok := kq[n]; !ok {
			qnames = append(qnames, n)
		}
	}
	sort.Strings(qnames)
	for _, name := range qnames {
		d, vq := kq[name], c.v.Queues[name]
		if d == nil || vq == nil {
			continue // the destinations finding names it
		}
		c.queueCount(name, d, vq)
		c.queueOrder(name, d, vq)
	}
}

// otherQueue is the broker's other view of the queue (nil if none).
func (c *treeCmp) otherQueue(name string) *ViewQueue {
	if c.other == nil {
		return nil
	}
	return c.other.Queues[name]
}

// queueCount compares the queue's message count.
func (c *treeCmp) queueCount(name string, d *refgraph.Destination, vq *ViewQueue) {
	if d.Stats.Count == vq.Count {
		return
	}
	f := Finding{Kind: KindQueueCount, Where: "queue://" + name, Kahafs: fmt.Sprintf("%d messages (Stats.Count; the index holds %d, %d in doubt)", d.Stats.Count, d.Stats.Messages, d.Stats.InDoubt),
		Broker: fmt.Sprintf("%d messages (destination statistics / JMX QueueSize)", vq.Count)}
	if vq.StoreCount != nil && *vq.StoreCount != vq.Count {
		f.Detail = append(f.Detail, fmt.Sprintf("the broker's MessageStore.getMessageCount says %d", *vq.StoreCount))
	}
	if o := c.otherQueue(name); o != nil {
		c.agrees(&f, "counts", o.Count == d.Stats.Count)
	}
	c.add(f)
}

// queueOrder compares the queue's pending messages, in delivery order,
// with what the broker delivered to one consumer; on a prioritized queue
// the broker's priority dispatch (DispatchOrder) may explain the order.
func (c *treeCmp) queueOrder(name string, d *refgraph.Destination, vq *ViewQueue) {
	where := "queue://" + name
	pending := c.in.queuePending(d)
	kids, expired := c.in.unexpired(where, pending, c.v.StartedAt)
	if equalStrings(kids, vq.Consumed) {
		return
	}
	byID := map[string]*refgraph.Message{}
	for i := range d.Messages {
		byID[d.Messages[i].ID()] = &d.Messages[i]
	}
	f := Finding{Kind: KindQueueOrder, Where: where,
		Kahafs: fmt.Sprintf("%d pending messages in delivery order (Destination.Pending)", len(kids)),
		Broker: fmt.Sprintf("%d messages delivered to one consumer (default prefetch)", len(vq.Consumed))}
	if expired > 0 {
		f.Kahafs += fmt.Sprintf(", %d expired ones left out", expired)
	}
	if c.in.prio[name] && c.priorityDispatch(&f, d, vq, pending, kids, expired, byID) {
		c.add(f)
		return
	}
	f.Detail = append(c.in.listDiff(where, kids, vq.Consumed, d, byID), f.Detail...)
	if o := c.otherQueue(name); o != nil {
		c.agrees(&f, "delivers", equalStrings(kids, o.Consumed))
	}
	c.add(f)
}

// priorityDispatch explains f, a prioritized queue's order differing from
// the tree's, by the messages that had expired when the broker view
// started, and only by them. The tree orders the queue by the broker's
// dispatch rule (refgraph.DispatchOrder) as if none had expired; the broker
// drops an expired message only when it pages it in, after it took a place
// in the store cursor's batch, which moves the page boundaries
// (testdata/priority-paging.json: the real broker's orders with an expired
// message, which TestDispatchOrderMatchesBroker checks DispatchOrder
// against). The explanation requires: messages the workload recorded as
// expired (its expirations, sent to this queue) among the pending ones; the
// broker delivering none of them; the rule giving the tree's order when
// they are taken as unexpired (the expiry is the only difference) and the
// broker's when they are taken as expired. Otherwise it adds to f.Detail
// what fails and returns false.
func (c *treeCmp) priorityDispatch(f *Finding, d *refgraph.Destination, vq *ViewQueue, pending []*refgraph.Message, kids []string, expired int, byID map[string]*refgraph.Message) bool {
	if expired == 0 {
		f.Detail = append(f.Detail, "no pending message of this prioritized queue had expired when the broker started (the workload's expirations): expiry cannot account for the order")
		return false
	}
	var gone []string
	for _, m := range pending {
		if c.in.expired(f.Where, m.ID(), c.v.StartedAt) {
			gone = append(gone, m.ID())
		}
	}
	if x := setDiff(gone, setDiff(gone, vq.Consumed)); len(x) > 0 {
		f.Detail = append(f.Detail, fmt.Sprintf("the broker delivered %d of the messages the workload recorded as expired (%s): expiry cannot account for the order", len(x), abbrev(x)))
		return false
	}
	deliverable := map[string]bool{}
	for _, m := range pending {
		deliverable[m.ID()] = true
	}
	var ps []Paged
	var pids []string
	for _, m := range d.Messages {
		if !deliverable[m.ID()] {
			continue
		}
		ps = append(ps, Paged{Priority: int(m.Priority), Expired: c.in.expired(f.Where, m.ID(), c.v.StartedAt)})
		pids = append(pids, m.ID())
	}
	order := func(ps []Paged, skip map[string]bool) []string {
		var out []string
		for _, p := range DispatchOrder(ps, MaxPageSize, DefaultQueuePrefetch) {
			if !skip[pids[p]] {
				out = append(out, pids[p])
			}
		}
		return out
	}
	// the expired ones as if they had not expired, left out after dispatch
	fresh := make([]Paged, len(ps))
	skip := map[string]bool{}
	for i, p := range ps {
		fresh[i] = Paged{Priority: p.Priority}
		if p.Expired {
			skip[pids[i]] = true
		}
	}
	if noExp := order(fresh, skip); !equalStrings(noExp, kids) {
		f.Detail = append(f.Detail, "the tree's order is not the priority dispatch rule's (DispatchOrder) on the store order with no message expired: the difference is not the expiry's:")
		f.Detail = append(f.Detail, c.in.listDiff(f.Where, kids, noExp, d, byID)...)
		return false
	}
	if sim := order(ps, nil); !equalStrings(sim, vq.Consumed) {
		f.Detail = append(f.Detail, fmt.Sprintf("the priority dispatch rule (DispatchOrder) with the %d expired messages dropped where the broker pages them in does not give the broker's order either:", expired))
		f.Detail = append(f.Detail, c.in.listDiff(f.Where, sim, vq.Consumed, d, byID)...)
		return false
	}
	f.Kind = KindQueuePriority
	f.Explained = fmt.Sprintf("the queue is prioritized and %d of its messages had expired when the broker started (the workload's expirations; the broker delivered none of them): "+
		"the broker pages its messages in store order, 200 at a time, into a list ordered by JMS priority and dispatches from its head (Queue.doPageInForDispatch, PrioritizedPendingList), "+
		"and the expired messages took places in the store cursor's batches (AbstractStoreCursor.fillBatch) before the queue dropped them, which the tree's order does not know; "+
		"DispatchOrder (checked against the real broker with an expired message, testdata/priority-paging.json) gives the tree's order without the expiry and the broker's with it", expired)
	return true
}

// unexpired returns the ids of msgs, in their order, without those that
// had expired in dest when the broker view started (at), and how many it
// left out.
func (in *info) unexpired(dest string, msgs []*refgraph.Message, at int64) (ids []string, expired int) {
	for _, m := range msgs {
		if in.expired(dest, m.ID(), at) {
			expired++
			continue
		}
		ids = append(ids, m.ID())
	}
	return ids, expired
}

// subscriptions compares the durable subscriptions listed and, for each
// one both list, its selector, count and delivered messages.
func (c *treeCmp) subscriptions() {
	ks := map[string]*refgraph.Subscription{}
	for _, s := range c.g.Subscriptions() {
		if brokertest.ListedName(s.Destination.Name) != s.Destination.Name {
			continue
		}
		ks[subKey(s)] = s
	}
	snames := sortedKeys(ks)
	if x := setDiff(snames, sortedKeys(c.v.Subscriptions)); len(x) > 0 {
		c.add(Finding{Kind: KindSubListed, Kahafs: "lists " + strings.Join(x, ", "), Broker: "does not have them"})
	}
	if x := setDiff(sortedKeys(c.v.Subscriptions), snames); len(x) > 0 {
		c.add(Finding{Kind: KindSubListed, Kahafs: "does not list " + strings.Join(x, ", "), Broker: "has them"})
	}
	for _, key := range snames {
		s, vs := ks[key], c.v.Subscriptions[key]
		if vs == nil {
			continue
		}
		c.subSelector(key, s, vs)
		c.subCount(key, s, vs)
		c.subDelivered(key, s, vs)
	}
}

// otherSub is the broker's other view of the subscription (nil if none).
func (c *treeCmp) otherSub(key string) *ViewSub {
	if c.other == nil {
		return nil
	}
	return c.other.Subscriptions[key]
}

// subSelector compares the subscription's selector and noLocal.
func (c *treeCmp) subSelector(key string, s *refgraph.Subscription, vs *ViewSub) {
	ksel := (*string)(nil)
	if s.HasSelector {
		ksel = &s.Selector
	}
	if fmt.Sprint(deref(ksel)) != fmt.Sprint(deref(vs.Selector)) || (ksel == nil) != (vs.Selector == nil) || s.NoLocal != vs.NoLocal {
		c.add(Finding{Kind: KindSubListed, Where: key,
			Kahafs: fmt.Sprintf("selector %s, noLocal %v", quoteOpt(ksel), s.NoLocal),
			Broker: fmt.Sprintf("selector %s, noLocal %v", quoteOpt(vs.Selector), vs.NoLocal)})
	}
}

// subCount compares the subscription's message count.
func (c *treeCmp) subCount(key string, s *refgraph.Subscription, vs *ViewSub) {
	if s.Count == vs.StoreCount {
		return
	}
	f := Finding{Kind: KindSubCount, Where: key, Kahafs: fmt.Sprintf("count %d (Subscription.Count)", s.Count),
		Broker: fmt.Sprintf("count %d (TopicMessageStore.getMessageCount)", vs.StoreCount)}
	if vs.CursorSize != nil && *vs.CursorSize != vs.StoreCount {
		f.Detail = append(f.Detail, fmt.Sprintf("the offline subscription's cursor size is %d", *vs.CursorSize))
	}
	if o := c.otherSub(key); o != nil {
		c.agrees(&f, "counts", o.StoreCount == s.Count)
	}
	c.add(f)
}

// subDelivered compares what the tree lists for the subscription
// (in.delivered, else Subscription.Pending) with what the broker delivered
// after reconnecting; messages the broker's selector drops at dispatch
// may explain the difference.
func (c *treeCmp) subDelivered(key string, s *refgraph.Subscription, vs *ViewSub) {
	listed := s.Pending()
	if c.in.delivered != nil {
		listed = c.in.delivered(s)
	}
	byID := map[string]*refgraph.Message{}
	for _, m := range listed {
		byID[m.ID()] = m
	}
	kids, expired := c.in.unexpired(s.Destination.String(), listed, c.v.StartedAt)
	if equalStrings(kids, vs.Delivered) {
		return
	}
	f := Finding{Kind: KindSubDelivered, Where: key,
		Kahafs: fmt.Sprintf("delivers %d messages (Subscription.Pending)", len(kids)),
		Broker: fmt.Sprintf("delivered %d after reconnecting", len(vs.Delivered))}
	if expired > 0 {
		f.Kahafs += fmt.Sprintf(", %d expired ones left out", expired)
	}
	cand, why := c.in.selectorDrops(vs.Selector, kids)
	if equalStrings(cand, vs.Delivered) {
		f.Explained = strings.Join(why, "; ")
	} else {
		f.Detail = c.in.listDiff(key, kids, vs.Delivered, s.Destination, byID)
		if len(why) > 0 {
			f.Detail = append(f.Detail, "not explained by: "+strings.Join(why, "; "))
		}
		if o := c.otherSub(key); o != nil {
			c.agrees(&f, "delivers (explanations applied)", equalStrings(cand, o.Delivered))
		}
	}
	c.add(f)
}

// selectorDrops leaves out of ids those the broker's selector sel drops
// at dispatch, when it can tell for every one (selectorMatch), and says
// why in why; otherwise it returns ids unchanged and no why.
func (in *info) selectorDrops(sel *string, ids []string) (cand, why []string) {
	if sel == nil {
		return ids, nil
	}
	var keep []string
	for _, id := range ids {
		match, ok := in.selectorMatch(sel, id)
		if !ok {
			return ids, nil
		}
		if match {
			keep = append(keep, id)
		}
	}
	if len(keep) == len(ids) {
		return ids, nil
	}
	return keep, []string{fmt.Sprintf("%d of kahafs's messages do not match the selector %q: the store recovers them (everything after lastAck) and the broker's selector drops them at dispatch", len(ids)-len(keep), *sel)}
}

// prepared compares the prepared transactions and, for each one both
// list, the messages it adds and acknowledges.
func (c *treeCmp) prepared() {
	kp := map[string]*refgraph.Transaction{}
	for _, t := range c.g.PreparedTransactions() {
		kp[t.ID] = t
	}
	bp := map[string]brokertest.PreparedTx{}
	for _, t := range c.v.Prepared {
		bp[t.XID] = t
	}
	kx, bx := sortedKeys(kp), sortedKeys(bp)
	if !equalStrings(kx, bx) {
		c.add(Finding{Kind: KindPrepared, Kahafs: fmt.Sprintf("%d prepared: %s", len(kx), strings.Join(kx, ", ")),
			Broker: fmt.Sprintf("%d prepared: %s", len(bx), strings.Join(bx, ", "))})
	}
	for _, x := range kx {
		t, b := kp[x], bp[x]
		if _, ok := bp[x]; !ok {
			continue
		}
		var adds, acks []string
		for _, op := range t.Ops {
			if op.Add {
				adds = append(adds, op.MessageID)
			} else {
				acks = append(acks, op.MessageID)
			}
		}
		if !equalStrings(sortedCopy(adds), sortedCopy(b.Adds)) || !equalStrings(sortedCopy(acks), sortedCopy(b.Acks)) {
			c.add(Finding{Kind: KindPrepared, Where: x,
				Kahafs: fmt.Sprintf("adds %v, acks %v", adds, acks),
				Broker: fmt.Sprintf("adds %v, acks %v", b.Adds, b.Acks)})
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func quoteOpt(s *string) string {
	if s == nil {
		return "none"
	}
	return strconv.Quote(*s)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ----------------------------------------------------------------------------------------------
// broker views against each other (compaction round trip)

// compareViews reports where the broker's view of the compacted store
// (got) differs from its view of the original with its index (want);
// noIndex, the view of the original without its index, explains a
// difference the broker itself makes between the two; heldBack (by queue
// name), the messages kahafs found the original's broker holds back
// because its stored count drifted (refgraph.Destination.Undelivered),
// explains the compacted store delivering them: its index is rebuilt, so
// its count is right (compaction's report names the quirk) — all but
// those of them that had expired when got's broker started (expired, nil:
// none), which it counts and discards, as any broker does.
func compareViews(want, got, noIndex *View, heldBack map[string][]string, expired func(queue, id string) bool) []Finding {
	c := &viewsCmp{want: want, got: got, noIndex: noIndex, heldBack: heldBack, expired: expired}
	c.destinations()
	c.queues()
	c.subscriptions()
	c.prepared()
	return c.fs
}

// viewsCmp is one comparison of two broker views (see compareViews); its
// methods add the findings of one part of the views each, in the order
// compareViews calls them.
type viewsCmp struct {
	want, got, noIndex *View
	heldBack           map[string][]string
	expired            func(queue, id string) bool
	fs                 []Finding
}

// heldBackExplains is the explanation of a compacted queue that counts and
// delivers the messages the original's drifted count held back.
const heldBackExplains = "the original's stored count drifted (KahaDB 5.17.2 subtracts the messages acked in a prepared transaction again at every restart), so its broker holds back the last messages, as kahafs found; the compacted store's index is rebuilt and counts right, so its broker delivers them too (the compaction report names this)"

// add adds a finding that what (of where) is w in the original and g in
// the compacted store; n, what the original without its index gives,
// explains it when it is g. It returns the finding added (valid until the
// next add).
func (c *viewsCmp) add(where, what, w, g, n string) *Finding {
	f := Finding{Kind: KindCompaction, View: ViewCompaction, Where: where,
		Kahafs: "compacted: " + what + " " + g, Broker: "original: " + what + " " + w}
	if c.noIndex != nil && n == g {
		f.Explained = "the broker gives the same for the original without its index (compaction drops db.data; the broker's two views of the original differ here)"
	}
	c.fs = append(c.fs, f)
	return &c.fs[len(c.fs)-1]
}

// delivered compares the messages where delivered in the original (w) and
// in the compacted store (g); x: those of the original without its index;
// held, those kahafs found the original's drifted count holds back and
// the workload confirms (info.witnessedHeld); expired, whether one of held
// had expired when the compacted store's broker started (nil: none).
func (c *viewsCmp) delivered(where string, w, g, x, held []string, expired func(id string) bool) {
	if equalStrings(w, g) {
		return
	}
	f := c.add(where, "delivered", fmt.Sprintf("%d messages", len(w)), fmt.Sprintf("%d messages", len(g)), "")
	// the held back ones the compacted store's broker can deliver: not
	// those that had expired when it started
	var live []string
	for _, id := range held {
		if expired == nil || !expired(id) {
			live = append(live, id)
		}
	}
	switch {
	case c.noIndex != nil && equalStrings(x, g):
		f.Explained = "the broker delivers the same for the original without its index"
	case len(live) > 0 && len(g) == len(w)+len(live) && equalStrings(setDiff(g, live), w):
		// (with the lengths, setDiff took every one of live out of g)
		f.Explained = heldBackExplains
		if n := len(held) - len(live); n > 0 {
			f.Explained += fmt.Sprintf("; %d more it held back had expired when the compacted store's broker started (the workload's expirations): that broker counts them and discards them, as the original's does its expired ones", n)
		}
	}
	f.Detail = idListDiff(w, g)
}

// str is how a finding of compareViews prints a value.
func str(v any) string { return fmt.Sprint(v) }

// destinations compares the destinations listed.
func (c *viewsCmp) destinations() {
	var noDests []string
	if c.noIndex != nil {
		noDests = sortedCopy(c.noIndex.Destinations)
	}
	if a, b := sortedCopy(c.want.Destinations), sortedCopy(c.got.Destinations); !equalStrings(a, b) {
		c.add("", "destinations", str(a), str(b), str(noDests))
	}
}

// viewQueue is v's queue name (an empty one if v has none).
func viewQueue(v *View, name string) *ViewQueue {
	if v == nil || v.Queues[name] == nil {
		return &ViewQueue{}
	}
	return v.Queues[name]
}

// viewSub is v's subscription key (an empty one if v has none).
func viewSub(v *View, key string) *ViewSub {
	if v == nil || v.Subscriptions[key] == nil {
		return &ViewSub{}
	}
	return v.Subscriptions[key]
}

// queues compares, for each queue either lists, its count and the
// messages it delivered.
func (c *viewsCmp) queues() {
	names := map[string]bool{}
	for n := range c.want.Queues {
		names[n] = true
	}
	for n := range c.got.Queues {
		names[n] = true
	}
	for _, n := range sortedKeys(names) {
		w, g, x := viewQueue(c.want, n), viewQueue(c.got, n), viewQueue(c.noIndex, n)
		held := c.heldBack[n]
		if w.Count != g.Count {
			f := c.add("queue://"+n, "count", str(w.Count), str(g.Count), str(x.Count))
			if f.Explained == "" && len(held) > 0 && g.Count == w.Count+int64(len(held)) {
				f.Explained = heldBackExplains
			}
		}
		c.delivered("queue://"+n, w.Consumed, g.Consumed, x.Consumed, held, func(id string) bool {
			return c.expired != nil && c.expired(n, id)
		})
	}
}

// subscriptions compares, for each durable subscription either lists,
// whether both have it, its selector and noLocal, count and delivered
// messages.
func (c *viewsCmp) subscriptions() {
	keys := map[string]bool{}
	for k := range c.want.Subscriptions {
		keys[k] = true
	}
	for k := range c.got.Subscriptions {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		w, g, x := viewSub(c.want, k), viewSub(c.got, k), viewSub(c.noIndex, k)
		_, inW := c.want.Subscriptions[k]
		_, inG := c.got.Subscriptions[k]
		if inW != inG {
			c.add(k, "has the subscription", str(inW), str(inG), "")
			continue
		}
		if deref(w.Selector) != deref(g.Selector) || w.NoLocal != g.NoLocal {
			c.add(k, "selector/noLocal", quoteOpt(w.Selector)+"/"+str(w.NoLocal), quoteOpt(g.Selector)+"/"+str(g.NoLocal), "")
		}
		if w.StoreCount != g.StoreCount {
			c.add(k, "count", str(w.StoreCount), str(g.StoreCount), str(x.StoreCount))
		}
		c.delivered(k, w.Delivered, g.Delivered, x.Delivered, nil, nil)
	}
}

// preparedByXID are v's prepared transactions by XID (empty if v is nil).
func preparedByXID(v *View) map[string]brokertest.PreparedTx {
	m := map[string]brokertest.PreparedTx{}
	if v != nil {
		for _, t := range v.Prepared {
			m[t.XID] = t
		}
	}
	return m
}

// prepared compares the prepared transactions and, for each one both
// list, the messages it adds and acknowledges.
func (c *viewsCmp) prepared() {
	pw, pg := preparedByXID(c.want), preparedByXID(c.got)
	if a, b := sortedKeys(pw), sortedKeys(pg); !equalStrings(a, b) {
		c.add("", "prepared", str(a), str(b), str(sortedKeys(preparedByXID(c.noIndex))))
	}
	for _, x := range sortedKeys(pw) { // findings in a stable order
		w := pw[x]
		g, ok := pg[x]
		if !ok {
			continue
		}
		if !equalStrings(sortedCopy(w.Adds), sortedCopy(g.Adds)) || !equalStrings(sortedCopy(w.Acks), sortedCopy(g.Acks)) {
			c.add(x, "adds/acks", str(w.Adds)+"/"+str(w.Acks), str(g.Adds)+"/"+str(g.Acks), "")
		}
	}
}

// idListDiff describes how got differs from want (plain ids).
func idListDiff(want, got []string) []string {
	var d []string
	if x := setDiff(want, got); len(x) > 0 {
		d = append(d, fmt.Sprintf("%d only in the original: %s", len(x), abbrev(x)))
	}
	if x := setDiff(got, want); len(x) > 0 {
		d = append(d, fmt.Sprintf("%d only in the compacted: %s", len(x), abbrev(x)))
	}
	if len(d) == 0 {
		for i := range want {
			if want[i] != got[i] {
				d = append(d, fmt.Sprintf("same messages, order differs from position %d: original %s, compacted %s", i+1, want[i], got[i]))
				break
			}
		}
	}
	return d
}

func abbrev(ids []string) string {
	if len(ids) > 5 {
		return strings.Join(ids[:5], ", ") + fmt.Sprintf(", … (%d more)", len(ids)-5)
	}
	return strings.Join(ids, ", ")
}

package fsnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/holders"
	"github.com/kahafs/kahafs/plan"
	"github.com/kahafs/kahafs/refgraph"
	"github.com/kahafs/kahafs/replaycache"
)

// The small files of the tree. Each is rendered once per node from the
// snapshot (see textFile); JSON is indented and ends with a newline.

func marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

const readmeText = `kahafs: a read-only view of an ActiveMQ KahaDB store

Store:    %s
Read at:  %s (snapshot %d)

Nothing here can be changed (every write fails with EROFS), and nothing in
the store directory is ever written. The content is what the store held at
the time above; a mount started with --refresh, or SIGHUP sent to kahafs,
re-reads the store.

README                        this text
summary.json                  totals: files, bytes, commands by type, pinned and
                              free files, destinations, subscriptions,
                              transactions by state, damage found
pinned                        data files the broker keeps, one db-N.log a line
free                          data files the broker deletes at its next
                              cleanup, one db-N.log a line
plan, plan.json               what each action an admin can take (purge a
                              queue, delete a subscription, commit or roll
                              back a prepared transaction, compact) frees at
                              the next cleanup, most first (kahafs plan)
metrics                       the store's numbers as Prometheus metrics (text
                              format): what "kahafs metrics" prints

by-file/db-N.log/             one directory per data file, in id order
  holders                     first line "pinned" or "free", then why: one
                              reason a line
  holders.json                the same as JSON (as "kahafs holders --json")
  info.json                   size, logical end, batches, checksum status,
                              commands by type, damaged ranges
  acks-for/db-M.log           a symbolic link to ../../db-M.log for every file
                              holding messages that acks in this file are
                              for: the broker keeps this file while it keeps
                              db-M.log (the ack chain; "chain-start" in
                              holders names the files that start it)
  acked-by/db-M.log           the reverse: the files holding acks for this
                              file's messages
  OFFSET-TYPE.json            one file per journal command; OFFSET is the
                              record's byte offset in 10 digits, so that ls
                              lists them in journal order; the content is the
                              line "kahafs dump --json" prints for the command
                              (for a message: its headers, typed properties
                              and body, the body cut at 4096 bytes)
  OFFSET-TYPE.body            the body of a message command, whole: a text as
                              UTF-8, bytes as they are, a map or stream as
                              JSON, an object's Java serialization stream

by-destination/queue/NAME/    a queue
  stats.json                  message count, bytes, the data files holding them;
                              brokerCount (what the broker reports), deliverable;
                              resolvingFrees: what purging it frees
  pending/N-MESSAGEID.json    its messages in delivery order (N: 1, 2, ... in
                              10 digits), each with N-MESSAGEID.body
  in-doubt/                   messages acked inside a prepared XA transaction:
                              stored, but not delivered or counted until its
                              outcome
by-destination/topic/NAME/    a topic
  stats.json                  as for a queue
  pending/N-MESSAGEID.json    the messages it keeps for its subscriptions
  subscriptions/CLIENTID:SUBNAME/
    info.json                 client id, name, selector, brokerCount (the
                              count the broker reports), deliverable, last ack;
                              resolvingFrees: what deleting it frees
    pending/N-MESSAGEID.json  what the broker delivers to the subscription
                              when it recovers, in order
    in-doubt/                 what it acked inside a prepared XA transaction

by-transaction/ID/            every transaction of the journal, ID as the broker
                              prints it (TX:<connection>:<n>, XID:[...])
  state                       in-flight, prepared, committed or rolled-back
  info.json                   kind, state, commands, operations
  FILE-OFFSET-TYPE.json       its commands in journal order (.body: the
                              bodies of its messages)
  in-doubt/                   (prepared) the stored messages it acknowledges

by-message-id/ID/             a message looked up by its id (the listing
                              shows only a README): cd by-message-id/ID
  paths                       every path of the tree that shows the message
  message.json, message.body  its record and body, when the store holds it

Searching message content: grep -r works here, but a directory of more
files than the kernel keeps links for (a pending/ of 100,000 messages) costs
it a request per file. "kahafs grep PATTERN STORE PATH" (-c, -i, -F, -E,
--json) prints what "grep -r -l PATTERN PATH" prints here, paths relative
to the top, reading the journal once in order on every core, with no
request per file and no mount.

A command has one inode number wherever it appears: under by-file/, in a
pending/ directory and in by-transaction/ (find -samefile finds all its
names), and so has a message's body. Its link count is 1: the tree does
not count the directories that list a command, so du, tar and cp -a see
each name as a file of its own.

Names
Destination names, subscription keys, transaction ids and message ids come
from clients and may hold any bytes. Each becomes one path component:
  - "%%", "/", control bytes (0x00-0x1F, 0x7F), bytes that are not UTF-8 and
    characters that are not printable become %%XX, one per byte, in upper-case
    hex: "a/b" is a%%2Fb, "100%%" is 100%%25, a tab is %%09;
  - a "." at the start becomes %%2E, so ".", ".." and hidden names cannot occur;
  - the empty name is a lone %%;
  - a name whose escaped form is longer than %d bytes (less in pending/,
    where the position and ".json" count too) keeps its first bytes and ends
    in %%# and the first 32 hex digits of the SHA-256 of the original name;
  - a name equal to an earlier one of the same directory (a reused XID) gets
    %%~2, %%~3, ... appended.
Every other character stays as it is. "%%" followed by anything but two
upper-case hex digits only occurs in these markers, so the mapping can be
reversed and two names never collide.
`

func (s *Snapshot) renderReadme() ([]byte, error) {
	b := fmt.Appendf(nil, readmeText, s.Store.Dir, s.Read.UTC().Format(time.RFC3339), s.Gen, MaxNameLen)
	if s.m != nil && s.m.control {
		b = append(b, controlText...)
	}
	return appendIndexDeleted(b, s.graph.RebuildLosses(), ""), nil
}

// appendIndexDeleted appends to a README the warning against deleting
// db.data when a broker rebuilding its index from the journal would not
// recover every pending message (refgraph RebuildLoss), each line led by
// prefix (a store's directory on a layout); summary.json has the numbers
// (ifIndexDeleted).
func appendIndexDeleted(b []byte, losses []refgraph.RebuildLoss, prefix string) []byte {
	if len(losses) == 0 {
		return b
	}
	b = append(b, "\nWARNING: do not delete db.data (\"to rebuild the index\"): a broker that\nrebuilds its index from the journal does not recover every pending\nmessage this index holds (summary.json: ifIndexDeleted):\n"...)
	for _, l := range losses {
		b = fmt.Appendf(b, "  %s%s\n", prefix, l.Text())
	}
	return b
}

const controlText = `
This mount was started with --rw: the file "control" at the top runs an
offline compaction of the store (the broker must be stopped). Write
"compact" or "compact --dry-run" to it; read it for the progress and the
last result. Only the mounting user (or root) may write it.
`

// renderFileList lists the pinned or the free data files, one a line.
func (s *Snapshot) renderFileList(pinned bool) []byte {
	var b []byte
	for _, f := range s.graph.Files() {
		if f.Pinned == pinned {
			b = append(b, f.Name...)
			b = append(b, '\n')
		}
	}
	return b
}

type damageJSON struct {
	Kind   string `json:"kind"`
	Offset int64  `json:"offset"`
	End    int64  `json:"end,omitempty"`
	Error  string `json:"error"`
}

// damageKinds names the codec sentinels in JSON.
var damageKinds = []struct {
	err  error
	kind string
}{
	{codec.ErrTornTail, "torn-tail"},
	{codec.ErrChecksum, "checksum"},
	{codec.ErrTruncated, "truncated"},
	{codec.ErrBadSize, "bad-size"},
	{codec.ErrBadRecordType, "bad-record-type"},
	{codec.ErrBadBatch, "bad-batch"},
	{codec.ErrUnknownCommand, "unknown-command"},
	{codec.ErrDecode, "decode"},
	{codec.ErrMissingFile, "missing-file"},
	{codec.ErrUnreadable, "unreadable"},
}

func damageKind(err error) string {
	for _, k := range damageKinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return "other"
}

func damageList(ds []*codec.CorruptionError) []damageJSON {
	out := []damageJSON{}
	for _, d := range ds {
		out = append(out, damageJSON{Kind: damageKind(d), Offset: d.Offset, End: d.End, Error: d.Error()})
	}
	return out
}

// checksumStatus sums up the batch checksums of a file.
func (s *Snapshot) checksumStatus(f *dataFile) string {
	if s.opts.SkipChecksums {
		return "not-verified"
	}
	for _, d := range f.sum.Damage {
		if errors.Is(d, codec.ErrChecksum) {
			return "mismatch"
		}
	}
	switch {
	case f.sum.Batches == 0:
		return "no-batches"
	case f.sum.Checksummed >= f.sum.Batches:
		return "verified"
	case f.sum.Checksummed == 0:
		return "not-checksummed"
	}
	return "partly-checksummed"
}

func typeCounts(c *[codec.NumEntryTypes]int64) map[string]int64 {
	m := map[string]int64{}
	for t, n := range c {
		if n > 0 {
			m[codec.EntryType(t).String()] = n
		}
	}
	return m
}

func (s *Snapshot) renderInfo(f *dataFile) ([]byte, error) {
	doc := struct {
		ID          int32            `json:"id"`
		Name        string           `json:"name"`
		Path        string           `json:"path"`
		Size        int64            `json:"size"`
		Allocated   int64            `json:"allocated"`
		End         int64            `json:"logicalEnd"`
		Records     int              `json:"records"`
		Commands    int64            `json:"commands"`
		ByType      map[string]int64 `json:"commandsByType"`
		Batches     int              `json:"batches"`
		Checksummed int              `json:"checksummedBatches"`
		Checksum    string           `json:"checksum"`
		Clean       bool             `json:"clean"`
		Damage      []damageJSON     `json:"damage"`
		Pinned      bool             `json:"pinned"`
		Compaction  bool             `json:"ackCompaction"`
		Source      string           `json:"compactedFrom,omitempty"`
		Skipped     int              `json:"skippedOnReplay"`
	}{
		ID: f.info.ID, Name: f.info.Name, Path: f.info.Path, Size: f.sum.Size, Allocated: f.sum.Allocated,
		End: f.sum.End, Records: f.sum.Records, Commands: f.count, ByType: typeCounts(&f.byType),
		Batches: f.sum.Batches, Checksummed: f.sum.Checksummed, Checksum: s.checksumStatus(f),
		Clean: f.sum.Clean(), Damage: damageList(f.sum.Damage),
	}
	if gf, ok := s.graph.File(f.info.ID); ok {
		doc.Pinned, doc.Compaction, doc.Skipped = gf.Pinned, gf.Compaction, gf.Skipped
		if gf.Compaction {
			doc.Source = codec.DataFileName(gf.Source)
		}
	}
	return marshal(doc)
}

// renderHolders: first line pinned or free, then one reason a line
// ("KIND: text"), then notes ("note: KIND: text") (holders.File.Text).
func (s *Snapshot) renderHolders(f *dataFile) []byte {
	gf, ok := s.graph.File(f.info.ID)
	if !ok {
		return []byte("unknown: not in the replay graph\n")
	}
	return holders.Of(gf).Text()
}

// renderHoldersJSON: the file's entry of `kahafs holders --json`'s
// "files" (holders.File).
func (s *Snapshot) renderHoldersJSON(f *dataFile) ([]byte, error) {
	gf, ok := s.graph.File(f.info.ID)
	if !ok {
		return nil, fmt.Errorf("%s: not in the replay graph", f.info.Name)
	}
	hf := holders.Of(gf)
	hf.Allocated = f.sum.Allocated
	return marshal(hf)
}

func (s *Snapshot) renderSummary() ([]byte, error) {
	g := s.graph
	gs := g.Summary()
	var byType [codec.NumEntryTypes]int64
	var allocated int64
	type damageSum struct {
		Files     int  `json:"files"`
		Ranges    int  `json:"ranges"`
		TornTails int  `json:"tornTails"`
		Clean     bool `json:"clean"`
	}
	dmg := damageSum{Clean: true}
	for _, f := range s.files {
		for t, n := range f.byType {
			byType[t] += n
		}
		allocated += f.sum.Allocated
		bad := false
		for _, d := range f.sum.Damage {
			if codec.IsTail(d) {
				dmg.TornTails++
			} else {
				dmg.Ranges++
				bad = true
			}
		}
		if bad {
			dmg.Files++
			dmg.Clean = false
		}
	}
	names := func(pinned bool) []string {
		out := []string{}
		for _, f := range g.Files() {
			if f.Pinned == pinned {
				out = append(out, f.Name)
			}
		}
		return out
	}
	doc := struct {
		Store        string           `json:"store"`
		ReadAt       string           `json:"readAt"`
		Snapshot     uint64           `json:"snapshot"`
		Files        int              `json:"files"`
		Bytes        int64            `json:"bytes"`
		Allocated    int64            `json:"allocated"`
		Commands     int64            `json:"commands"`
		ByType       map[string]int64 `json:"commandsByType"`
		Pinned       []string         `json:"pinned"`
		Free         []string         `json:"free"`
		Destinations struct {
			Queues int `json:"queues"`
			Topics int `json:"topics"`
			Total  int `json:"total"`
		} `json:"destinations"`
		Subscriptions int   `json:"subscriptions"`
		Messages      int64 `json:"messages"`
		MessageBytes  int64 `json:"messageBytes"`
		Transactions  struct {
			InFlight   int   `json:"in-flight"`
			Prepared   int   `json:"prepared"`
			Committed  int64 `json:"committed"`
			RolledBack int64 `json:"rolled-back"`
		} `json:"transactions"`
		Damage   damageSum `json:"damage"`
		HasIndex bool      `json:"indexPresent"`
		// MaxFileLength is the journalMaxFileLength pinned and free
		// assume (as in `kahafs holders --json`).
		MaxFileLength replaycache.MaxFileLength `json:"maxFileLength"`
		// IfIndexRebuilt: where a broker that rebuilt its index from the
		// journal would differ from this one, which keeps its index
		IfIndexRebuilt []refgraph.IndexDiff `json:"ifIndexRebuilt"`
		// IfIndexDeleted: what deleting db.data loses of each durable
		// subscription's pending messages (refgraph RebuildLoss)
		IfIndexDeleted []refgraph.RebuildLoss `json:"ifIndexDeleted,omitempty"`
		Warnings       []string               `json:"warnings"`
	}{
		Store: s.Store.Dir, ReadAt: s.Read.UTC().Format(time.RFC3339Nano), Snapshot: s.Gen,
		Files: len(s.files), Bytes: s.bytes, Allocated: allocated, Commands: s.commands, ByType: typeCounts(&byType),
		Pinned: names(true), Free: names(false),
		Subscriptions: gs.Subscriptions, Messages: gs.Messages, MessageBytes: gs.MessageBytes,
		Damage: dmg, HasIndex: s.Store.HasIndex, MaxFileLength: s.mfl, Warnings: g.Warnings(),
		IfIndexRebuilt: g.IndexDiffs(), IfIndexDeleted: g.RebuildLosses(),
	}
	if doc.IfIndexRebuilt == nil {
		doc.IfIndexRebuilt = []refgraph.IndexDiff{}
	}
	doc.Destinations.Queues, doc.Destinations.Topics, doc.Destinations.Total = gs.Queues, gs.Topics, gs.Destinations
	doc.Transactions.InFlight, doc.Transactions.Prepared = gs.InFlight, gs.Prepared
	doc.Transactions.Committed, doc.Transactions.RolledBack = gs.Committed, gs.RolledBack
	if doc.Warnings == nil {
		doc.Warnings = []string{}
	}
	return marshal(doc)
}

func fileNames(ids []int32) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, codec.DataFileName(id))
	}
	return out
}

func (s *Snapshot) renderDestStats(d *refgraph.Destination) ([]byte, error) {
	doc := struct {
		Destination   string   `json:"destination"`
		Type          string   `json:"type"`
		Name          string   `json:"name"`
		Escaped       string   `json:"escapedName"`
		Key           string   `json:"key"`
		Messages      int64    `json:"messages"`
		Bytes         int64    `json:"bytes"`
		Files         []string `json:"files"`
		BrokerCount   int64    `json:"brokerCount"`
		Deliverable   *int     `json:"deliverable,omitempty"`
		InDoubt       *int64   `json:"inDoubt,omitempty"`
		Subscriptions int      `json:"subscriptions,omitempty"`
		// ResolvingFrees: what the next cleanup deletes beyond what it
		// deletes anyway once the queue is purged (a topic: its durable
		// subscriptions deleted), as `kahafs plan` says it
		ResolvingFrees *plan.Resolved `json:"resolvingFrees,omitempty"`
	}{
		Destination: d.String(), Type: d.Type.Scheme(), Name: d.Name, Escaped: EscapeName(d.Name), Key: d.Key,
		Messages: d.Stats.Messages, Bytes: d.Stats.Bytes, Files: fileNames(d.Stats.Files),
		BrokerCount: d.Stats.Count, Subscriptions: len(d.Subscriptions),
	}
	if !d.IsTopic() {
		n, in := d.NumPending(), d.Stats.InDoubt
		doc.Deliverable, doc.InDoubt = &n, &in
	}
	var err error
	if doc.ResolvingFrees, err = s.resolvingDest(d); err != nil {
		return nil, err
	}
	return marshal(doc)
}

func (s *Snapshot) renderSubInfo(sub *refgraph.Subscription) ([]byte, error) {
	doc := struct {
		Destination      string  `json:"destination"`
		Key              string  `json:"key"`
		ClientID         string  `json:"clientId"`
		SubscriptionName string  `json:"subscriptionName"`
		Selector         *string `json:"selector"`
		NoLocal          bool    `json:"noLocal"`
		Retroactive      bool    `json:"retroactive"`
		Location         string  `json:"location"`
		BrokerCount      int64   `json:"brokerCount"`
		Deliverable      int     `json:"deliverable"`
		InDoubt          int     `json:"inDoubt"`
		// DeliveredAgain: of the deliverable messages, those it acked
		// (acks processed out of order: §5.4)
		DeliveredAgain int `json:"deliveredAgain"`
		// SkippedBySelector: candidates the store recovers for it that its
		// selector does not match (not delivered)
		SkippedBySelector int `json:"skippedBySelector"`
		// NotReachedByCount: matching candidates its store cursor does
		// not hand out, its count being spent (0: none at all)
		NotReachedByCount int   `json:"notReachedByCount"`
		LastAck           int64 `json:"lastAck"`
		// ResolvingFrees: what the next cleanup deletes beyond what it
		// deletes anyway once the subscription is deleted (kahafs plan)
		ResolvingFrees *plan.Resolved `json:"resolvingFrees,omitempty"`
	}{
		Destination: sub.Destination.String(), Key: sub.Key, ClientID: sub.ClientID, SubscriptionName: sub.SubscriptionName,
		NoLocal: sub.NoLocal, Retroactive: sub.Retroactive, Location: sub.Loc.String(),
		BrokerCount: sub.Count, InDoubt: len(sub.InDoubt()), LastAck: sub.LastAck,
	}
	if sub.HasSelector {
		sel := sub.Selector
		doc.Selector = &sel
	}
	x := s.delivered(sub)
	doc.Deliverable = len(x.delivered)
	for _, sk := range x.skipped {
		if sk.ByCount {
			doc.NotReachedByCount++
		} else {
			doc.SkippedBySelector++
		}
	}
	again := map[*refgraph.Message]bool{}
	for _, m := range sub.DeliveredAgain() {
		again[m] = true
	}
	for _, m := range x.delivered {
		if again[m] {
			doc.DeliveredAgain++
		}
	}
	var err error
	if doc.ResolvingFrees, err = s.resolvingSub(sub); err != nil {
		return nil, err
	}
	return marshal(doc)
}

func (s *Snapshot) renderTxInfo(t *refgraph.Transaction) ([]byte, error) {
	type opJSON struct {
		Op           string `json:"op"`
		Destination  string `json:"destination"`
		MessageID    string `json:"messageId"`
		Subscription string `json:"subscription,omitempty"`
		Location     string `json:"location"`
	}
	doc := struct {
		ID         string   `json:"id"`
		Kind       string   `json:"kind"`
		State      string   `json:"state"`
		Commands   []string `json:"commands"`
		Operations []opJSON `json:"operations,omitempty"`
	}{ID: t.ID, Kind: string(t.Kind), State: string(t.State), Commands: []string{}}
	for _, l := range t.Commands {
		doc.Commands = append(doc.Commands, l.String())
	}
	for _, op := range t.Ops {
		o := opJSON{Op: "remove", Destination: op.Destination, MessageID: op.MessageID, Subscription: op.Subscription, Location: op.Loc.String()}
		if op.Add {
			o.Op = "add"
		}
		doc.Operations = append(doc.Operations, o)
	}
	return marshal(doc)
}

// Package difftest is the seeded randomized differential test of kahafs
// against a real ActiveMQ 5.17.2 broker (issue 12 §7).
//
// For every seed, brokerkit's Workload runs a random workload on a real
// embedded broker (queues with and without priorities, durable
// subscriptions with selectors and noLocal, local and XA transactions,
// redelivery, expiry, messages larger than a journal file, clean restarts
// and kills) and leaves its KahaDB store. Then:
//
//   - brokerkit's BrokerView starts a full BrokerService on a copy of the
//     store, once as it is (index present) and once with db.data, db.redo
//     and db.free deleted (index rebuilt from the journal), and records what
//     a client sees: the destinations listed, each queue's count and the
//     order one consumer receives its messages (the default prefetch, one
//     at a time), each durable subscription's count and the messages it
//     delivers after reconnecting first, the prepared XA transactions;
//   - brokerkit's Inspect (a standalone adapter, stopped with cleanup)
//     records which journal files the first cleanup deletes, again with and
//     without the index;
//   - kahafs replays the store (refgraph.StoreOptions + refgraph.Load, with
//     and without the index, as `kahafs holders` and the mount do) and its
//     answers are compared with the broker's: cleanup prediction
//     (GCCandidates), destinations, queue counts and delivery order as the
//     tree shows them (Destination.Stats.Count, Destination.Pending),
//     subscriptions listed, their counts and delivered messages
//     (Subscription.Count, Subscription.Pending), prepared transactions;
//   - compact.Compact rewrites a copy of the store, and BrokerView on the
//     compacted store must report what it reports on the original.
//
// Every disagreement is a Finding with a Kind; the test prints a readable
// report per seed (what kahafs says, what the broker says, the workload
// steps that touched the destination, and an explanation when a known
// broker behaviour accounts for it) and a summary table by kind.
//
// Running it:
//
//	go test ./internal/difftest -run TestDifferential -v
//
// Knobs (environment):
//
//	KAHAFS_DIFF_SEEDS  seeds to run: "1-200", "3,17,42", "1-5,9" (default: DefaultSeeds)
//	KAHAFS_DIFF_OPS    operations per workload (default 40)
//	KAHAFS_DIFF_CACHE  keep workloads and oracle outputs in DIR, keyed by seed and by
//	                   hashes of brokerkit's sources (DIR/workload-H/seed-N-opsK/workload,
//	                   .../oracle-H/*.json: a change to BrokerView or Inspect keeps the
//	                   workloads): re-running after a kahafs fix reuses them, only kahafs's
//	                   side and the compaction are redone (the broker's view of a compacted
//	                   store is cached by the compacted journal's content)
//	KAHAFS_DIFF_KEEP   where failing seeds are kept (default: kahafs-difftest-failures in
//	                   os.TempDir(), never a test's t.TempDir()); with it set, every
//	                   disagreeing seed is kept, explained or not (KAHAFS_DIFF_KEEP_ALL=1:
//	                   every seed)
//	KAHAFS_DIFF_REPLAY a kept seed's directory: TestReplay compares again, without the broker
//	KAHAFS_DIFF_RESULTS write every seed's findings as JSON to FILE (ResultsJSON)
//
// A disagreement found once is never lost. A seed fixes the workload's
// operations, not the store it leaves (the broker's checkpoint and cleanup
// timers, the workload's sleeps, time-to-live and kill all run on the
// clock), so a failing seed is kept whole (Keep): its store, the store
// kahafs compacted from it, the workload's record and the broker's logs,
// the broker's answers (both views, both Inspect runs, the view of the
// compacted store), kahafs's answers and the report, in
// KEEP/seed-N-TIME-*, which the test output names ("KEPT in"). Replay (and
// TestReplay) compares kahafs with the kept broker answers again, without
// a broker. Every store that ever disagreed is committed as a fixture,
// testdata/kept/NAME (a kept seed with a fixture.json saying what
// was found, why, and the findings a replay gives now), and
// TestReplayFixtures replays them all in every CI run.
//
// At most two seeds run at once; each seed runs its JVMs one after the
// other. The test fails when a seed disagrees or cannot be compared; the
// seeds listed in known.json (seed -> short reason) are reported but do not
// fail unless they cannot be compared. Every broker tool (the broker views,
// Inspect) that fails or times out is run once more; failing twice fails
// the seed: no part of a comparison drops out. (Inspect at TRACE, run only
// to show the broker's cleanup lines when the cleanups disagree, fails on
// some stores, AMQ-9780: the finding says so.)
// Without the broker tooling it skips (fails in CI: brokertest.Require); it
// skips with -short.
//
// Layout seeds (issue 26; layout.go, TestLayoutDifferential). The same
// comparison on the multi-store layouts of a broker data directory:
// brokerkit's LayoutWorkload runs a seeded workload on an mKahaDB broker
// (filtered stores, the catch-all or one store per destination, txStore;
// local and XA transactions spanning stores, some left prepared at the
// stop or kill) or on a broker with a KahaDB store and a job scheduler
// store (delayed, repeating and cron jobs, some fired, some removed,
// stopped or killed with jobs pending). Its view restarts a broker on a
// copy and reports per store directory what the first cleanup deleted (the
// scheduler store's: opened standalone, as SchedulerCleanup), what each
// queue and durable subscription recovers, the prepared transactions with
// their operations over every store, the scheduled jobs. kahafs answers as
// `kahafs holders --json` on the data directory does (store.Open: one
// analysis per store, the scheduler by its own model) and must agree store
// by store; compact.CompactLayout compacts a copy and the broker's view of
// the result must recover what it recovers from the original. Knobs:
//
//	KAHAFS_DIFF_MKAHADB_SEEDS, KAHAFS_DIFF_SCHEDULER_SEEDS  seeds of each kind
//	                   (default DefaultLayoutSeeds; "none": none)
//	KAHAFS_DIFF_LAYOUT_OPS  operations per layout workload (DefaultLayoutOps)
//
// A failing layout seed is kept like a single-store one (KeepLayout:
// layout-workload/, oracle/view.json, compacted/data, kahafs.json,
// findings.json, report.txt); TestLayoutReplay replays one
// (KAHAFS_DIFF_REPLAY), TestLayoutReplayFixtures every one under
// testdata/kept.
//
// The broker's queue order. A prioritized queue (prioritizedMessages=true)
// is not delivered in store order: the broker pages messages from the store
// (in store order: priority class HI, DEF, LO, by sequence) into a pending
// list ordered by JMS priority, maxPageSize (200) at a time, whenever that
// list holds fewer than maxPageSize messages, and dispatches the head.
// DispatchOrder reproduces this for one consumer that receives and
// acknowledges one message at a time, with prefetch 1 and with the default
// prefetch (1000), exactly as the real broker did
// (testdata/priority-paging.json). The tree orders a prioritized queue the
// way the default prefetch does (refgraph.DispatchOrder) and BrokerView
// consumes with it. Where the broker's order differs from the tree's, the
// finding is explained (its own kind) only by messages the workload
// recorded as expired before the broker started, which the broker did not
// deliver, and only when DispatchOrder gives the tree's order with them
// taken as unexpired and the broker's with them dropped where the cursor
// pages them in (expired messages took places in the cursor's batches);
// DispatchOrder's handling of an expired message is the real broker's
// (testdata/priority-paging.json).
package difftest

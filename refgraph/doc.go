// Package refgraph replays a KahaDB journal the way ActiveMQ 5.17.2 does
// and explains, for every data file, what keeps it: the "reference graph"
// between data files and the destinations, subscriptions and transactions
// that hold them, together with the exact set of files the broker deletes
// at its next cleanup.
//
// The package is pure: records come in through codec.Visitor (Builder),
// an immutable Graph comes out of Builder.Build. It reads no file, keeps no
// message body (only ids, locations, priorities and sizes), and its memory
// follows the live state (pending messages, open transactions), not the
// journal's size: message ids are stored as an interned producer id plus a
// number, and interned strings are released when nothing live uses them.
//
// A Builder's replay state can be saved between two records
// (Builder.SaveState) and a Builder resumed from it (ResumeBuilder): fed
// the records that follow, it builds exactly the Graph an uninterrupted
// replay would (state.go; package replaycache keeps such states so that a
// store is not replayed again).
//
// # Replay model
//
// A broker restarted on a store with its index (db.data) does not replay
// the whole journal: it keeps the state of the records before its recovery
// position (the index's first in-progress transaction, else the record
// after its last update), reloads the ack-message-file map from the record
// the index names, and processes the records from the recovery position
// on (KAHADB-FORMAT.md §5, §7.1, §9.3). The Builder mirrors this with two
// phases:
//
//   - before the recovery position the records are applied with the
//     semantics of the running broker that wrote them: an unmatched durable
//     ack (empty ack bytes) does not move the subscription's lastAck, the
//     forwarded acks of an ack-compaction file were never processed, and no
//     ack-map entries are recorded (they are in the reloaded map);
//   - from the recovery position on, with replay semantics: every ack moves
//     lastAck, an ack-compaction file whose source still exists is skipped
//     (the broker jumps to journalMaxFileLength), transactions are rebuilt
//     from scratch, the in-flight and the prepared ones apart, as the
//     broker's two maps hold them: an operation of a prepared transaction
//     (a forwarded ack) starts an in-flight one with its id, and a commit
//     ends the in-flight one first (seed 496: preparedKey).
//
// Without an index (Options.Index nil) everything is the second phase.
//
// # Cleanup emulation
//
// Build predicts the first cleanup of a broker started on the store (or,
// with Options.Running, the next cleanup of the running broker) step by
// step as MessageDatabase.checkpointUpdate does (§6.2): candidates = every
// data file; minus the files at or after the last update (after a restart:
// the LOADED trace, possibly in a new file); minus the producer audit and
// ack map files; minus the in-progress transaction range; then every
// destination in Java HashMap iteration order (§6.5, emulated including
// table growth and the key order in which a restarted broker loads its
// index), removing the files of its messages, the files its location
// index's branch keys name (the visitor's isInterestedInKeysBetween takes
// them out, whether a message is still there or not: loctree.go) and the
// files of its subscriptions' commands unless a subscription with nothing
// pending is rewritten because its file is the oldest candidate; finally
// one ascending pass over the ack map. Graph.GCLog renders the steps as the broker's TRACE lines.
//
// Build keeps what the emulation read (whatif.go), so that
// Graph.CleanupAfter can run it again with holders resolved — a queue
// purged, a durable subscription deleted, a prepared transaction committed
// or rolled back — and the records those actions append (a purge's acks)
// written before it: the exact unpin plan (package plan). Nothing is
// replayed again.
//
// Build is a pipeline over the replay's model (model.go): materialize
// makes the graph's destinations with what each delivers; cleanupPoint
// works out the state the cleanup starts from; planCleanup emulates the
// cleanup and returns its plan (the files it deletes, its log, what it
// rewrote); explain takes the plan and returns the holders of every file,
// one function per kind of Reason.
//
// # Invariants (checked in tests)
//
//   - File.Pinned is false exactly for the ids in Graph.GCCandidates;
//   - every pinned file has at least one Reason, a free file none;
//   - every Reason names a concrete destination, subscription, transaction,
//     location or file;
//   - Destination.Messages are in order-index order (priority class HI,
//     DEF, LO; sequence within a class) and Stats count exactly them;
//   - a Graph is never modified after Build and may be read concurrently.
package refgraph

// Package compact rewrites the live state of a stopped broker's KahaDB
// store into fresh journal files, keeping the original as a backup.
//
// What is written (KAHADB-FORMAT §7.3), in this order:
//
//  1. per topic: one KahaSubscriptionCommand per durable subscription
//     (original bytes, retroactive off), then every message still pending
//     for at least one subscription as a non-transactional ADD in the
//     original sequence order, then for every subscription, in ascending
//     message order, an ack for each of those messages it must not get;
//  2. per queue: every pending message as a non-transactional ADD in the
//     original sequence order, priorities preserved;
//  3. destinations with nothing pending: one ack for a message that does
//     not exist, which makes the broker recreate the destination;
//  4. prepared XA transactions: their ADD and ack records verbatim, then
//     their PREPARE record.
//
// Everything else (acked messages, finished and in-flight transactions,
// traces, producer audits, ack maps, compaction markers) is dropped, and
// the index files are not carried over so the broker rebuilds its index by
// replaying the new journal.
//
// Safety: the store's lock is held throughout (a running broker's store is
// refused, naming its pid); the new journal is written into a sibling
// directory, fsynced, replayed and compared with the original's live state
// (and each message record read back with the original record it was taken
// from, byte for byte); only then are the two directories exchanged atomically
// (renameat2 RENAME_EXCHANGE) and the original renamed to the backup name.
// A marker file in the new store lets a rerun finish a swap that a crash
// interrupted; at every instant the store path holds either the intact
// original or the complete compacted store.
package compact

// Package kahaindex reads the index of an ActiveMQ 5.17 KahaDB store
// (db.data, with db.redo and db.free) the way a 5.17.2 broker loads it when
// it starts, without Java: the page file header, the redo recovery after an
// unclean shutdown, the metadata page and, for every stored destination,
// the order index, the message-id and location indexes, the durable
// subscription structures and the persisted statistics. A broker
// restarted on a store with its index keeps that state and replays only the
// journal records after the index's recovery position (Index.ReplayStart).
// Read never writes anything. Read takes the directory that holds db.data
// (KahaDB's indexDirectory when it is set, else the store directory).
//
// Stream reads what Read reads, page for page, with the same checks,
// notes and errors, but hands each destination's order-index messages to
// a Sink as their nodes are read instead of keeping them (and keeps
// neither the message-id nor the location index, so it leaves out Read's
// notes of where those disagree with the order index): what it holds at
// once is a node, not the index. StreamFast gives what Stream gives in two
// passes, the order indexes in one and the message-id and location indexes
// in another beside it, and starts over with Stream (Sink.Restart) when
// either pass meets anything (fast.go). refgraph adopts an index with it.
// From a file on Linux, Stream's iterations of the order, message-id and
// location indexes read the leaves they are about to load 64 at a time
// (readahead.go), where the branches above them tell which: the same
// bytes, checks and counts as a read each.
//
// ReadHead reads only the head of the index (header properties and page 0,
// redo applied): the recovery position, the producer audit and ack-map
// records and the OpenWire version a replay needs before it starts, cheaply
// and leniently (head.go). It is the only other reader of db.data in
// kahafs.
//
// Tests compare Read with brokerkit's IndexDump, which loads the same files
// with the real 5.17.2 classes (MessageDatabase.loadPageFile and the
// broker's own iterators), on every fixture store, on stores made for it,
// on every index of the table tests and on randomly damaged ones.
//
// # Errors and notes
//
// A damaged index gives a *CorruptionError naming the file, the page, the
// byte offset and the structure, wrapping one sentinel (ErrShort,
// ErrFreePage, ErrCycle, ...). When CorruptionError.AtLoad is set the broker
// meets the damage while loading the index: it logs "Index corrupted.
// Recovering the index through journal replay", deletes the index and
// replays the whole journal. A caller should do the same: fall back to a
// full replay. A cycle (ErrCycle) or an overrun read budget (ErrBudget) is
// never AtLoad, even where the broker meets it while loading: its walks
// do not throw there, they go on, and the broker does not start. Damage in what the broker reads only later (the message-id,
// location and subscriptions B-trees, the order index beyond the nodes
// configureLast visits, a statistics page shared with another structure)
// fails Read with AtLoad false: the broker would start and fail when it
// uses them.
//
// Where the broker reads past damage without noticing, Read does too and
// says so in Index.Notes: its B-tree iterators treat an IOException at the
// next leaf as the end of the iteration (the broker then sees fewer
// destinations, messages or subscriptions than were stored); a destination
// listed by the destinations B-tree that a lookup of its key does not find
// gets fresh, empty indexes. Notes also report structures that disagree
// (an order index entry missing from the message-id or location index, a
// subscription missing from one of its four structures).
//
// Read never panics, never loops (page chains, B-tree descents, leaf and
// list chains are checked for cycles, where the broker would loop forever)
// and allocates in proportion to the bytes the files hold: counts are
// trusted only as far as the data they announce is there, and the bytes of
// pages read are bounded by 16 times the size of the files plus 4 MiB
// (ErrBudget; a sound index reads 1.1 to 1.5 times its size).
//
// # db.data
//
// All integers are big-endian (java.io.DataOutput). Everything below is
// wire format.
//
//	offset 0      2048            4096             4096+P          4096+2P
//	+-------------+---------------+----------------+---------------+----
//	| header copy | header copy 2 | page 0         | page 1        | ...
//	| (2048 B)    | (2048 B)      | (P bytes)      |               |
//	+-------------+---------------+----------------+---------------+----
//
// The header (PageFile.MetaData) is a java.util.Properties text, written
// twice and padded with spaces: fileType, fileTypeVersion, metaDataTxId,
// pageSize (P, 4096 by default), cleanShutdown, lastTxId, freePages. The
// broker uses the first copy unless it is unreadable or has no
// metaDataTxId, or the two metaDataTxIds differ (then the second, which is
// written last). A running broker sets cleanShutdown=false; a clean stop
// sets it back to true (and freePages, lastTxId).
//
// Page N starts at 4096 + N×P and begins with a 21-byte header:
//
//	+------+-------------+--------------+--------------+-------------------+
//	| type | txId        | next         | checksum     | payload           |
//	| 1 B  | int64       | int64        | int32 (0)    | P-21 bytes        |
//	+------+-------------+--------------+--------------+-------------------+
//	type 0 free: not in use
//	type 1 part: the payload fills the page and continues in page "next"
//	type 2 end:  "next" is the offset in the page where the payload ends
//	             (21 + length; only its low 32 bits count)
//
// A structure is stored as a page stream: the payloads of a chain of part
// pages ending with an end page (Transaction.openInputStream). A stream
// that starts at or reaches a free page is an EOFException for the broker.
// The page count the broker assumes is (length - 4096) / P.
//
// # db.redo
//
// Before writing a batch of pages to db.data the broker writes it to
// db.redo (PageFile.writeBatch):
//
//	+----------------+----------------+-------+------ 4096 ----+----------------------+----
//	| nextTxId int64 | Adler-32 int64 | count | (zeros)        | page id int64 | page | ...
//	+----------------+----------------+ int32 +----------------+----------------------+----
//
// The Adler-32 covers the page bytes of the batch, not the ids. After an
// unclean shutdown (cleanShutdown=false) PageFile.load re-applies the batch
// to db.data when all count records are there and the checksum matches;
// otherwise db.data already holds a consistent state and the batch is
// ignored. After a clean shutdown the redo file is not read. Each page is
// written at 4096 + id×P computed in Java's long arithmetic (a huge id
// wraps around). Read applies the batch in memory only (PageFile.Redo says
// what happened).
//
// Three states of the files fail the 5.17.2 page file load, so the broker
// rebuilds the index from the journal: an unclean shutdown with db.redo
// missing or empty, a db.redo of 1 to 19 bytes, and a db.data shorter than
// 4096 bytes (not empty). The first and last need the broker to extend a
// file with RecoverableRandomAccessFile.setLength, which in 5.17.2 always
// throws.
//
// # db.free
//
// After a clean shutdown with free pages, db.free holds the free list as a
// SequenceSet (below); if it is missing or short the load fails. The broker
// takes its next pages from the list, in order, and writes over them (the
// replay of the journal past the index's last update may do so at start):
// a list that hands out a page the index uses, or one at an offset no file
// can have, is Damage (freelist.go). A real 5.17.2 broker failed to start on
// most such lists in the free-list grid (refgraph's TestFreeListDamage).
//
// # Metadata (page 0)
//
//	int32 state (1 closed, 2 open)
//	int64 destinations B-tree root page
//	bool [int32 file, int32 offset]   lastUpdate
//	bool [int32 file, int32 offset]   firstInProgressTransactionLocation
//	bool [int32 file, int32 offset]   producerAudit location     (may be absent)
//	int32 version (7 since 5.16)                                 (may be absent: 1)
//	bool [int32 file, int32 offset]   ackMessageFileMap location (version >= 5)
//	int32 openwireVersion (11)                                   (may be absent: 6)
//
// Read handles versions 6 and 7 (version 6 has no statistics pages); older
// indexes are upgraded in place by the broker and give ErrVersion.
//
// # B-tree nodes (BTreeIndex, BTreeNode)
//
// One page stream per node:
//
//	int16 n (keys)
//	n × key
//	bool  branch
//	branch: (n+1) × int64 child page
//	leaf:   n × value, int64 next leaf page (-1 for the last)
//
// Iteration starts at the leftmost leaf (down the first children) and
// follows the next links; lookups go down by binary search on the keys
// (Java's compareTo: String by UTF-16 code unit, Long numerically); the
// last entry is found down the last children. A B-tree whose root page is
// free is empty. Nodes of at most three keys may span several pages; larger
// nodes split instead.
//
// # List nodes (ListIndex, ListNode)
//
// A chain of nodes from a fixed head page, one page stream each:
//
//	int64 next node page (-1 for the last)
//	int16 n
//	n × (key, value)
//
// The broker loads every node of a list when it loads the list; a node of
// one entry may span several pages.
//
// # Marshallers
//
//	String (keys, ids)      DataOutput.writeUTF: uint16 length, modified UTF-8
//	Location                int32 file, int32 offset
//	LocationSize            int32 file, int32 offset, int32 size (version >= 6)
//	MessageKeys             String message id, LocationSize
//	LastAck                 int64 sequence, byte priority class (9 HI, 4 DEF, 0 LO)
//	SequenceSet             int32 n, n × (bool range, int64 first [, int64 last])
//	KahaSubscriptionCommand varint32 length, protobuf message
//	statistics              bool present [, int64 count, totalSize, maxSize,
//	                        minSize, sizeCount]
//
// The destinations B-tree maps "<type>:<name>" (0 queue, 1 topic, 2 temp
// queue, 3 temp topic) to a StoredDestination:
//
//	int64 DEF order index root     B-tree int64 sequence -> MessageKeys
//	int64 location index root      B-tree LocationSize -> int64 sequence
//	int64 message-id index root    B-tree String -> int64 sequence
//	bool  topic
//	  int64 subscriptions root     B-tree String key -> KahaSubscriptionCommand
//	  int64 subscription acks root B-tree String key -> LastAck
//	  int64 ack positions head     list   String key -> SequenceSet
//	  int64 sub locations head     list   String key -> Location
//	int64 LO order index root
//	int64 HI order index root
//	int64 statistics page          (version 7; a free page: none)
//
// # What the broker reads at load
//
// MessageDatabase.loadPageFile reads the metadata, iterates the
// destinations B-tree, and for each destination looks its key up again and
// loads it (loadStoredDestination): the statistics page, the headers of
// every root page, the last entry of each order index class (the next
// sequence is the largest plus one), and for topics both lists whole and an
// iteration of the subscription acks. A topic without messages takes its
// next sequence from the last acks (largest plus one); one with messages
// raises it to the largest sequence in any ack-position set. The broker
// keeps destinations in a map: a key the B-tree lists twice is loaded twice
// and the last load wins. Read does the same, then reads what the broker
// reads later: the order index through a MessageOrderIterator (classes HI,
// DEF, LO, each from sequence 0 found by a lookup), the message-id,
// location and subscriptions B-trees, the statistics.
//
// The broker's page cache matters only for damaged indexes: a page loaded
// with a marshaller is cached with its object, and a later load of the same
// page by another structure gets that object. Read follows it: a page read
// as two kinds of object fails (the broker's ClassCastException), a free
// root page stays the empty node the broker made of it, and a cached page
// never reads as free.
//
// Subscription commands are checked with ActiveMQ's own protobuf rules (an
// unknown tag is not skipped, its data is read as tags; a truncated nested
// message ends quietly; an end-group tag fails), which accept much a strict
// parser refuses; Subscription.DecodeCommand decodes them with codec.
//
// # Where Read differs from the broker
//
// Only on damage, and mostly to stay finite. A cycle, or a SequenceSet
// iteration the broker would not finish, is an error where the broker
// loops. The page cache is not bounded as the broker's is (10,000 pages), so
// on damaged indexes larger than that a page shared between structures may
// fail here and not in the broker; an object of the right class but other
// key or value types fails when read, not when first used. A negative
// length of a subscription's info bytes fails here, where the broker goes
// on parsing from an earlier position. Versions before 6 are not read (the
// broker upgrades them). Numbers in the header are ASCII decimal. Redo
// writes past 16 TiB are refused (the broker's file system would refuse them
// too). The differential test (TestDifferential) compares Read with the
// broker on thousands of randomly damaged indexes.
package kahaindex

// Package fsnode serves a KahaDB store as a read-only tree: mounted with
// FUSE (go-fuse/v2 fs package), or read without it (Snapshot.ReadDir,
// ReadFile, FindMessage: kahafs ls, cat, find; WalkFiles and
// RecordRenderer, for a reader of the journal: kahafs grep, treefiles.go).
// One table per kind of directory (table.go) declares its entries once;
// content is rendered from the journal on demand.
//
//	/                               rootTable (rootDir: current snapshot)
//	├── README                      text (explains the tree and the names)
//	├── summary.json                text
//	├── pinned, free                text: one db-N.log a line
//	├── plan, plan.json             text: the unpin plan (package plan; plan.go)
//	├── by-file/                    byFileTable
//	│   └── db-N.log/               dataFileTable (inode: file id)
//	│       ├── holders             text: "pinned"/"free: ..." then reasons
//	│       ├── holders.json        text
//	│       ├── info.json           text
//	│       ├── OFFSET-TYPE.json    command (inode: file id + offset)
//	│       └── OFFSET-TYPE.body    a message's body (its own inode kind)
//	├── by-destination/             destGroupsTable
//	│   └── queue|topic/            destTypeTable
//	│       └── NAME/               destinationTable
//	│           ├── stats.json      text
//	│           ├── pending/        messageList: N-MESSAGEID.json, .body = command
//	│           ├── in-doubt/       messageList (queues)
//	│           └── subscriptions/  subscriptionsTable (topics)
//	│               └── CLIENT:SUB/ subscriptionTable: info.json, pending/, in-doubt/
//	└── by-transaction/             txsTable
//	    └── ID/                     txTable: state, info.json, in-doubt/,
//	                                FILE-OFFSET-TYPE.json (.body) = command
//
// A table lists its entries by position and finds them by name; each
// entry carries its name, kind, inode number and how to produce it (a
// sub-table, a render, a journal location). The mount's nodes are thin
// adapters over the tables (tableDir for every directory below the root;
// textFile and commandFile for files), so the CLI and the mount list the
// same names and serve the same bytes.
//
// How it is built:
//
//   - Open reads the store once (codec.ReadStore) into an immutable
//     Snapshot: per-file summaries and command counts, and the replay graph
//     (refgraph); with Options.Cache they come from the analysis cache
//     (replaycache) when the store has not changed, and a refresh of a
//     store that grew reads only what was appended. Refresh builds a new Snapshot and swaps it in; the kernel
//     is told to forget the top-level names, so new walks see the new
//     snapshot while walks under way keep theirs. Each node holds the
//     snapshot it was made from.
//   - Nothing is built ahead per entry. Directories list from slices of the
//     snapshot (their tables) through a seekable stream (listStream) and
//     find names by parsing them back: an offset for a command, a position for a pending
//     message, a binary search over sorted raw names for destinations,
//     subscriptions and transactions (nameIndex). A data file's record index
//     is built the first time its directory is used.
//     by-message-id/ looks messages up in two indexes by id (held messages,
//     finished transactions) that a mount makes on a goroutine of its own
//     once mounted and after each refresh (indexAhead).
//   - Inode numbers derive from what a node shows (ino.go): a command has
//     the number of its journal location, so the same command under
//     by-file/, pending/ and by-transaction/ has one inode number; its link
//     count is 1 (counting the directories that list it would take every
//     subscription's pending set: see attr).
//     The generation is the snapshot's.
//   - Sizes are exact: a node's content is rendered when it is looked up,
//     and kept only until it is read to the end or pushed to the kernel
//     (a command file's in a small per-snapshot cache of recent renders or
//     a listing's slabs, a small file's in its node); a later read renders
//     it again. Content
//     never changes within a snapshot: the kernel's page cache keeps it.
//   - Walks cost few round trips (dirhandle.go): every listing is
//     READDIRPLUS, and the listing of a directory that fits in the link
//     limit looks its entries up in bulk and pushes the content of the
//     files it looked up into the page cache (FUSE_NOTIFY_STORE) once the
//     kernel has their inodes. A read-only mount answers the first OPEN
//     with ENOSYS, after which the kernel opens and closes files without
//     asking (no OPEN, RELEASE or FLUSH): grep -r reads a listed file
//     without a single request. The lookups of a listing are rendered
//     ahead on a goroutine of their own (linkahead.go), a message's .json
//     and .body from one decoding, into slabs reused once pushed.
//   - A big directory lists fast: one bigger than the link limit (a
//     DLQ's pending/) is listed by name only (a data file's directory
//     but for its first entries), names made without an allocation per
//     entry, unless the walk looks entries up as it lists them: `ls` of
//     a million entries renders nothing. A file listed by name costs a
//     LOOKUP and a READ, rendered ahead of the walk's lookups.
//   - Memory is bounded (kcache.go): the nodes lookups hand to the kernel
//     are queued, and past Options.KernelCache the oldest are dropped from
//     the kernel (FUSE_NOTIFY_PRUNE, or entry invalidation on kernels
//     before 6.16), and so from go-fuse, which keeps a node for every one
//     the kernel knows.
//   - Read-only twice over: the mount carries the kernel's "ro" option,
//     and every node answers mutating calls with EROFS (roNode). The store
//     is only ever opened for reading.
//   - Errors become errnos in one function, toErrno, which logs what is not
//     a plain miss and maps unknown errors to EIO.
//
// Locking: a Snapshot is written only before it is published; its lazy
// parts (record indexes, descriptors, name indexes) are each behind a
// sync.Once; the content a small file keeps is an atomic pointer, a data
// file's read-ahead bytes and the recent renders are behind their own
// mutexes. go-fuse serializes the calls on one directory handle; a
// listing's renders ahead hand their chunks over through a channel each
// (linkAhead), its slabs are counted references. FS.mu
// serializes Refresh, Mount and Unmount; the current snapshot is an
// atomic pointer read without a lock. The kernelCache's locks are
// described next to its fields; no request ever waits for an entry
// invalidation (the kernel may hold the directory locked for the
// request).
package fsnode

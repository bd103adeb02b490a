// Package fsnode serves a KahaDB store as a read-only FUSE tree
// (go-fuse/v2 fs package): one node type per kind of directory, content
// rendered from the journal on demand.
//
//	/                               rootDir: fixed members, current snapshot
//	├── README                      textFile (explains the tree and the names)
//	├── summary.json                textFile
//	├── pinned, free                textFile: one db-N.log a line
//	├── by-file/                    byFileDir
//	│   └── db-N.log/               dataFileDir (inode: file id)
//	│       ├── holders             textFile: "pinned"/"free: ..." then reasons
//	│       ├── holders.json        textFile
//	│       ├── info.json           textFile
//	│       └── OFFSET-TYPE.json    commandFile (inode: file id + offset)
//	├── by-destination/             byDestinationDir
//	│   └── queue|topic/            destTypeDir
//	│       └── NAME/               destinationDir
//	│           ├── stats.json      textFile
//	│           ├── pending/        pendingDir: N-MESSAGEID.json = commandFile
//	│           └── subscriptions/  subscriptionsDir (topics)
//	│               └── CLIENT:SUB/ subscriptionDir: info.json, pending/
//	└── by-transaction/             byTransactionDir
//	    └── ID/                     transactionDir: state, info.json,
//	                                FILE-OFFSET-TYPE.json = commandFile
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
//     snapshot through a seekable stream (listStream) and find names by
//     parsing them back: an offset for a command, a position for a pending
//     message, a binary search over sorted raw names for destinations,
//     subscriptions and transactions (nameIndex). A data file's record index
//     is built the first time its directory is used.
//   - Inode numbers derive from what a node shows (ino.go): a command has
//     the number of its journal location, so the same command under
//     by-file/, pending/ and by-transaction/ is one inode (a hard link).
//     The generation is the snapshot's.
//   - Sizes are exact: a node's content is rendered when it is looked up
//     (small files keep it; a command file keeps only its size: the open
//     that follows a lookup takes the content from a small per-snapshot
//     cache of recent renders, a later open renders again). Files are opened with FOPEN_KEEP_CACHE: content never
//     changes within a snapshot.
//   - Read-only twice over: the mount carries the kernel's "ro" option,
//     and every node answers mutating calls with EROFS (roNode). The store
//     is only ever opened for reading.
//   - Errors become errnos in one function, toErrno, which logs what is not
//     a plain miss and maps unknown errors to EIO.
//
// Locking: a Snapshot is written only before it is published; its lazy
// parts (record indexes, descriptors, name indexes) are each behind a
// sync.Once, rendered small files behind their node's sync.Once. FS.mu
// serializes Refresh, Mount and Unmount; the current snapshot is an
// atomic pointer read without a lock.
package fsnode

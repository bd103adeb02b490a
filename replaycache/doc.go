// Package replaycache keeps the analysis of a KahaDB store (the replay
// state of refgraph, per-file summaries and command counts) in a file
// outside the store, so that the next `kahafs holders`, mount or
// compaction of an unchanged store reads no journal at all, and one of a
// store that only grew reads only what was appended.
//
// Where: one directory (Options.Dir; by default $KAHAFS_CACHE_DIR, else
// the user cache directory's kahafs/), created 0700. One file per store
// and per set of replay options (journalMaxFileLength, --running, index
// or not, checksums or not, transactions kept), named by hashes of the
// store's absolute, symlink-resolved path and of those options; at most
// four such files per store are kept. Nothing is ever written inside the
// store directory, and a cache directory inside the store is refused.
//
// What it holds (format version cacheVersion):
//
//	"KAHAFSRC" | uint32 version | uint64 payload length | payload | uint32 CRC-32C(payload)
//
//	payload (internal/binenc):
//	  store path | options | time of the stat | number of command types
//	  (codec.NumEntryTypes)
//	  per data file: id, device, inode, size, mtime, ctime (ns), racy flag,
//	                 summary (size, allocated, end, records, batches,
//	                 checksummed, damage), commands per entry type
//	  CRC-32C of the last file's bytes [0, End)
//	  source ids of ack-compaction files met
//	  refgraph builder state, saved before the last file's FileDone
//
// How it is used (Load):
//
//   - hit: every data file has the identity it had (id, device, inode,
//     size, mtime, ctime) and none was "racy" when it was recorded: the
//     state is resumed, the last file's summary handed to it, and the graph
//     built without reading a journal byte;
//   - tail: the files before the last cached one are unchanged, the last
//     cached one is the same inode, not shorter, and its bytes up to the
//     cached End hash the same, and/or files with higher ids appeared: the
//     state is resumed and only the bytes from the cached End on are read
//     (codec.ReadFilesFrom); the summary of that file is merged;
//   - anything else (a file deleted, replaced, shrunk, changed before its
//     End; other index positions; a cache of another version, corrupt,
//     truncated or foreign) is a miss: the store is read in full and the
//     cache file replaced.
//
// A file whose mtime was within racyWindow of the moment its identity was
// taken is "racy": a write in the same clock tick would not have changed
// its identity, so it is never trusted by identity alone (the last file
// is then checked by content and read from its End; an earlier one is a
// miss). The identities are taken before the files are read, so a file
// that changes while it is read is seen as changed the next time.
//
// Side files (side.go): a small answer derived from an analysis (package
// metrics' snapshot) can be kept next to the cache file, NAME.KIND.kside
// beside NAME.kcache (SaveSide), and is handed back (LoadSide) only under
// the conditions of a hit of that cache file, checked without decoding
// it: the same store and options, every data file's identity, none racy,
// the same index positions and index files (refgraph.Options.StateKey),
// the cache file itself unchanged. prune removes those whose cache file
// is gone.
//
// Writes are atomic (a temporary file in the cache directory, fsync,
// rename, fsync of the directory); a cache that cannot be written is
// logged and the result returned all the same. A state is not saved when
// a data file could not be read (a transient condition).
package replaycache

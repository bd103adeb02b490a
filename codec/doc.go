// Package codec reads and writes ActiveMQ KahaDB journal files (db-N.log) and
// the KahaDB commands stored in them.
//
// A data file is a plain sequence of records; there is no file header. All
// integers are big-endian.
//
//	db-N.log
//	+--------------------------------------------------------------------+
//	| batch control record (28 bytes)                                    |
//	|   int32 size = 28 | byte type = 2 | "WRITE BATCH" (11 bytes)       |
//	|   int32 length of the user records that follow in this batch       |
//	|   int64 Adler-32 of those bytes (0 = not checksummed)              |
//	+--------------------------------------------------------------------+
//	| user record                                                        |
//	|   int32 size (whole record, header included) | byte type = 1       |
//	|   payload: byte KahaEntryType | varint32 L | L bytes of protobuf   |
//	+--------------------------------------------------------------------+
//	| ... more user records of the same batch ...                        |
//	+--------------------------------------------------------------------+
//	| next batch control record, or the EOF record "-qMa4" (5 bytes),    |
//	| or zeros / a hole (preallocated space): both end the data          |
//	+--------------------------------------------------------------------+
//
// The writer appends the EOF record after every batch without counting it in
// the file length, so the next batch overwrites it. Preallocated files hold
// an EOF record at offset 0 (and, for chunked preallocation, at every MiB).
//
// A record is located by Location{File, Offset, Size}: Offset is the byte
// offset of the record's size field, Size the whole record length. The first
// user record of a file is at offset 28.
//
// Reading never allocates per record: records and decoded commands hold
// slices into the file's bytes, which stay valid until the DataFile is
// closed. Damage is reported as *CorruptionError values that wrap one of the
// sentinel errors (ErrChecksum, ErrTruncated, ErrTornTail, ...) and carry the
// file name and offset; in lenient mode the reader resynchronises on the next
// batch magic the way the broker's recovery does, and keeps going.
//
// What codec knows of each KahaDB command type (its name, the fields of its
// protobuf message, what its JSON and text show) is one row of one table,
// commandTypes in commandtypes.go, which also says how to add a type.
package codec

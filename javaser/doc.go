// Package javaser reads Java object serialization streams
// (java.io.ObjectOutputStream, protocol version 2) as far as a KahaDB
// journal needs them: the ack-message-file map a
// KahaAckMessageFileMapCommand carries, a serialized
// java.util.HashMap<Integer, HashSet<Integer>> (ParseAckMap). It never
// runs Java code nor instantiates classes: it reads the stream's grammar
// (class descriptors, handles, block data) and builds plain values, bounded
// in depth and size. Of kahafs it uses only openwire.ModifiedUTF8 (Java
// modified UTF-8, which both formats write strings in).
//
//	stream   = magic 0xACED, version 5, content*
//	content  = TC_OBJECT classDesc field values [annotation]
//	         | TC_STRING / TC_LONGSTRING utf | TC_ARRAY classDesc count values
//	         | TC_REFERENCE handle | TC_NULL | TC_BLOCKDATA bytes | ...
//
// Errors wrap ErrMalformed.
package javaser

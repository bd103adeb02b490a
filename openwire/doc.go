// Package openwire decodes the ActiveMQ messages a KahaDB journal holds
// (KahaAddMessageCommand.message): headers, application properties and
// body, for every message type, compressed or not. It depends on nothing
// else of kahafs: codec hands it the blob, the tree and the CLI render it.
//
// The store marshals a message with its own OpenWireFormat: loose
// encoding, no marshal cache, a size prefix, the store's OpenWire version
// (11 unless the index says otherwise). All integers are big-endian.
//
//	int32  size of what follows
//	byte   type: 23 Message, 24 Bytes, 25 Map, 26 Object, 27 Stream,
//	       28 Text, 29 Blob
//	int32 commandId, bool responseRequired
//	obj producerId, obj destination, obj transactionId,
//	obj originalDestination, obj messageId (v10+: textView string first),
//	obj originalTransactionId, string groupID, int32 groupSequence,
//	string correlationId, bool persistent, int64 expiration, byte priority,
//	obj replyTo, int64 timestamp, string type,
//	bytes content, bytes marshalledProperties,
//	obj dataStructure (advisories: decoding stops here),
//	obj targetConsumerId, bool compressed, int32 redeliveryCounter,
//	obj[] brokerPath, int64 arrival, string userID,
//	bool recievedByDFBridge, bool droppable, obj[] cluster,
//	int64 brokerInTime, int64 brokerOutTime,
//	(v10+) bool jmsXGroupFirstForConsumer,
//	(Blob) string remoteBlobUrl, string mimeType, bool deletedByBroker
//
// string: bool present, u16 length, modified UTF-8 (DataOutput.writeUTF);
// bytes: bool present, int32 length, bytes; obj: bool present, type byte,
// its fields; obj[]: bool present, int16 count, objs.
//
// The properties, and a MapMessage body, are a primitive map
// (MarshallingSupport): int32 count, then per entry a writeUTF name, a type
// byte and the value: 0 null, 1 boolean, 2 byte, 3 char (u16), 4 short,
// 5 int, 6 long, 7 double, 8 float, 9 string (writeUTF), 13 long string
// (int32 length), 10 byte[] (int32 length), 11 map, 12 list (int32 count,
// values). A StreamMessage body is such values one after the other. A
// TextMessage body is an int32 length (-1: null) and modified UTF-8; an
// ObjectMessage body a Java serialization stream (its header names the
// class; the object is never deserialized). A compressed body is a zlib
// stream of the above, except a BytesMessage's: an int32 length, then the
// zlib stream.
//
// Decoding is bounded by the blob: a length or count is checked against
// the bytes left before anything is allocated, maps and lists nest at most
// 32 deep, and a compressed body inflates to at most Decoder.MaxBodySize.
// Errors are *DecodeError values naming the field and the byte offset, and
// wrapping one sentinel (ErrTruncated, ErrMalformed, ...). Properties and
// a body that do not decode leave the headers intact.
package openwire

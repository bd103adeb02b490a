package kahaindex

import (
	"errors"
	"fmt"

	"github.com/kahafs/kahafs/codec"
)

// Metadata versions and defaults (MessageDatabase). Part of the format.
const (
	// IndexVersion is the metadata version 5.17.2 writes.
	IndexVersion = 7
	// minVersion: older indexes are upgraded in place by the broker (they
	// lack the location sizes, the ack-position lists, ...); not read here.
	minVersion = 6
	// legacyOpenWireVersion: OpenWireFormat.DEFAULT_LEGACY_VERSION, the
	// OpenWire version of an index whose metadata ends before the field.
	legacyOpenWireVersion = 6
	// versionBeforeField: the version of an index whose metadata ends
	// before its version field.
	versionBeforeField = 1
)

// Metadata is page 0 of the index (MessageDatabase.Metadata).
type Metadata struct {
	State            int32 // 1 closed, 2 open (the broker was running)
	DestinationsPage int64 // root of the destinations B-tree
	// LastUpdate: the last journal record the index reflects; the broker
	// replays from the record after it.
	LastUpdate *codec.Location
	// FirstInProgressTx: first record of the oldest transaction in
	// progress at the last checkpoint; when set, replay starts there.
	FirstInProgressTx *codec.Location
	// ProducerAudit: the KahaProducerAuditCommand the broker reloads.
	ProducerAudit *codec.Location
	Version       int32
	// AckMap: the KahaAckMessageFileMapCommand the broker reloads.
	AckMap          *codec.Location
	OpenWireVersion int32
}

// readMetadata is MessageDatabase.Metadata.read, including which fields
// may be missing: an EOFException at the producer audit, the version or the
// OpenWire version is caught (older indexes end earlier), anywhere else it
// fails the load.
func readMetadata(in dataInput) (Metadata, error) {
	var m Metadata
	var err error
	if m.State, err = readI32(in); err != nil {
		return m, err
	}
	if m.DestinationsPage, err = readI64(in); err != nil {
		return m, err
	}
	if m.LastUpdate, err = readOptLocation(in); err != nil {
		return m, err
	}
	if m.FirstInProgressTx, err = readOptLocation(in); err != nil {
		return m, err
	}
	if m.ProducerAudit, err = readOptLocation(in); err != nil && !isEOF(err) {
		return m, err
	}
	if m.Version, err = readI32(in); err != nil {
		if !isEOF(err) {
			return m, err
		}
		m.Version = versionBeforeField
	}
	if m.Version >= 5 {
		if m.AckMap, err = readOptLocation(in); err != nil {
			return m, err
		}
	}
	if m.OpenWireVersion, err = readI32(in); err != nil {
		if !isEOF(err) {
			return m, err
		}
		m.OpenWireVersion = legacyOpenWireVersion
	}
	return m, nil
}

// readOptLocation: boolean present, then LocationMarshaller (int file,
// int offset).
func readOptLocation(in dataInput) (*codec.Location, error) {
	ok, err := readBool(in)
	if err != nil || !ok {
		return nil, err
	}
	l, err := readLocation(in)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

func readLocation(in dataInput) (codec.Location, error) {
	var l codec.Location
	var err error
	if l.File, err = readI32(in); err != nil {
		return l, err
	}
	l.Offset, err = readI32(in)
	return l, err
}

// locationBytes is how many bytes readLocationSize reads.
func locationBytes(version int32) int {
	if version < 6 {
		return 8
	}
	return 12
}

// readLocationSize is MessageDatabase.LocationSizeMarshaller: file,
// offset, and from version 6 on the record size.
func readLocationSize(in dataInput, version int32) (codec.Location, error) {
	l, err := readLocation(in)
	if err != nil || version < 6 {
		return l, err
	}
	l.Size, err = readI32(in)
	return l, err
}

// storedDest is a value of the destinations B-tree
// (StoredDestinationMarshaller): the root pages of a destination's indexes.
type storedDest struct {
	defaultPrio, locations, messageIDs int64
	topic                              bool
	subscriptions, subscriptionAcks    int64
	ackPositions, subLocations         int64
	lowPrio, highPrio                  int64
	stats                              int64
	hasStats                           bool
}

func readStoredDest(in dataInput, version int32) (storedDest, error) {
	var d storedDest
	var err error
	read := func(p *int64) {
		if err == nil {
			*p, err = readI64(in)
		}
	}
	read(&d.defaultPrio)
	read(&d.locations)
	read(&d.messageIDs)
	if err != nil {
		return d, err
	}
	if d.topic, err = readBool(in); err != nil {
		return d, err
	}
	if d.topic {
		read(&d.subscriptions)
		read(&d.subscriptionAcks)
		read(&d.ackPositions)
		read(&d.subLocations)
	}
	read(&d.lowPrio)
	read(&d.highPrio)
	if version >= 7 {
		read(&d.stats)
		d.hasStats = true
	}
	return d, err
}

// messageKeys is a value of the order index (MessageKeysMarshaller).
type messageKeys struct {
	id  jstring
	loc codec.Location
}

func readMessageKeys(in dataInput, version int32) (messageKeys, error) {
	id, err := readUTF(in)
	if err != nil {
		return messageKeys{}, err
	}
	loc, err := readLocationSize(in, version)
	return messageKeys{id, loc}, err
}

// LastAck priorities (MessageOrderIndex.HI, DEF, LO). Part of the format.
const (
	PriorityHigh    byte = 9
	PriorityDefault byte = 4
	PriorityLow     byte = 0
)

type lastAck struct {
	seq  int64
	prio byte
}

// readLastAck is LastAckMarshaller: the sequence, and from version 3 on the
// priority class byte (before that, the constructor's HI).
func readLastAck(in dataInput, version int32) (lastAck, error) {
	a := lastAck{prio: PriorityHigh}
	var err error
	if a.seq, err = readI64(in); err != nil || version < 3 {
		return a, err
	}
	a.prio, err = readU8(in)
	return a, err
}

// Range is one Sequence of a SequenceSet: First through Last.
type Range struct{ First, Last int64 }

// readSequenceSet is SequenceSet.Marshaller: int count, then per sequence a
// boolean "range", and first+last or the single value. A count of zero or
// less is an empty set.
func readSequenceSet(in dataInput) ([]Range, error) {
	n, err := readI32(in)
	if err != nil {
		return nil, err
	}
	out := []Range{}
	for i := int32(0); i < n; i++ {
		isRange, err := readBool(in)
		if err != nil {
			return nil, err
		}
		var r Range
		if r.First, err = readI64(in); err != nil {
			return nil, err
		}
		r.Last = r.First
		if isRange {
			if r.Last, err = readI64(in); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// Stats is a destination's persisted MessageStoreStatistics (index version
// 7): message count and size statistics.
type Stats struct {
	Count     int64
	TotalSize int64
	MaxSize   int64
	MinSize   int64
	SizeCount int64
}

// readStats is MessageStoreStatisticsMarshaller: boolean present, then five
// longs. Absent statistics are nil.
func readStats(in dataInput) (*Stats, error) {
	ok, err := readBool(in)
	if err != nil || !ok {
		return nil, err
	}
	var s Stats
	for _, p := range []*int64{&s.Count, &s.TotalSize, &s.MaxSize, &s.MinSize, &s.SizeCount} {
		if *p, err = readI64(in); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// readSubscriptionCommand is KahaSubscriptionCommandMarshaller: the
// protobuf message framed by its varint32 length (BaseMessage.mergeFramed),
// returned unframed. A negative length is the broker's
// NegativeArraySizeException, a short stream its
// InvalidProtocolBufferException. The message is then checked the way the
// broker's protobuf parser reads it (checkSubscriptionCommand), which
// accepts much that a strict parser refuses (truncated nested messages, for
// one) and refuses some that one accepts; Subscription.DecodeCommand
// decodes it.
func readSubscriptionCommand(in dataInput) ([]byte, error) {
	n, err := readRawVarint32(in)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, in.fail(ErrNegative, fmt.Sprintf("subscription command length %d", n), false)
	}
	var body []byte
	for left := int(n); left > 0; {
		chunk := make([]byte, min(left, 1<<16)) // grows only as the stream delivers
		if err := in.readFull(chunk); err != nil {
			if errors.Is(err, ErrShort) {
				return nil, in.fail(ErrProtobuf, "input ended before a full message frame could be read", false)
			}
			return nil, err
		}
		body = append(body, chunk...)
		left -= len(chunk)
	}
	if body == nil {
		body = []byte{}
	}
	if err := checkSubscriptionCommand(body); err != nil {
		if errors.Is(err, errPBNegative) {
			return nil, in.fail(ErrNegative, "subscription command: "+err.Error(), false)
		}
		return nil, in.fail(ErrProtobuf, err.Error(), false)
	}
	return body, nil
}

// readRawVarint32 is BaseMessage.readRawVarint32(InputStream): at most five
// bytes make the value; after a fifth byte with its top bit set up to five
// more are skipped, and a tenth with its top bit set is malformed.
func readRawVarint32(in dataInput) (int32, error) {
	next := func() (int8, error) {
		b, err := readU8(in)
		if err != nil && errors.Is(err, ErrShort) {
			return 0, in.fail(ErrProtobuf, "input ended in the middle of a field", false)
		}
		return int8(b), err
	}
	var result int32
	for shift := 0; shift < 35; shift += 7 {
		b, err := next()
		if err != nil {
			return 0, err
		}
		if shift == 28 {
			result |= int32(b) << 28
		} else {
			result |= int32(b&0x7f) << shift
		}
		if b >= 0 {
			return result, nil
		}
	}
	for i := 0; i < 5; i++ {
		b, err := next()
		if err != nil {
			return 0, err
		}
		if b >= 0 {
			return result, nil
		}
	}
	return 0, in.fail(ErrProtobuf, "malformed varint", false)
}

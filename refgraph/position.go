package refgraph

import (
	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/binenc"
)

// position is the scalar part of the replay state: where the replay is
// (the broker's restart phases, the compaction file being skipped), what
// it has seen (the latest audit, ack-map and update records) and its
// counters. Builder embeds it.
//
// Every field is part of the saved state (state.go), written and read
// back through one list, fields: a field added here is saved once it is
// listed there (TestPositionFieldsListed fails until it is), and
// stateVersion is bumped.
type position struct {
	// restart phases (§9.3): phase B replays from the index's recovery
	// position
	phaseB      bool
	phaseBStart codec.Location
	seenPhaseB  bool

	txSeq    int64 // order of the next open transaction
	doneNext int   // next slot of the ring of finished transactions
	doneFull bool
	nCommit  int64
	nRollbk  int64

	ackLoadOK  bool
	auditOK    bool
	lastAudit  codec.Location
	hasAudit   bool
	lastAckMap codec.Location
	hasAckMap  bool
	// changes after the latest audit / ack-map record: a running broker
	// writes new ones at its next checkpoint
	addAfterAudit bool
	ackAfterMap   bool

	lastUpdate    codec.Location
	hasLastUpdate bool
	lastRecord    codec.Location
	commands      int64
	skipped       int64

	// compaction handling for the current file
	skipping   bool
	skipTo     int64
	skipWarned bool
	copyPhase  bool // phase A: still inside the forwarded acks

	// the index's state was adopted at the recovery position (adopted:
	// tried; adopt.go)
	adopted, adoptedIndex bool

	// reached: the replay is past every ack-compaction file whose source
	// is gone below this id
	reached int32
}

// positionFields visits every field of a position, in the order of the
// saved state.
type positionFields interface {
	bool(*bool)
	int(*int)
	int32(*int32)
	int64(*int64)
	loc(*codec.Location)
}

// fields hands every field of p to v, in the order they are saved. It is
// the only list of them.
func (p *position) fields(v positionFields) {
	v.bool(&p.phaseB)
	v.loc(&p.phaseBStart)
	v.bool(&p.seenPhaseB)

	v.int64(&p.txSeq)
	v.int(&p.doneNext)
	v.bool(&p.doneFull)
	v.int64(&p.nCommit)
	v.int64(&p.nRollbk)

	v.bool(&p.ackLoadOK)
	v.bool(&p.auditOK)
	v.loc(&p.lastAudit)
	v.bool(&p.hasAudit)
	v.loc(&p.lastAckMap)
	v.bool(&p.hasAckMap)
	v.bool(&p.addAfterAudit)
	v.bool(&p.ackAfterMap)

	v.loc(&p.lastUpdate)
	v.bool(&p.hasLastUpdate)
	v.loc(&p.lastRecord)
	v.int64(&p.commands)
	v.int64(&p.skipped)

	v.bool(&p.skipping)
	v.int64(&p.skipTo)
	v.bool(&p.skipWarned)
	v.bool(&p.copyPhase)

	v.bool(&p.adopted)
	v.bool(&p.adoptedIndex)

	v.int32(&p.reached)
}

// savePosition writes the fields of p.
func savePosition(w *binenc.Writer, p *position) { p.fields(positionWriter{w}) }

// loadPosition reads the fields of p.
func loadPosition(r *binenc.Reader, p *position) { p.fields(positionReader{r}) }

type positionWriter struct{ w *binenc.Writer }

func (pw positionWriter) bool(v *bool)          { pw.w.Bool(*v) }
func (pw positionWriter) int(v *int)            { pw.w.Int(*v) }
func (pw positionWriter) int32(v *int32)        { pw.w.Varint(int64(*v)) }
func (pw positionWriter) int64(v *int64)        { pw.w.Varint(*v) }
func (pw positionWriter) loc(v *codec.Location) { pw.w.Location(*v) }

type positionReader struct{ r *binenc.Reader }

func (pr positionReader) bool(v *bool)          { *v = pr.r.Bool() }
func (pr positionReader) int(v *int)            { *v = pr.r.Int() }
func (pr positionReader) int32(v *int32)        { *v = pr.r.Int32() }
func (pr positionReader) int64(v *int64)        { *v = pr.r.Varint() }
func (pr positionReader) loc(v *codec.Location) { *v = pr.r.Location() }

package main

import (
	"strconv"

	"github.com/kahafs/kahafs/codec"
)

// The record builders: each takes a template of its role, replaces the
// identities (destination, transaction, message id, subscription) in the
// command and in its OpenWire blob, and writes it.

// add writes an ADD of a new message from a random producer.
func (g *generator) add(r role, dest int, tx codec.TxID) msgRef {
	return g.addBy(r, dest, tx, g.rng.IntN(numProducers))
}

// addBy writes an ADD of a new message from producer p.
func (g *generator) addBy(r role, dest int, tx codec.TxID, p int) msgRef {
	t := g.pick(r)
	g.pseq[p]++
	g.bseq++
	m := msgRef{prod: int32(p), dest: int16(dest), seq: g.pseq[p], bseq: g.bseq}
	d := g.dests[dest].d
	b := owAppendProducer(g.obj[:0], g.prods[p])
	o1 := len(b)
	b = owAppendDest(b, d)
	o2 := len(b)
	b = owAppendTx(b, tx)
	o3 := len(b)
	b = owAppendMessageID(b, g.prods[p], m.seq, m.bseq)
	g.obj = b
	g.body = g.bodyText(g.body[:0], d, m.seq)
	g.blob = splice(g.blob[:0], t.cmd.Message, []edit{
		{t.msg.producer, b[:o1]}, {t.msg.dest, b[o1:o2]}, {t.msg.tx, b[o2:o3]},
		{t.msg.messageID, b[o3:]}, {t.msg.body, g.body}})
	g.cmd = t.cmd
	g.cmd.Dest, g.cmd.MessageID, g.cmd.Message = d, []byte(g.messageID(m)), g.blob
	if tx.Kind != codec.NoTx {
		g.cmd.Tx = tx
	}
	g.man.Messages++
	g.append()
	return m
}

// bodyText appends a TextMessage body of bodyLen() characters: the
// destination and sequence number, then filler text.
func (g *generator) bodyText(dst []byte, d codec.Destination, seq int64) []byte {
	n := g.bodyLen()
	text := append(g.txt[:0], d.Name...)
	text = append(text, " #"...)
	text = strconv.AppendInt(text, seq, 10)
	text = append(text, ' ')
	off := g.rng.IntN(fillerSize)
	text = append(text, g.filler[off:off+max(0, n-len(text))]...)[:n]
	g.txt = text
	g.man.BodyBytes += int64(n)
	return owAppendTextBody(dst, text)
}

// ack writes a REMOVE of message m: for subscription sub of its topic
// (sub ≥ 0) or from its queue, in transaction tx if it has one.
func (g *generator) ack(r role, m msgRef, sub int16, tx codec.TxID) {
	t := g.pick(r)
	d := &g.dests[m.dest]
	b := owAppendDest(g.obj[:0], d.d)
	o1 := len(b)
	b = owAppendTx(b, tx)
	o2 := len(b)
	b = owAppendMessageID(b, g.prods[m.prod], m.seq, m.bseq)
	g.obj = b
	g.blob = splice(g.blob[:0], t.cmd.Ack, []edit{
		{t.ack.dest, b[:o1]}, {t.ack.tx, b[o1:o2]}, {t.ack.first, b[o2:]}, {t.ack.last, b[o2:]}})
	g.cmd = t.cmd
	g.cmd.Dest, g.cmd.MessageID, g.cmd.Ack = d.d, []byte(g.messageID(m)), g.blob
	if tx.Kind != codec.NoTx {
		g.cmd.Tx = tx
	}
	if sub >= 0 {
		g.cmd.SubscriptionKey = []byte(d.subs[sub])
	}
	g.append()
}

// txEnd writes a PREPARE, COMMIT or ROLLBACK of tx.
func (g *generator) txEnd(r role, tx codec.TxID) {
	g.cmd = g.pick(r).cmd
	g.cmd.Tx = tx
	g.append()
}

// subscribe writes the SUBSCRIPTION command of durable subscription k of
// topic dest.
func (g *generator) subscribe(dest, k int) {
	t := g.pick(roleSubscription)
	d := &g.dests[dest]
	b := owAppendStr(g.obj[:0], d.names[k][0])
	o1 := len(b)
	b = owAppendDest(b, d.d)
	o2 := len(b)
	b = owAppendStr(b, d.names[k][1])
	g.obj = b
	g.blob = splice(g.blob[:0], t.cmd.SubscriptionInfo, []edit{
		{t.sub.clientID, b[:o1]}, {t.sub.dest, b[o1:o2]}, {t.sub.subName, b[o2:]}, {t.sub.subscribedDest, b[o1:o2]}})
	g.cmd = t.cmd
	g.cmd.Dest, g.cmd.SubscriptionKey, g.cmd.SubscriptionInfo = d.d, []byte(d.subs[k]), g.blob
	g.append()
}

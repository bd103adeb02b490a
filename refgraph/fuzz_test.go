package refgraph

import (
	"testing"

	"github.com/kahafs/kahafs/codec"
)

// FuzzReplay feeds arbitrary command sequences to the Builder: it must
// never panic, and the graph must keep its invariants. The input is a list
// of [step byte][len byte][payload] chunks (payload as in a user record);
// an odd step moves to the next data file, as records come in journal
// order.
func FuzzReplay(f *testing.F) {
	seed := func(cmds ...*codec.Command) []byte {
		var b []byte
		for i, c := range cmds {
			p := codec.AppendCommand(nil, c)
			if len(p) > 255 {
				continue
			}
			b = append(b, byte(i%4/3), byte(len(p)))
			b = append(b, p...)
		}
		return b
	}
	sub := codec.Command{Type: codec.SubscriptionCommand, Dest: topic("T"), SubscriptionKey: []byte("c:s"), SubscriptionInfo: subscriptionInfo("c", "s", "T", "")}
	sub.Set(codec.FieldSubscriptionDestination, codec.FieldSubscriptionKey, codec.FieldSubscriptionInfo)
	add := codec.Command{Type: codec.AddMessageCommand, Dest: topic("T"), MessageID: []byte("ID:x:1:1:1:1"), Message: []byte{1, 2}, Priority: 4}
	add.Set(codec.FieldAddDestination, codec.FieldAddMessageID, codec.FieldAddMessage)
	qadd := add
	qadd.Dest = queue("Q")
	tx := codec.NewLocalTx([]byte("ID:c"), 1)
	txadd := qadd
	txadd.Tx = tx
	txadd.Set(codec.FieldAddTransaction)
	ack := codec.Command{Type: codec.RemoveMessageCommand, Dest: topic("T"), MessageID: []byte("ID:x:1:1:1:1"), SubscriptionKey: []byte("c:s")}
	ack.Set(codec.FieldRemoveDestination, codec.FieldRemoveMessageID, codec.FieldRemoveSubscriptionKey)
	commit := codec.Command{Type: codec.CommitCommand, Tx: tx}
	commit.Set(codec.FieldTransaction)
	unsub := codec.Command{Type: codec.SubscriptionCommand, Dest: topic("T"), SubscriptionKey: []byte("c:s")}
	unsub.Set(codec.FieldSubscriptionDestination, codec.FieldSubscriptionKey)
	f.Add(seed(&sub, &add, &qadd, &txadd, &ack, &commit, &unsub, &add))
	f.Add(seed(&txadd, &txadd, &commit, &commit, &unsub, &sub, &sub, &ack, &ack))
	f.Fuzz(func(t *testing.T, in []byte) {
		b := NewBuilder(Options{MaxFileLength: 4096})
		var c codec.Command
		off := map[int32]int32{}
		file := int32(1)
		for len(in) >= 2 {
			file += int32(in[0] % 2)
			n := int(in[1])
			in = in[2:]
			if n > len(in) {
				n = len(in)
			}
			p := in[:n]
			in = in[n:]
			if codec.DecodeCommand(p, &c) != nil {
				continue
			}
			o := off[file]
			if o == 0 {
				o = 28
			}
			loc := codec.Location{File: file, Offset: o, Size: int32(n + 5)}
			off[file] = o + int32(n+5)
			if err := b.Command(codec.Record{Loc: loc}, &c); err != nil {
				t.Fatal(err)
			}
		}
		g, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, g)
	})
}

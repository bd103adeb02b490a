package selector

import (
	"bytes"
	"errors"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/openwire"
)

// storeMessages decodes every message a fixture's journal adds, by
// message id (the last version of each).
func storeMessages(t *testing.T, storeDir string) map[string]*openwire.Message {
	t.Helper()
	out := map[string]*openwire.Message{}
	forEachMessage(t, storeDir, func(id string, b []byte) {
		m, err := openwire.DecodeMessage(b)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		out[id] = m
	})
	return out
}

// forEachMessage calls fn with every message blob (a copy) the journal
// adds or updates, in journal order.
func forEachMessage(t *testing.T, storeDir string, fn func(id string, blob []byte)) {
	t.Helper()
	st, err := codec.OpenStore(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range st.Files {
		f, err := codec.OpenDataFile(fi.Path, fi.ID)
		if err != nil {
			t.Fatal(err)
		}
		r := codec.NewReader(f, codec.ReadOptions{})
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var c codec.Command
			if err := codec.DecodeCommand(rec.Payload(), &c); err != nil {
				t.Fatal(err)
			}
			if c.Type != codec.AddMessageCommand && c.Type != codec.UpdateMessageCommand {
				continue
			}
			fn(string(c.MessageID), append([]byte(nil), c.Message...))
		}
		f.Close()
	}
}

// The topics fixture's selector subscription c-sel:s-sel ("parity =
// 'even'"): the store hands a restarted broker 24 candidates, the broker
// counts 15 for it (and delivers those): the even ones.
func TestFixtureSelectorSubscription(t *testing.T) {
	var fx *brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "topics" {
			fx = &f
		}
	}
	if fx == nil {
		t.Fatal("no topics fixture")
	}
	sub := fx.Expected.Inspect.Subscriptions["topic://T.NEWS|c-sel:s-sel"]
	if sub.Selector == nil || len(sub.Pending) <= sub.Count {
		t.Fatalf("fixture changed: %+v", sub)
	}
	sel, err := Parse(*sub.Selector)
	if err != nil {
		t.Fatal(err)
	}
	msgs := storeMessages(t, fx.StoreDir)
	matched := 0
	for _, id := range sub.Pending {
		m, ok := msgs[id]
		if !ok {
			t.Fatalf("%s not in the journal", id)
		}
		ok, err := sel.Match(FromOpenWire(m))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		parity, _ := m.Properties.Get("parity")
		if ok != (parity.Str == "even") {
			t.Errorf("%s (parity %q): Match %v", id, parity.Str, ok)
		}
		if ok {
			matched++
		}
	}
	if matched != sub.Count {
		t.Errorf("%d of %d candidates match %q; the broker counts %d", matched, len(sub.Pending), *sub.Selector, sub.Count)
	}
}

// Every message of the fixtures (every message type, every property type,
// hostile names) evaluates against selectors over every header and
// property kind without an error other than the exceptions ActiveMQ
// throws.
func TestFixtureMessages(t *testing.T) {
	sels := []*Selector{}
	for _, s := range []string{
		"JMSType IS NULL OR JMSType LIKE '%'", "JMSPriority BETWEEN 0 AND 9", "JMSDeliveryMode = 'PERSISTENT'",
		"JMSXDeliveryCount > 1", "JMSDestination LIKE 'queue://%' OR JMSDestination LIKE 'topic://%'",
		"JMSMessageID LIKE 'ID:%'", "JMSXProducerTXID IS NOT NULL", "JMSActiveMQBrokerPath = 'null'",
		"JMSTimestamp > 0 AND JMSExpiration >= 0", "JMSXGroupID IS NOT NULL AND JMSXGroupSeq > 0", "JMSCorrelationID = 'corr-1'",
		"JMSReplyTo IS NOT NULL", "JMSXUserID IS NOT NULL", "parity IN ('even', 'odd')", "idx > 10",
	} {
		sels = append(sels, MustParse(s))
	}
	n := 0
	for _, fx := range brokertest.Fixtures(t) {
		for id, m := range storeMessages(t, fx.StoreDir) {
			msg := FromOpenWire(m)
			if m.MessageID != nil && msg.MessageID != m.MessageID.String() {
				t.Errorf("%s: JMSMessageID %q", id, msg.MessageID)
			}
			for _, sel := range sels {
				if _, err := sel.Match(msg); err != nil && !errors.Is(err, ErrException) {
					t.Errorf("%s/%s %q: %v", fx.Name, id, sel, err)
				}
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no messages")
	}
	t.Logf("%d messages", n)
}

// TestOracleFixtures compares Match with ActiveMQ's on every message the
// fixture stores hold (made by a real broker: every message type, every
// property type, dead-lettered, redelivered, transacted, hostile names),
// with selectors over every header and every property name they use.
func TestOracleFixtures(t *testing.T) {
	brokertest.Require(t)
	var in oracleIn
	names := map[string]bool{}
	for _, fx := range brokertest.Fixtures(t) {
		raw := storeBlobs(t, fx.StoreDir)
		for _, b := range raw {
			in.Messages = append(in.Messages, cmsg{Blob: b})
			m, _ := openwire.DecodeMessage(b)
			if m != nil {
				for _, e := range propEntries(m.Properties) {
					names[e.Name] = true
				}
			}
		}
	}
	// Messages whose properties do not unmarshal: one entry more than
	// there are, an unknown value type, a name running past the end.
	corrupted := 0
	for _, b := range storeBlobs(t, brokertest.Fixtures(t)[0].StoreDir) {
		m, err := openwire.DecodeMessage(b)
		if err != nil || m.Properties.Len() == 0 || corrupted >= 30 {
			continue
		}
		off := bytes.Index(b, m.MarshalledProperties)
		for i, damage := range []func(p []byte){
			func(p []byte) { p[3]++ },
			func(p []byte) { p[6+int(p[5])] = 0x63 },   // the first value's type byte
			func(p []byte) { p[4], p[5] = 0x7f, 0xff }, // the first name's length
		} {
			if i == corrupted%3 {
				c := append([]byte(nil), b...)
				damage(c[off:])
				in.Messages = append(in.Messages, cmsg{Blob: c})
				corrupted++
			}
		}
	}
	var sels []string
	for h := range headers {
		sels = append(sels, h+" IS NULL", h+" = "+h, h+" > 0", h+" LIKE '%1%'", "'' + "+h+" LIKE '%'", h+" IN ('x', 'PERSISTENT')", h)
	}
	for p := range names {
		if !isIDStart(p[0]) || strings.IndexFunc(p, func(r rune) bool { return r >= 0x80 || !isIDPart(byte(r)) }) >= 0 {
			continue
		}
		sels = append(sels, p+" IS NULL", p+" = "+p, p+" > 0", p+" < 0.5", p+" LIKE '%e%'", p+" + 1 > 0", "'' + "+p+" LIKE '%'",
			p+" IN ('even', 'x')", p, "NOT "+p, p+" = 'even'", p+" <> 1", "-"+p+" < 0", "INLIST("+p+", 'a')")
	}
	sort.Strings(sels)
	all := make([]int, len(in.Messages))
	for i := range all {
		all[i] = i
	}
	for _, s := range sels {
		in.Cases = append(in.Cases, oracleCase{Selector: s, Messages: all})
	}
	out := runOracle(t, in)
	tl := compareOracle(in, out, decodeBlobs(t, out.Blobs))
	tl.report(t)
	if tl.evals < 10000 || tl.exceptions["javax.jms.JMSException"] == 0 {
		t.Errorf("only %d evaluations, %d JMSExceptions", tl.evals, tl.exceptions["javax.jms.JMSException"])
	}
}

// storeBlobs is every message blob a store's journal holds.
func storeBlobs(t *testing.T, storeDir string) [][]byte {
	t.Helper()
	var out [][]byte
	forEachMessage(t, storeDir, func(id string, b []byte) { out = append(out, b) })
	return out
}

func propEntries(m *openwire.Map) []openwire.Entry {
	if m == nil {
		return nil
	}
	return m.Entries
}

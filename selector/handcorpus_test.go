package selector

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
)

var update = flag.Bool("update", false, "rerun ActiveMQ (brokerkit SelectorCheck) on the hand-written corpus and rewrite testdata/handcorpus.json")

// handCorpusFile holds the hand-written corpus and ActiveMQ's answers to
// it: the messages as ActiveMQ marshalled them, and for every selector
// its parse, printed expression and matches.
var handCorpusFile = filepath.Join("testdata", "handcorpus.json")

type handCorpus struct {
	In  oracleIn  `json:"in"`
	Out oracleOut `json:"out"`
}

// TestHandCorpus replays ActiveMQ's recorded answers to the hand-written
// corpus (no Java needed); -update records them again.
func TestHandCorpus(t *testing.T) {
	in := oracleCorpus(0, 0)
	if *update {
		brokertest.Require(t)
		out := runOracle(t, in)
		raw, err := json.MarshalIndent(handCorpus{In: in, Out: out}, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(handCorpusFile, append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(handCorpusFile)
	if err != nil {
		t.Fatalf("%v (go test -run TestHandCorpus -update records it)", err)
	}
	var hc handCorpus
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // int64s exactly
	if err := dec.Decode(&hc); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(in)
	got, _ := json.Marshal(hc.In)
	if !bytes.Equal(want, got) {
		t.Fatalf("%s is for another corpus: run go test -run TestHandCorpus -update", handCorpusFile)
	}
	tl := compareOracle(hc.In, hc.Out, decodeBlobs(t, hc.Out.Blobs))
	tl.report(t)
	if tl.parsedBoth == 0 || tl.rejectedBoth == 0 || tl.evals == 0 {
		t.Errorf("the hand corpus compared nothing: %+v", tl)
	}
}

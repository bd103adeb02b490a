package kahaindex_test

import (
	"fmt"
	"path/filepath"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/kahaindex"
)

// Read a store's index: where replay resumes, and each destination's
// pending messages and durable subscriptions.
func ExampleRead() {
	ix, err := kahaindex.Read(filepath.Join(brokertest.RepoRoot(), "testdata", "stores", "topics", "store"))
	if err != nil {
		fmt.Println(err) // a *CorruptionError with AtLoad: replay the whole journal instead
		return
	}
	rs := ix.ReplayStart()
	fmt.Printf("replay from the record after %v\n", rs.At)
	for _, d := range ix.Destinations {
		fmt.Printf("%s: %d messages, next sequence %d\n", d.Key, len(d.Messages), d.NextSeq)
		for _, s := range d.Subscriptions {
			fmt.Printf("  %s: command at %v, last ack %d, pending %v\n", s.Key, s.Loc, s.LastAck, s.AckPositions)
		}
	}
	// Output:
	// replay from the record after 8:5013
	// 1:T.ALL: 0 messages, next sequence 90
	//   c-all:s-all: command at 5:372, last ack 89, pending [{90 90}]
	// 1:T.NEWS: 24 messages, next sequence 40
	//   c-early:s-early: command at 2:9499, last ack 24, pending [{25 40}]
	//   c-sel:s-sel: command at 2:9733, last ack 8, pending [{10 10} {12 12} {14 14} {16 16} {18 18} {20 20} {22 22} {24 24} {26 26} {28 28} {30 30} {32 32} {34 34} {36 36} {38 38} {40 40}]
	//   c-late:s-late: command at 3:5401, last ack 22, pending [{23 40}]
}

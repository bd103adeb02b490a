package difftest

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/kahafs/kahafs/internal/brokertest"
)

// Workload is the part of brokerkit Workload's workload.json the
// comparison uses.
type Workload struct {
	Seed   int64          `json:"seed"`
	Ops    int            `json:"ops"`
	Config WorkloadConfig `json:"config"`
	// Policies of the queues that have one (prioritizedMessages,
	// persistJMSRedelivered).
	Policies      []Policy          `json:"policies"`
	Subscriptions []SubscriptionRef `json:"subscriptions"`
	Segments      []Segment         `json:"segments"`
	Errors        []string          `json:"errors"`
	// Rejected: acks the broker refused ("Unmatched acknowledge"), each
	// ending its step early; the store is compared as for any seed.
	Rejected []string `json:"rejected"`
	// Acked: where ("queue://Q" or "topic://T|cid:name") -> the message ids
	// whose acknowledgement there took effect.
	Acked map[string][]string `json:"acked"`
	// AckedInPrepared: XID -> what XA transactions left prepared acked.
	AckedInPrepared map[string]struct {
		Where string   `json:"where"`
		IDs   []string `json:"ids"`
	} `json:"ackedInPrepared"`
	Prepared []string `json:"prepared"`
	// Expirations: id -> JMSExpiration (ms) of the messages sent with a
	// time to live.
	Expirations map[string]int64 `json:"expirations"`
	Steps       []Step           `json:"steps"`
	Seconds     float64          `json:"seconds"`
}

// WorkloadConfig is the broker configuration the seed chose.
type WorkloadConfig struct {
	JournalMaxFileLength          int64  `json:"journalMaxFileLength"`
	PreallocationScope            string `json:"preallocationScope"`
	EnableAckCompaction           bool   `json:"enableAckCompaction"`
	CompactAcksAfterNoGC          int    `json:"compactAcksAfterNoGC"`
	CompactAcksIgnoresStoreGrowth bool   `json:"compactAcksIgnoresStoreGrowth"`
	PeriodicCheckpoints           bool   `json:"periodicCheckpoints"`
	CheckpointInterval            int64  `json:"checkpointInterval"`
	CleanupInterval               int64  `json:"cleanupInterval"`
	CleanupOnStop                 bool   `json:"cleanupOnStop"`
	End                           string `json:"end"`
}

// Policy is a queue's destination policy.
type Policy struct {
	Queue                 string `json:"queue"`
	PrioritizedMessages   bool   `json:"prioritizedMessages"`
	PersistJMSRedelivered bool   `json:"persistJMSRedelivered"`
}

// SubscriptionRef names a durable subscription of the workload.
type SubscriptionRef struct {
	Topic            string  `json:"topic"`
	ClientID         string  `json:"clientId"`
	SubscriptionName string  `json:"subscriptionName"`
	Selector         *string `json:"selector"`
	NoLocal          bool    `json:"noLocal"`
}

// Key is the subscription's key in the reports: topic://T|cid:name.
func (s SubscriptionRef) Key() string {
	return "topic://" + s.Topic + "|" + s.ClientID + ":" + s.SubscriptionName
}

// Segment is one broker run of the workload.
type Segment struct {
	Segment        int      `json:"segment"`
	End            string   `json:"end"` // clean (restart), halt, stop
	StoppedCleanly bool     `json:"stoppedCleanly"`
	Seconds        float64  `json:"seconds"`
	CleanupLines   []string `json:"cleanupLines"`
}

// Step is one operation of the workload with what it did.
type Step struct {
	N        int              `json:"n"`
	Op       string           `json:"op"`
	Segment  int              `json:"segment"`
	Dest     string           `json:"dest"`
	From     string           `json:"from"`
	Sub      *SubscriptionRef `json:"sub"`
	Via      *SubscriptionRef `json:"via"`
	Outcome  string           `json:"outcome"`
	How      string           `json:"how"`
	XID      string           `json:"xid"`
	Messages []SentMessage    `json:"messages"`
	Received []string         `json:"received"`
	AckedIDs []string         `json:"acked"`
	Receive  *struct {
		Count int    `json:"count"`
		Ack   string `json:"ack"`
	} `json:"receive"`
	Short int    `json:"short"`
	Error string `json:"error"`
	// Rejected: the broker refused an ack of the step, which ended
	// there (Workload.Rejected); what it received and acked is not known.
	Rejected string `json:"rejected"`
}

// SentMessage is a message a step sent.
type SentMessage struct {
	ID   string `json:"id"`
	Idx  int    `json:"idx"`
	Prio int    `json:"prio"`
	Size int    `json:"size"`
	TTL  int64  `json:"ttl"`
	Exp  int64  `json:"exp"`
}

// View is brokerkit BrokerView's report: what a full broker restarted on
// a copy of the store lists, counts and delivers.
type View struct {
	MaxFileLength     int64                   `json:"maxFileLength"`
	StartedAt         int64                   `json:"startedAt"`
	Destinations      []string                `json:"destinations"`
	StoreDestinations []string                `json:"storeDestinations"`
	Queues            map[string]*ViewQueue   `json:"queues"`
	Subscriptions     map[string]*ViewSub     `json:"subscriptions"`
	Prepared          []brokertest.PreparedTx `json:"prepared"`
	PreparedXids      []string                `json:"preparedXids"`
	Notes             []string                `json:"notes"`
}

// ViewQueue is one queue in a View.
type ViewQueue struct {
	Count         int64    `json:"count"`
	StoreCount    *int64   `json:"storeCount"`
	Consumed      []string `json:"consumed"`
	Remaining     int64    `json:"remaining"`
	Browse        []string `json:"browse"`
	BrowseDiffers bool     `json:"browseDiffers"`
}

// ViewSub is one durable subscription in a View.
type ViewSub struct {
	ClientID         string   `json:"clientId"`
	SubscriptionName string   `json:"subscriptionName"`
	Selector         *string  `json:"selector"`
	NoLocal          bool     `json:"noLocal"`
	StoreCount       int64    `json:"storeCount"`
	CursorSize       *int64   `json:"cursorSize"`
	Delivered        []string `json:"delivered"`
	// Isolated: drained on a broker of its own (every subscription but
	// the first of its topic: another subscription's acknowledgements can
	// delete messages it would be delivered).
	Isolated bool `json:"isolated"`
}

// readJSON decodes the JSON file at path into v; errors name the file.
func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ParseSeeds parses "1-200", "3,17,42" or a mix ("1-5,9"): ascending,
// without duplicates.
func ParseSeeds(s string) ([]int64, error) {
	seen := map[int64]bool{}
	var out []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi := part, part
		if i := strings.Index(part[1:], "-"); i >= 0 {
			lo, hi = part[:i+1], part[i+2:]
		}
		a, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seeds %q: %q is not a seed or range", s, part)
		}
		b, err := strconv.ParseInt(strings.TrimSpace(hi), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seeds %q: %q is not a seed or range", s, part)
		}
		if b < a {
			return nil, fmt.Errorf("seeds %q: range %q is empty", s, part)
		}
		if b-a >= 100000 {
			return nil, fmt.Errorf("seeds %q: range %q is too long", s, part)
		}
		for n := a; n <= b; n++ {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("seeds %q: none", s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// LoadKnown reads known.json: seed -> short reason of a disagreement that
// is reported but does not fail the test.
func LoadKnown(path string) (map[int64]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[int64]string{}
	for k, v := range m {
		n, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a seed", path, k)
		}
		out[n] = v
	}
	return out, nil
}

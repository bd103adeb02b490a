package brokertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// MessageRecords is testdata/stores/NAME/messages.json, written by the
// scenarios that record message content (brokerkit: Messages.java,
// Recovered.java, TypedJson.java): per message id, what the client sent
// and what the broker's own classes read back from the store.
type MessageRecords struct {
	Sent      map[string]SentMessage      `json:"sent"`
	Recovered map[string]RecoveredMessage `json:"recovered"`
}

// SentMessage is what a scenario set on a message it sent.
type SentMessage struct {
	Label        string                `json:"label"`
	Destination  string                `json:"destination"`
	Compressed   bool                  `json:"compressedConnection"`
	DeadLettered string                `json:"deadLettered"`
	Headers      map[string]any        `json:"headers"`
	Properties   map[string]TypedValue `json:"properties"`
	Body         TypedBody             `json:"body"`
}

// RecoveredMessage is a message as KahaDBPersistenceAdapter recovers it
// and the JMS getters decode it. Headers: dataStructureType, messageId,
// producerId, destination, originalDestination, transactionId,
// originalTransactionId, groupId, groupSequence, correlationId,
// persistent, expiration, priority, replyTo, timestamp, type, compressed,
// redeliveryCounter, arrival, userId, brokerInTime, brokerOutTime,
// contentSize (-1: no content); numbers as json.Number.
type RecoveredMessage struct {
	Headers    map[string]any        `json:"headers"`
	Properties map[string]TypedValue `json:"properties"`
	Body       TypedBody             `json:"body"`
}

// TypedValue is a value with its Java type (TypedJson.value): Type null,
// boolean, byte, short, char (Value: the UTF-16 code unit), int, long,
// float, double (Bits: the raw IEEE bits), string, bytes (Value: base64),
// map (Value: an object of TypedValues), list (Value: an array of them).
// A string or byte array over 1 KiB has Size and SHA256 (of its UTF-8 or
// its bytes) instead of Value.
type TypedValue struct {
	Type   string          `json:"type"`
	Value  json.RawMessage `json:"value"`
	Bits   json.Number     `json:"bits"`
	Size   int             `json:"size"`
	SHA256 string          `json:"sha256"`
}

// TypedBody is a body: Type none, text (Text), bytes (Base64), map (Value:
// an object of TypedValues), stream (Value: an array of them), object
// (ClassName, and the object's toString). A text or byte array over 1 KiB
// has Size and SHA256 instead.
type TypedBody struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Base64    string          `json:"base64"`
	Value     json.RawMessage `json:"value"`
	ClassName string          `json:"className"`
	ToString  string          `json:"toString"`
	Size      int             `json:"size"`
	SHA256    string          `json:"sha256"`
}

// Messages reads the fixture's messages.json; nil when it has none.
func (f Fixture) Messages(t testing.TB) *MessageRecords {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(f.Dir, "messages.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("fixture %s: %v", f.Name, err)
	}
	var m MessageRecords
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("fixture %s: messages.json: %v", f.Name, err)
	}
	return &m
}

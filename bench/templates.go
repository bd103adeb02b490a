package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/openwire"
	"github.com/kahafs/kahafs/store"
)

// role is what a real-broker record is used for in the generated store.
type role int

const (
	roleQueueAdd     role = iota // ADD to a queue, no transaction
	roleTopicAdd                 // ADD to a topic, no transaction
	roleLocalAdd                 // ADD in a local transaction
	roleXAAdd                    // ADD to a queue in an XA transaction
	roleQueueAck                 // REMOVE of a queue message, no transaction
	roleTopicAck                 // REMOVE for a durable subscription
	roleLocalAck                 // REMOVE of a queue message in a local transaction
	roleXAAck                    // REMOVE of a queue message in an XA transaction
	roleCommit                   // COMMIT of a local transaction
	roleXACommit                 // COMMIT of an XA transaction
	rolePrepare                  // PREPARE of an XA transaction
	roleRollback                 // ROLLBACK of a local transaction
	roleSubscription             // SUBSCRIPTION (create, no selector)
	roleTrace                    // TRACE ("LOADED ...")
	roleAudit                    // PRODUCER_AUDIT
	roleAckMap                   // ACK_MESSAGE_FILE_MAP
	numRoles
)

var roleNames = [numRoles]string{"queue add", "topic add", "local-tx add", "XA add", "queue ack",
	"subscription ack", "local-tx ack", "XA ack", "commit", "XA commit", "prepare", "rollback",
	"subscription", "trace", "producer audit", "ack file map"}

// maxPerRole bounds how many templates of one role are kept.
const maxPerRole = 64

// template is one real-broker record: its payload (copied out of the
// fixture), the command decoded from it, and where its OpenWire fields are.
type template struct {
	payload []byte
	cmd     codec.Command // byte fields point into payload
	msg     msgLayout     // add roles
	ack     ackLayout     // ack roles
	sub     subLayout     // roleSubscription
}

// templates are the records of the fixture stores, by role.
type templates struct {
	byRole  [numRoles][]*template
	records int // records read
	stores  []string
}

// loadTemplates reads every fixture store under dir (dir/*/store) and keeps
// the records the generator can use. It fails when a role has no template.
func loadTemplates(dir string) (*templates, error) {
	stores, err := filepath.Glob(filepath.Join(dir, "*", "store"))
	if err != nil {
		return nil, err
	}
	ts := &templates{}
	for _, s := range stores {
		if err := ts.readStore(s); err != nil {
			return nil, err
		}
		ts.stores = append(ts.stores, filepath.Base(filepath.Dir(s)))
	}
	var missing []string
	for r, list := range ts.byRole {
		if len(list) == 0 {
			missing = append(missing, roleNames[r])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("fixtures under %s have no template for: %s", dir, strings.Join(missing, ", "))
	}
	return ts, nil
}

func (ts *templates) readStore(dir string) error {
	l, err := store.Locate(dir)
	if err != nil {
		return err
	}
	for _, fi := range l.Journal.Files {
		if err := ts.readFile(fi); err != nil {
			return err
		}
	}
	return nil
}

func (ts *templates) readFile(fi codec.FileInfo) error {
	df, err := fi.Open()
	if err != nil {
		return err
	}
	defer df.Close()
	r := codec.NewReader(df, codec.ReadOptions{Lenient: true})
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		ts.records++
		ts.add(rec.Payload())
	}
}

// add keeps a copy of the record when it fits a role that still wants
// templates and its OpenWire parts can be patched.
func (ts *templates) add(payload []byte) {
	t := &template{payload: bytes.Clone(payload)}
	if err := codec.DecodeCommand(t.payload, &t.cmd); err != nil || t.cmd.Unknown {
		return
	}
	r, ok := classify(&t.cmd)
	if !ok || len(ts.byRole[r]) >= maxPerRole || t.parseLayout(r) != nil {
		return
	}
	ts.byRole[r] = append(ts.byRole[r], t)
}

func (t *template) parseLayout(r role) error {
	var err error
	switch r {
	case roleQueueAdd, roleTopicAdd, roleLocalAdd, roleXAAdd:
		t.msg, err = parseMessageLayout(t.cmd.Message)
	case roleQueueAck, roleTopicAck, roleLocalAck, roleXAAck:
		t.ack, err = parseAckLayout(t.cmd.Ack)
	case roleSubscription:
		t.sub, err = parseSubLayout(t.cmd.SubscriptionInfo)
	}
	return err
}

// classify names the role of a command, if any.
func classify(c *codec.Command) (role, bool) {
	switch c.Type {
	case codec.AddMessageCommand:
		return classifyAdd(c)
	case codec.RemoveMessageCommand:
		return classifyAck(c)
	case codec.CommitCommand:
		return pickTx(c.Tx.Kind, roleCommit, roleXACommit)
	case codec.PrepareCommand:
		return pickTx(c.Tx.Kind, -1, rolePrepare)
	case codec.RollbackCommand:
		return pickTx(c.Tx.Kind, roleRollback, -1)
	case codec.SubscriptionCommand:
		if c.IsSubscriptionDelete() {
			return 0, false
		}
		si, err := openwire.ParseSubscriptionInfo(c.SubscriptionInfo)
		return roleSubscription, err == nil && !si.HasSelector
	case codec.TraceCommand:
		return roleTrace, true
	case codec.ProducerAuditCommand:
		return roleAudit, true
	case codec.AckMessageFileMapCommand:
		return roleAckMap, true
	}
	return 0, false
}

func classifyAdd(c *codec.Command) (role, bool) {
	switch {
	case c.Tx.Kind == codec.LocalTx:
		return roleLocalAdd, true
	case c.Tx.Kind == codec.XATx:
		return roleXAAdd, c.Dest.Type == codec.Queue
	case c.Has(codec.FieldAddTransaction):
		return 0, false
	case c.Dest.Type == codec.Queue:
		return roleQueueAdd, true
	case c.Dest.Type == codec.Topic:
		return roleTopicAdd, true
	}
	return 0, false
}

func classifyAck(c *codec.Command) (role, bool) {
	if len(c.Ack) == 0 {
		return 0, false
	}
	if c.HasSubscriptionKey() {
		return roleTopicAck, c.Tx.Kind == codec.NoTx && c.Dest.Type == codec.Topic
	}
	if c.Dest.Type != codec.Queue {
		return 0, false
	}
	switch c.Tx.Kind {
	case codec.LocalTx:
		return roleLocalAck, true
	case codec.XATx:
		return roleXAAck, true
	}
	return roleQueueAck, true
}

// pickTx returns local or xa by transaction kind (-1: not a role).
func pickTx(k codec.TxKind, local, xa role) (role, bool) {
	switch k {
	case codec.LocalTx:
		return local, local >= 0
	case codec.XATx:
		return xa, xa >= 0
	}
	return 0, false
}

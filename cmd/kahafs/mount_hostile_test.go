package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileAttempt is one name the hostile scenario tried (expected.json
// run.notes.attempts, written by brokerkit/src/Hostile.java).
type hostileAttempt struct {
	Label            string `json:"label"`
	Type             string `json:"type"`
	Result           string `json:"result"`
	PhysicalName     string `json:"physicalName"`
	JournalNameHex   string `json:"journalNameHex"`
	ClientID         string `json:"clientId"`
	SubscriptionName string `json:"subscriptionName"`
	SubscriptionKey  string `json:"subscriptionKeyHex"`
	Sent             int    `json:"sent"`
	Consumed         int    `json:"consumed"`
}

type hostileNotes struct {
	Attempts   []hostileAttempt `json:"attempts"`
	MessageIDs []string         `json:"messageIds"`
	IDPrefix   string           `json:"messageIdPrefix"`
}

func readHostileNotes(t *testing.T, fx brokertest.Fixture) hostileNotes {
	t.Helper()
	var doc struct {
		Run struct {
			Notes hostileNotes `json:"notes"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal(fx.Expected.Raw, &doc))
	require.NotEmpty(t, doc.Run.Notes.Attempts, "expected.json run.notes.attempts")
	return doc.Run.Notes
}

func unhex(t *testing.T, s string) string {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return string(b)
}

// rawName maps a path component of the tree back to the raw name it
// stands for: UnescapeName for a full name; for a shortened one, the name
// the directory's own JSON gives (fromJSON), which must start with the
// unescaped prefix and escape to the component.
func rawName(t *testing.T, component string, fromJSON func() string) string {
	t.Helper()
	raw, full, err := fsnode.UnescapeName(component)
	require.NoError(t, err, "%q is not an escaped name", component)
	if full {
		return raw
	}
	long := fromJSON()
	assert.True(t, strings.HasPrefix(long, raw), "%q: shortened name of %q", component, long)
	assert.Equal(t, component, fsnode.EscapeName(long))
	return long
}

func readJSONFile(t *testing.T, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err, p)
	require.NoError(t, json.Unmarshal(b, v), p)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestMountHostileNames mounts the real-broker "hostile" fixture
// (destination names such as ../x, a/b, ., .., 300-byte names, control
// characters, NUL, '%', non-ASCII, lone surrogates; durable subscriptions
// and message ids just as hostile) through the kernel and checks that every
// destination and subscription is exactly one directory inside the tree
// whose name maps back to the name in the journal, that pending/ lists
// what the broker recovered, and that `kahafs holders --json` names them
// the same way.
func TestMountHostileNames(t *testing.T) {
	requireFUSE(t)
	fx := brokertest.Named(t, "hostile")
	notes := readHostileNotes(t, fx)
	in := fx.Expected.Inspect
	require.NotNil(t, in)

	// What the journal holds, from what the clients sent: KahaDB writes
	// the physical name with Java's String.getBytes(UTF-8) (journalNameHex).
	wantDests := map[string]map[string]int{"queue": {}, "topic": {}} // type -> journal name -> pending
	wantSubs := map[string]map[string]int{}                          // journal topic name -> key -> pending
	for _, a := range notes.Attempts {
		t.Logf("%-5s %-48s %s", a.Type, a.Label, a.Result)
		if !strings.HasPrefix(a.Result, "accepted") || a.PhysicalName == "" {
			continue // rejected, or the empty name (removed by the scenario: no broker starts with it)
		}
		name := unhex(t, a.JournalNameHex)
		if a.Type == "queue" {
			wantDests["queue"][name] += a.Sent - a.Consumed
			continue
		}
		wantDests["topic"][name] += 0
		if wantSubs[name] == nil {
			wantSubs[name] = map[string]int{}
		}
		wantSubs[name][unhex(t, a.SubscriptionKey)] = a.Sent - a.Consumed
	}
	wantDests["queue"]["Q.IDS"] = len(notes.MessageIDs)
	// The broker itself: a lone surrogate is '?' in the journal.
	assert.Contains(t, wantDests["queue"], "hi?")
	assert.Contains(t, wantDests["queue"], "lo?x")

	store := brokertest.CopyStore(t, fx.StoreDir)
	before := storeDigest(t, store)
	opts := fsnode.Options{Logger: log.New(testWriter{t}, "", 0)}
	opts.MaxFileLength = int64(fx.Expected.MaxFileLength)
	fsys, err := fsnode.Open(store, opts)
	require.NoError(t, err)
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	require.NoError(t, fsys.Mount(mnt))
	t.Cleanup(func() { assert.NoError(t, fsys.Unmount()) })

	// Every path stays under the mountpoint; every component is a plain
	// name; only directories and regular files.
	count := 0
	err = filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err, p)
		rel, err := filepath.Rel(mnt, p)
		require.NoError(t, err)
		require.False(t, rel == ".." || strings.HasPrefix(rel, "../"), "%s outside the mount", p)
		if p != mnt {
			n := d.Name()
			assert.True(t, n != "." && n != ".." && !strings.HasPrefix(n, ".") && !strings.ContainsAny(n, "/\x00"), "component %q", n)
			assert.LessOrEqual(t, len(n), fsnode.MaxNameLen, n)
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// only the ack chain's links, each to a data file's
			// directory of the same store
			dir := filepath.Base(filepath.Dir(p))
			assert.True(t, dir == "acks-for" || dir == "acked-by", "%s: a link outside acks-for/ and acked-by/", p)
			target, err := os.Readlink(p)
			require.NoError(t, err)
			assert.Regexp(t, `^\.\./\.\./db-[0-9]+\.log$`, target, p)
			real, err := filepath.EvalSymlinks(p)
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(filepath.Dir(p), target), real, "%s leads where it says, in the mount", p)
			count++
			return nil
		}
		assert.True(t, d.IsDir() || d.Type().IsRegular(), "%s: type %v", p, d.Type())
		real, err := filepath.EvalSymlinks(p)
		require.NoError(t, err)
		assert.Equal(t, p, real)
		count++
		return nil
	})
	require.NoError(t, err)
	t.Logf("%d paths in the tree", count)

	// by-destination: exactly one directory per destination, mapping back
	// to its journal name.
	bd := filepath.Join(mnt, "by-destination")
	gotDirs := map[string]map[string]string{} // type -> journal name -> directory
	for _, typ := range []string{"queue", "topic"} {
		gotDirs[typ] = map[string]string{}
		tdir := filepath.Join(bd, typ)
		ents, err := os.ReadDir(tdir)
		require.NoError(t, err)
		for _, e := range ents {
			require.True(t, e.IsDir(), e.Name())
			var st struct {
				Destination string `json:"destination"`
				Type        string `json:"type"`
				Name        string `json:"name"`
				Escaped     string `json:"escapedName"`
				Key         string `json:"key"`
			}
			readJSONFile(t, filepath.Join(tdir, e.Name(), "stats.json"), &st)
			raw := rawName(t, e.Name(), func() string { return st.Name })
			assert.Equal(t, raw, st.Name, "stats.json name of %q", e.Name())
			assert.Equal(t, e.Name(), st.Escaped)
			assert.Equal(t, typ+"://"+raw, st.Destination)
			assert.Equal(t, typ, st.Type)
			prev, dup := gotDirs[typ][raw]
			assert.False(t, dup, "%s %q has two directories: %q and %q", typ, raw, prev, e.Name())
			gotDirs[typ][raw] = e.Name()
			// The name a path lookup resolves is the listed one.
			info, err := os.Stat(filepath.Join(tdir, fsnode.EscapeName(raw)))
			require.NoError(t, err, "%s %q", typ, raw)
			assert.True(t, info.IsDir())
		}
		assert.Equal(t, sortedKeys(wantDests[typ]), sortedKeys(gotDirs[typ]), "%s directories = destinations in the journal", typ)
	}
	// ... and what a restarted broker lists, through its name parsing.
	var listed []string
	seen := map[string]bool{}
	for _, typ := range []string{"queue", "topic"} {
		for raw := range gotDirs[typ] {
			q := typ + "://" + brokertest.ListedName(raw)
			if !seen[q] {
				seen[q] = true
				listed = append(listed, q)
			}
		}
	}
	sort.Strings(listed)
	assert.Equal(t, in.Destinations, listed, "the broker's destinations")

	// Queues: pending/ in the broker's order; under a name the broker
	// changes ("hi?" -> "hi") the broker finds nothing, the journal keeps
	// what the clients sent.
	for raw, dir := range gotDirs["queue"] {
		ids := pendingList(t, filepath.Join(bd, "queue", dir, "pending"))
		if b := brokertest.ListedName(raw); b == raw {
			assert.Equal(t, nonNilStrings(in.Queues[raw]), ids, "queue %q: pending = what the broker recovered", raw)
		} else {
			assert.Empty(t, in.Queues[b], "queue %q is %q for the broker, which finds nothing under it", raw, b)
		}
		assert.Len(t, ids, wantDests["queue"][raw], "queue %q: sent - consumed", raw)
	}
	// Q.IDS: message ids with the hostile connection id prefix, in order.
	assert.Equal(t, notes.MessageIDs, pendingList(t, filepath.Join(bd, "queue", "Q.IDS", "pending")))
	for _, id := range notes.MessageIDs {
		assert.True(t, strings.HasPrefix(id, notes.IDPrefix), id)
	}

	// Topics: one directory per durable subscription.
	for topic, dir := range gotDirs["topic"] {
		sdir := filepath.Join(bd, "topic", dir, "subscriptions")
		ents, err := os.ReadDir(sdir)
		require.NoError(t, err)
		got := map[string]int{}
		for _, e := range ents {
			var info struct {
				Destination string `json:"destination"`
				Key         string `json:"key"`
				ClientID    string `json:"clientId"`
				Name        string `json:"subscriptionName"`
				Count       int    `json:"brokerCount"`
				Pending     int    `json:"deliverable"`
			}
			readJSONFile(t, filepath.Join(sdir, e.Name(), "info.json"), &info)
			key := rawName(t, e.Name(), func() string { return info.Key })
			assert.Equal(t, key, info.Key)
			assert.Equal(t, info.ClientID+":"+info.Name, key)
			assert.Equal(t, "topic://"+topic, info.Destination)
			_, dup := got[key]
			assert.False(t, dup, "subscription %q of %q twice", key, topic)
			ids := pendingList(t, filepath.Join(sdir, e.Name(), "pending"))
			got[key] = len(ids)
			if brokertest.ListedName(topic) == topic {
				bs, ok := in.Subscriptions["topic://"+topic+"|"+key]
				if assert.True(t, ok, "the broker recovered %q on %q", key, topic) {
					assert.Equal(t, nonNilStrings(bs.Pending), ids, "subscription %q of %q", key, topic)
					assert.Equal(t, bs.Count, info.Count)
					assert.Equal(t, bs.ClientID, info.ClientID)
					assert.Equal(t, bs.SubscriptionName, info.Name)
				}
			}
		}
		assert.Equal(t, wantSubs[topic], got, "subscriptions of %q (key -> pending)", topic)
	}
	brokerSubs := 0
	for topic, subs := range wantSubs {
		if brokertest.ListedName(topic) == topic {
			brokerSubs += len(subs)
		}
	}
	assert.Len(t, in.Subscriptions, brokerSubs, "every subscription the broker sees is in the tree")

	// Transactions: the local transaction of the hostile connection.
	var txs []string
	ents, err := os.ReadDir(filepath.Join(mnt, "by-transaction"))
	require.NoError(t, err)
	for _, e := range ents {
		var info struct {
			ID string `json:"id"`
		}
		readJSONFile(t, filepath.Join(mnt, "by-transaction", e.Name(), "info.json"), &info)
		assert.Equal(t, info.ID, rawName(t, e.Name(), func() string { return info.ID }))
		txs = append(txs, info.ID)
	}
	require.Len(t, txs, 1)
	assert.True(t, strings.HasPrefix(txs[0], "TX:"+notes.IDPrefix), txs[0])

	// holders --json names destinations and subscriptions with their
	// journal names, and every holding destination has its directory.
	out, stderr, code := runCLI(t, "holders", "--json", "--max-file-length", strconv.Itoa(fx.Expected.MaxFileLength), store)
	require.Equal(t, exitOK, code, stderr)
	var doc struct {
		Files []struct {
			Name    string `json:"name"`
			Reasons []struct {
				Kind             string   `json:"kind"`
				Text             string   `json:"text"`
				Destination      string   `json:"destination"`
				Subscription     string   `json:"subscription"`
				Subscriptions    []string `json:"subscriptions"`
				ClientID         string   `json:"clientId"`
				SubscriptionName string   `json:"subscriptionName"`
				Messages         int      `json:"messages"`
			} `json:"reasons"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	pendingHeld := map[string]int{}
	subsHeld := map[string]bool{}
	for _, f := range doc.Files {
		for _, r := range f.Reasons {
			if r.Destination == "" {
				continue
			}
			typ, name, ok := strings.Cut(r.Destination, "://")
			require.True(t, ok, r.Destination)
			dir, ok := gotDirs[typ][name]
			if !assert.True(t, ok, "%s: %s names %q, which has no directory", f.Name, r.Kind, r.Destination) {
				continue
			}
			assert.Contains(t, r.Text, r.Destination, "the text names the destination as the JSON does")
			switch r.Kind {
			case "pending-messages":
				pendingHeld[r.Destination] += r.Messages
				for _, k := range r.Subscriptions {
					assert.Contains(t, wantSubs[name], k, "%s: subscription %q of %q", f.Name, k, name)
				}
			case "subscription":
				assert.Equal(t, r.ClientID+":"+r.SubscriptionName, r.Subscription)
				_, err := os.Stat(filepath.Join(bd, typ, dir, "subscriptions", fsnode.EscapeName(r.Subscription)))
				assert.NoError(t, err, "%s: subscription %q of %q", f.Name, r.Subscription, name)
				subsHeld[r.Destination+"|"+r.Subscription] = true
			}
		}
	}
	for raw, n := range wantDests["queue"] {
		if n > 0 {
			assert.Equal(t, n, pendingHeld["queue://"+raw], "holders: pending messages of queue %q", raw)
		}
	}
	for topic, subs := range wantSubs {
		for k := range subs {
			assert.True(t, subsHeld["topic://"+topic+"|"+k], "holders: the command of subscription %q of %q", k, topic)
		}
	}

	assert.Equal(t, before, storeDigest(t, store), "the store is never written")
}

// pendingList reads a pending/ directory: names are the position (from 1,
// 10 digits) and the escaped message id; it returns the ids in listing
// order, checking that each file's messageId is the one its name carries.
func pendingList(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	ids := []string{}
	require.Zero(t, len(ents)%2, "a .json and a .body per message")
	for i, e := range ents {
		pos, rest, ok := strings.Cut(e.Name(), "-")
		require.True(t, ok, e.Name())
		assert.Equal(t, fmt.Sprintf("%010d", i/2+1), pos)
		if i%2 == 0 { // sorted: N-ID.body, then N-ID.json
			require.Equal(t, strings.TrimSuffix(e.Name(), ".body"), strings.TrimSuffix(ents[i+1].Name(), ".json"), "the body of %s", ents[i+1].Name())
			continue
		}
		var m struct {
			ID string `json:"messageId"`
		}
		readJSONFile(t, filepath.Join(dir, e.Name()), &m)
		id := rawName(t, strings.TrimSuffix(rest, ".json"), func() string { return m.ID })
		assert.Equal(t, m.ID, id, e.Name())
		ids = append(ids, id)
	}
	return ids
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("fsnode: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// storeDigest returns, for every file and directory under root, its mode,
// size, modification time and the SHA-256 of its content.
func storeDigest(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[p] = v
		return nil
	})
	require.NoError(t, err)
	return out
}

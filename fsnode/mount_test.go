package fsnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/need"
	"github.com/kahafs/kahafs/openwire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func quietOpts(t testing.TB) Options {
	return Options{Logger: log.New(logSink{t}, "", 0)}
}

// dumpLines returns what `kahafs dump --json` prints for the store: one
// JSON line per command, in journal order.
func dumpLines(t testing.TB, dir string) []string {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	var lines []string
	for _, fi := range st.Files {
		_, err := codec.ScanFile(fi, codec.ReadOptions{}, func(rec codec.Record, c *codec.Command) error {
			lines = append(lines, string(codec.AppendCommandJSON(nil, rec, c, codec.JSONOptions{OpenWire: true}))+"\n")
			return nil
		})
		require.NoError(t, err)
	}
	return lines
}

// messageBodies returns, per message command of the store, the body its
// .body file holds (openwire's decoding; the tests of package openwire
// check that against the broker).
func messageBodies(t testing.TB, dir string) map[codec.Location][]byte {
	t.Helper()
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	out := map[codec.Location][]byte{}
	for _, fi := range st.Files {
		_, err := codec.ScanFile(fi, codec.ReadOptions{}, func(rec codec.Record, c *codec.Command) error {
			if hasBody(c.Type) {
				body := []byte{} // a blob that is not a message (synthStore's) has none
				if m, _ := openwire.DecodeMessage(c.Message); m != nil {
					body = m.AppendRawBody(body)
				}
				out[codec.Location{File: rec.Loc.File, Offset: rec.Loc.Offset}] = body
			}
			return nil
		})
		require.NoError(t, err)
	}
	return out
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, path)
	require.NoError(t, json.Unmarshal(b, v), path)
}

func names(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err, dir)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestTreeRoot(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	fsys, mnt := mountStore(t, dir, quietOpts(t))
	assert.Equal(t, []string{"README", "by-destination", "by-file", "by-message-id", "by-transaction", "free", "metrics", "pinned", "plan", "plan.json", "summary.json"}, names(t, mnt))

	readme, err := os.ReadFile(filepath.Join(mnt, "README"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), fsys.Dir())
	assert.Contains(t, string(readme), "a/b\" is a%2Fb")
	assert.NotContains(t, string(readme), "%!") // no fmt mistakes

	var sum struct {
		Files    int              `json:"files"`
		Commands int64            `json:"commands"`
		ByType   map[string]int64 `json:"commandsByType"`
		Pinned   []string         `json:"pinned"`
		Free     []string         `json:"free"`
		Txs      map[string]int64 `json:"transactions"`
		Dests    map[string]int   `json:"destinations"`
	}
	readJSON(t, filepath.Join(mnt, "summary.json"), &sum)
	lines := dumpLines(t, dir)
	assert.Equal(t, int64(len(lines)), sum.Commands)
	assert.Equal(t, fsys.Snapshot().Files(), sum.Files)
	assert.Greater(t, sum.Files, 2, "the synthetic store spans several files")
	assert.Equal(t, int64(1), sum.Txs["prepared"])
	assert.Equal(t, 1+len(hostileNames), sum.Dests["queues"])

	g := fsys.Snapshot().Graph()
	var wantPinned, wantFree string
	for _, f := range g.Files() {
		if f.Pinned {
			wantPinned += f.Name + "\n"
		} else {
			wantFree += f.Name + "\n"
		}
	}
	pinned, err := os.ReadFile(filepath.Join(mnt, "pinned"))
	require.NoError(t, err)
	free, err := os.ReadFile(filepath.Join(mnt, "free"))
	require.NoError(t, err)
	assert.Equal(t, wantPinned, string(pinned))
	assert.Equal(t, wantFree, string(free))
	assert.Equal(t, len(sum.Pinned)+len(sum.Free), sum.Files)
}

// TestByFileCommands: one JSON file per command, listed in journal order,
// each holding what `kahafs dump --json` prints for it, with exact sizes.
func TestByFileCommands(t *testing.T) {
	dir, locs := synthStore(t, 1024)
	_, mnt := mountStore(t, dir, quietOpts(t))
	lines := dumpLines(t, dir)
	require.Len(t, lines, len(locs))

	var got []string
	files := names(t, filepath.Join(mnt, "by-file"))
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	var want []string
	for _, fi := range st.Files {
		want = append(want, fi.Name)
	}
	assert.Equal(t, want, files, "one directory per data file, in id order")
	wantBodies := messageBodies(t, dir)
	require.NotEmpty(t, wantBodies)
	i, bodies := 0, 0
	for _, f := range files {
		fdir := filepath.Join(mnt, "by-file", f)
		ents := names(t, fdir) // sorted: the commands and bodies (digits first), then the rest
		require.GreaterOrEqual(t, len(ents), 6)
		all, rest := ents[:len(ents)-5], ents[len(ents)-5:]
		assert.Equal(t, []string{"acked-by", "acks-for", "holders", "holders.json", "info.json"}, rest)
		var cmds []string
		for _, e := range all {
			if !strings.HasSuffix(e, ".body") {
				cmds = append(cmds, e)
				continue
			}
			// A message's body next to its command: what openwire decodes.
			off, typ, body, ok := parseCommandName(e)
			require.True(t, ok && body && hasBody(typ), e)
			p := filepath.Join(fdir, e)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			info, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, int64(len(b)), info.Size(), "stat size of %s", p)
			id, _ := codec.ParseDataFileName(f)
			loc := codec.Location{File: id, Offset: off}
			want, ok := wantBodies[loc]
			require.True(t, ok, "%s: no message there", p)
			assert.Equal(t, want, b, p)
			assert.Contains(t, all, strings.TrimSuffix(e, ".body")+".json")
			bodies++
		}
		for _, e := range cmds {
			p := filepath.Join(fdir, e)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			info, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, int64(len(b)), info.Size(), "stat size of %s", p)
			assert.Equal(t, fs.FileMode(0o444), info.Mode().Perm())
			wantName := fmt.Sprintf("%010d-", locs[i].Offset)
			assert.True(t, strings.HasPrefix(e, wantName), "%s for %v", e, locs[i])
			assert.Equal(t, codec.DataFileName(locs[i].File), f)
			got = append(got, string(b))
			i++
		}
		var info struct {
			Name     string `json:"name"`
			Commands int64  `json:"commands"`
			Checksum string `json:"checksum"`
			Clean    bool   `json:"clean"`
			End      int64  `json:"logicalEnd"`
		}
		readJSON(t, filepath.Join(fdir, "info.json"), &info)
		assert.Equal(t, f, info.Name)
		assert.Equal(t, int64(len(cmds)), info.Commands)
		assert.Equal(t, "verified", info.Checksum)
		assert.True(t, info.Clean)
		holders, err := os.ReadFile(filepath.Join(fdir, "holders"))
		require.NoError(t, err)
		first := strings.SplitN(string(holders), "\n", 2)[0]
		assert.True(t, first == "pinned" || strings.HasPrefix(first, "free"), "first line %q", first)
	}
	assert.Equal(t, lines, got, "the files are the dump --json lines, in order")
	assert.Equal(t, len(wantBodies), bodies, "one .body per message command")

	// Names that are not there, or not spelled canonically.
	fdir := filepath.Join(mnt, "by-file", files[0])
	for _, bad := range []string{"28-KAHA_TRACE_COMMAND.json", "0000000028-KAHA_ADD_MESSAGE_COMMAND.json", "0000000029-KAHA_TRACE_COMMAND.json", "0000000028-KAHA_TRACE_COMMAND", "db-99.log"} {
		_, err := os.Stat(filepath.Join(fdir, bad))
		assert.True(t, errors.Is(err, fs.ErrNotExist), "%s: %v", bad, err)
	}
	_, err = os.Stat(filepath.Join(fdir, "0000000028-KAHA_TRACE_COMMAND.json"))
	assert.NoError(t, err)
	_, err = os.Stat(filepath.Join(mnt, "by-file", "db-99.log"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))
}

// TestInodes: numbers come from journal locations; one command is one
// inode under by-file/, pending/ and by-transaction/, and so is its
// message's body.
func TestInodes(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	fsys, mnt := mountStore(t, dir, quietOpts(t))
	pend := filepath.Join(mnt, "by-destination", "queue", "Q.A", "pending")
	ents := names(t, pend)
	require.NotEmpty(t, ents)
	require.True(t, strings.HasSuffix(ents[0], ".body") && strings.HasSuffix(ents[1], ".json"), "%v", ents[:2])
	var first map[string]any
	readJSON(t, filepath.Join(pend, ents[1]), &first)
	loc := codec.Location{File: int32(first["file"].(float64)), Offset: int32(first["offset"].(float64))}
	byFile := filepath.Join(mnt, "by-file", codec.DataFileName(loc.File), fmt.Sprintf("%010d-KAHA_ADD_MESSAGE_COMMAND.json", loc.Offset))
	a, err := os.Stat(byFile)
	require.NoError(t, err)
	b, err := os.Stat(filepath.Join(pend, ents[1]))
	require.NoError(t, err)
	ia, ib := a.Sys().(*syscall.Stat_t).Ino, b.Sys().(*syscall.Stat_t).Ino
	assert.Equal(t, ia, ib, "same command, same inode")
	assert.Equal(t, inoLoc(kindCommand, loc), ia)
	a, err = os.Stat(strings.TrimSuffix(byFile, ".json") + ".body")
	require.NoError(t, err)
	b, err = os.Stat(filepath.Join(pend, ents[0]))
	require.NoError(t, err)
	ba, bb := a.Sys().(*syscall.Stat_t).Ino, b.Sys().(*syscall.Stat_t).Ino
	assert.Equal(t, ba, bb, "same body, same inode")
	assert.Equal(t, inoLoc(kindBody, loc), ba)

	// A refresh keeps the numbers.
	_, err = fsys.Refresh(true)
	require.NoError(t, err)
	c, err := os.Stat(byFile)
	require.NoError(t, err)
	assert.Equal(t, ia, c.Sys().(*syscall.Stat_t).Ino)
	assert.Equal(t, uint64(2), fsys.Snapshot().Gen)

	// Directories have distinct numbers.
	seen := map[uint64]string{}
	err = filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if !d.IsDir() {
			return nil
		}
		info, err := os.Stat(p)
		require.NoError(t, err)
		ino := info.Sys().(*syscall.Stat_t).Ino
		assert.NotContains(t, seen, ino, "%s and %s", p, seen[ino])
		seen[ino] = p
		return nil
	})
	require.NoError(t, err)
}

// TestDestinations: queues and topics with their pending messages in
// delivery order, subscriptions, stats.
func TestDestinations(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	_, mnt := mountStore(t, dir, quietOpts(t))
	bd := filepath.Join(mnt, "by-destination")
	assert.Equal(t, []string{"queue", "topic"}, names(t, bd))

	pendingIDs := func(p string) []string {
		var ids []string
		ents := names(t, p)
		require.Zero(t, len(ents)%2, "a .json and a .body per message: %v", ents)
		for i := 0; i < len(ents); i += 2 {
			body, n := ents[i], ents[i+1] // sorted: .body before .json
			assert.True(t, strings.HasPrefix(n, fmt.Sprintf("%010d-", i/2+1)), n)
			var m struct {
				ID string `json:"messageId"`
			}
			readJSON(t, filepath.Join(p, n), &m)
			assert.Equal(t, fmt.Sprintf("%010d-%s.json", i/2+1, EscapeName(m.ID)), n)
			assert.Equal(t, fmt.Sprintf("%010d-%s.body", i/2+1, EscapeName(m.ID)), body)
			ids = append(ids, m.ID)
		}
		return ids
	}
	assert.Equal(t, []string{"ID:q-a:1:1:1:3", "ID:q-a:1:1:1:4", "ID:q-a:1:1:1:5", "ID:q-a:1:1:1:6", "ID:q-a:1:1:2:1"},
		pendingIDs(filepath.Join(bd, "queue", "Q.A", "pending")))
	var stats struct {
		Destination string   `json:"destination"`
		Messages    int64    `json:"messages"`
		Files       []string `json:"files"`
	}
	readJSON(t, filepath.Join(bd, "queue", "Q.A", "stats.json"), &stats)
	assert.Equal(t, "queue://Q.A", stats.Destination)
	assert.Equal(t, int64(5), stats.Messages)
	assert.NotEmpty(t, stats.Files)

	td := filepath.Join(bd, "topic", "T.X")
	assert.Equal(t, []string{"pending", "stats.json", "subscriptions"}, names(t, td))
	assert.Equal(t, []string{"c%2F2:..%2Fs2", "c1:s1"}, names(t, filepath.Join(td, "subscriptions")))
	assert.Equal(t, []string{"ID:t-x:1:1:1:2", "ID:t-x:1:1:1:3", "ID:t-x:1:1:1:4"}, pendingIDs(filepath.Join(td, "subscriptions", "c1:s1", "pending")))
	assert.Equal(t, []string{"ID:t-x:1:1:1:1", "ID:t-x:1:1:1:2", "ID:t-x:1:1:1:3", "ID:t-x:1:1:1:4"}, pendingIDs(filepath.Join(td, "subscriptions", "c%2F2:..%2Fs2", "pending")))
	var si struct {
		ClientID string  `json:"clientId"`
		Name     string  `json:"subscriptionName"`
		Pending  int     `json:"deliverable"`
		Selector *string `json:"selector"`
	}
	readJSON(t, filepath.Join(td, "subscriptions", "c%2F2:..%2Fs2", "info.json"), &si)
	assert.Equal(t, "c/2", si.ClientID)
	assert.Equal(t, "../s2", si.Name)
	assert.Equal(t, 4, si.Pending)
	assert.Nil(t, si.Selector)

	// Positions and ids must match: a wrong id at a right position is not there.
	_, err := os.Stat(filepath.Join(bd, "queue", "Q.A", "pending", "0000000001-ID:q-a:1:1:1:4.json"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))
	_, err = os.Stat(filepath.Join(bd, "queue", "Q.A", "pending", "0000000099-ID:q-a:1:1:1:4.json"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))
}

// TestHostileNames: names from the journal never leave their directory,
// never collide, and map back to the raw name.
func TestHostileNames(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	_, mnt := mountStore(t, dir, quietOpts(t))
	qdir := filepath.Join(mnt, "by-destination", "queue")
	ents := names(t, qdir)
	assert.Len(t, ents, 1+len(hostileNames))
	raw := map[string]string{}
	for _, n := range ents {
		checkComponent(t, n, n)
		var stats struct {
			Name    string `json:"name"`
			Escaped string `json:"escapedName"`
		}
		readJSON(t, filepath.Join(qdir, n, "stats.json"), &stats)
		assert.Equal(t, n, stats.Escaped)
		r, full, err := UnescapeName(n)
		require.NoError(t, err, n)
		if full {
			// JSON carries invalid UTF-8 as U+FFFD, byte by byte.
			lossy, err := json.Marshal(r)
			require.NoError(t, err)
			var want string
			require.NoError(t, json.Unmarshal(lossy, &want))
			assert.Equal(t, want, stats.Name)
		} else {
			assert.True(t, strings.HasPrefix(stats.Name, r))
			r = stats.Name
		}
		assert.NotContains(t, raw, r, "two directories for one name")
		raw[r] = n
		// Every message of a hostile queue is inside it, reachable by its listed name.
		p := filepath.Join(qdir, n, "pending")
		for _, m := range names(t, p) {
			checkComponent(t, m, m)
			_, err := os.ReadFile(filepath.Join(p, m))
			require.NoError(t, err)
		}
	}
	for _, h := range hostileNames {
		n, ok := raw[h]
		require.True(t, ok, "queue %q listed", h)
		assert.Equal(t, EscapeName(h), n)
	}
	// The raw names do not resolve to anything outside.
	for _, h := range []string{"../../../etc", "a/b/../../c"} {
		_, err := os.Stat(filepath.Join(qdir, h, "stats.json"))
		assert.Error(t, err, h)
	}
	// ".." inside the tree is the parent, as everywhere.
	up, err := os.Stat(filepath.Join(qdir, EscapeName(".."), ".."))
	require.NoError(t, err)
	here, err := os.Stat(qdir)
	require.NoError(t, err)
	assert.True(t, os.SameFile(up, here))

	// Transaction ids with '/' too.
	txs := names(t, filepath.Join(mnt, "by-transaction"))
	assert.Contains(t, txs, "TX:ID:evil%2F..%2Fconn:3")
	for _, n := range txs {
		checkComponent(t, n, n)
	}
}

func TestTransactions(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	_, mnt := mountStore(t, dir, quietOpts(t))
	bt := filepath.Join(mnt, "by-transaction")
	states := map[string]string{}
	for _, n := range names(t, bt) {
		b, err := os.ReadFile(filepath.Join(bt, n, "state"))
		require.NoError(t, err)
		states[n] = string(b)
		ents := names(t, filepath.Join(bt, n))
		if string(b) == "prepared\n" {
			// in-doubt/: the stored messages the prepared transaction acks
			require.Equal(t, "in-doubt", ents[len(ents)-3])
			for _, m := range names(t, filepath.Join(bt, n, "in-doubt")) {
				var msg map[string]any
				readJSON(t, filepath.Join(bt, n, "in-doubt", m), &msg)
				assert.Equal(t, "KAHA_ADD_MESSAGE_COMMAND", msg["type"], m)
			}
			ents = append(ents[:len(ents)-3], ents[len(ents)-2:]...)
		}
		assert.Equal(t, []string{"info.json", "state"}, ents[len(ents)-2:])
		cmds := ents[:len(ents)-2]
		assert.True(t, sort.StringsAreSorted(cmds))
		assert.GreaterOrEqual(t, len(cmds), 2)
		for _, c := range cmds {
			if strings.HasSuffix(c, ".body") {
				assert.Contains(t, cmds, strings.TrimSuffix(c, ".body")+".json")
				assert.Contains(t, c, "_MESSAGE_COMMAND.body")
				continue
			}
			var m map[string]any
			readJSON(t, filepath.Join(bt, n, c), &m)
			assert.Contains(t, m, "transaction")
			if m["type"] == codec.AddMessageCommand.String() {
				assert.Contains(t, cmds, strings.TrimSuffix(c, ".json")+".body")
			}
		}
	}
	assert.Equal(t, map[string]string{
		"TX:ID:evil%2F..%2Fconn:3":                                       "committed\n",
		"XID:[4660,globalId=67747269642d7072657061726564,branchId=6271]": "prepared\n",
		"XID:[4660,globalId=67747269642f726f6c6c6261636b,branchId=6271]": "rolled-back\n",
	}, states)
}

// TestReadOnly: every kind of write fails with EROFS; the store is never
// touched.
func TestReadOnly(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	before := storeState(t, dir)
	_, mnt := mountStore(t, dir, quietOpts(t))
	file := filepath.Join(mnt, "README")
	cmdDir := filepath.Join(mnt, "by-file", "db-1.log")
	cmdFile := filepath.Join(cmdDir, "0000000028-KAHA_TRACE_COMMAND.json")
	checks := map[string]func() error{
		"write":      func() error { return os.WriteFile(file, []byte("x"), 0o644) },
		"append":     func() error { _, err := os.OpenFile(cmdFile, os.O_WRONLY|os.O_APPEND, 0); return err },
		"rdwr":       func() error { _, err := os.OpenFile(cmdFile, os.O_RDWR, 0); return err },
		"create":     func() error { _, err := os.Create(filepath.Join(mnt, "new")); return err },
		"mkdir":      func() error { return os.Mkdir(filepath.Join(cmdDir, "d"), 0o755) },
		"remove":     func() error { return os.Remove(cmdFile) },
		"rmdir":      func() error { return os.Remove(filepath.Join(mnt, "by-transaction")) },
		"rename":     func() error { return os.Rename(cmdFile, filepath.Join(cmdDir, "x.json")) },
		"chmod":      func() error { return os.Chmod(file, 0o777) },
		"truncate":   func() error { return os.Truncate(cmdFile, 0) },
		"symlink":    func() error { return os.Symlink("README", filepath.Join(mnt, "link")) },
		"link":       func() error { return os.Link(file, filepath.Join(mnt, "hard")) },
		"utimes":     func() error { return syscall.Utimes(file, make([]syscall.Timeval, 2)) },
		"setxattr":   func() error { return syscall.Setxattr(file, "user.x", []byte("1"), 0) },
		"mknod":      func() error { return syscall.Mknod(filepath.Join(mnt, "fifo"), syscall.S_IFIFO|0o644, 0) },
		"removeall":  func() error { return os.RemoveAll(filepath.Join(mnt, "by-file")) },
		"write-open": func() error { _, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0); return err },
	}
	for name, fn := range checks {
		err := fn()
		assert.True(t, errors.Is(err, syscall.EROFS), "%s: got %v, want EROFS", name, err)
	}
	// Still all there.
	_, err := os.Stat(cmdFile)
	require.NoError(t, err)
	assert.Equal(t, before, storeState(t, dir), "the store is never written")
}

// TestParallelReaders: 8 readers walk and read the whole tree at once and
// see the same content.
func TestParallelReaders(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	before := storeState(t, dir)
	_, mnt := mountStore(t, dir, quietOpts(t))
	const readers = 8
	results := make([]map[string]string, readers)
	var wg sync.WaitGroup
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			results[r] = walkTree(t, mnt)
		}(r)
	}
	wg.Wait()
	require.NotEmpty(t, results[0])
	for r := 1; r < readers; r++ {
		assert.Equal(t, results[0], results[r], "reader %d", r)
	}
	assert.Equal(t, before, storeState(t, dir))
}

// walkTree reads every file under root and returns path → content.
func walkTree(t testing.TB, root string) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.Type()&fs.ModeSymlink != 0 { // acks-for/, acked-by/: the target
			target, err := os.Readlink(p)
			out[rel] = "-> " + target
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if info.Size() != int64(len(b)) {
			return fmt.Errorf("%s: stat size %d, content %d bytes", p, info.Size(), len(b))
		}
		out[rel] = string(b)
		return nil
	})
	assert.NoError(t, err)
	return out
}

// TestRefresh: new data files appear after Refresh; walks that started in
// the old snapshot keep it.
func TestRefresh(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	fsys, mnt := mountStore(t, dir, quietOpts(t))
	changed, err := fsys.Refresh(false)
	require.NoError(t, err)
	assert.False(t, changed, "nothing changed")

	oldDir := filepath.Join(mnt, "by-file")
	old, err := os.Open(oldDir)
	require.NoError(t, err)
	defer old.Close()
	nBefore := len(names(t, oldDir))

	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	last := st.Files[len(st.Files)-1].ID
	w := codec.NewJournalWriter(dir, codec.WriterOptions{FirstID: last + 1, NoSync: true})
	c := &codec.Command{Type: codec.AddMessageCommand, Dest: codec.NewDestination(codec.Queue, []byte("Q.NEW")), MessageID: []byte("ID:new:1"), Message: []byte("x"), Priority: 4}
	for _, f := range []int{2, 3, 4, 5, 6} {
		c.Set(f)
	}
	_, err = w.AppendCommand(c)
	require.NoError(t, err)
	require.NoError(t, w.Close())

	changed, err = fsys.Refresh(false)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Len(t, names(t, filepath.Join(mnt, "by-file")), nBefore+1)
	assert.Contains(t, names(t, filepath.Join(mnt, "by-destination", "queue")), "Q.NEW")
	var sum struct {
		Snapshot uint64 `json:"snapshot"`
	}
	readJSON(t, filepath.Join(mnt, "summary.json"), &sum)
	assert.Equal(t, uint64(2), sum.Snapshot)
	// The directory opened before the refresh still lists the old files.
	ents, err := old.ReadDir(-1)
	require.NoError(t, err)
	assert.Len(t, ents, nBefore)
}

// TestTornTail: a half-written batch at the end (a broker writing right
// now) is the end of the data, not an error.
func TestTornTail(t *testing.T) {
	dir, locs := synthStore(t, 1024)
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	tail := st.Files[len(st.Files)-1]
	f, err := os.OpenFile(tail.Path, os.O_RDWR, 0)
	require.NoError(t, err)
	info, err := f.Stat()
	require.NoError(t, err)
	// Overwrite the EOF marker with the start of a batch that never ends.
	rec := codec.AppendUserRecord(nil, codec.AppendCommand(nil, codec.NewTraceCommand([]byte("torn"))))
	batch := codec.AppendBatch(nil, rec, true)
	_, err = f.WriteAt(batch[:len(batch)-3], info.Size()-int64(len(codec.EOFRecord)))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, mnt := mountStore(t, dir, quietOpts(t))
	var sum struct {
		Commands int64 `json:"commands"`
		Damage   struct {
			TornTails int  `json:"tornTails"`
			Clean     bool `json:"clean"`
		} `json:"damage"`
	}
	readJSON(t, filepath.Join(mnt, "summary.json"), &sum)
	assert.Equal(t, int64(len(locs)), sum.Commands)
	assert.Equal(t, 1, sum.Damage.TornTails)
	assert.True(t, sum.Damage.Clean)
	var info2 struct {
		Damage []struct {
			Kind string `json:"kind"`
		} `json:"damage"`
	}
	readJSON(t, filepath.Join(mnt, "by-file", tail.Name, "info.json"), &info2)
	require.Len(t, info2.Damage, 1)
	assert.Equal(t, "torn-tail", info2.Damage[0].Kind)
}

func TestMountErrors(t *testing.T) {
	need.FUSE(t, CheckFUSE())
	dir, _ := synthStore(t, 1024)
	fsys, err := Open(dir, quietOpts(t))
	require.NoError(t, err)

	err = fsys.Mount(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, ErrMountpoint)
	assert.ErrorContains(t, err, "does not exist")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	err = fsys.Mount(file)
	assert.ErrorIs(t, err, ErrMountpoint)
	assert.ErrorContains(t, err, "not a directory")

	err = fsys.Mount(dir)
	assert.ErrorIs(t, err, ErrMountpoint)
	assert.ErrorContains(t, err, "hide the store")
	err = fsys.Mount(filepath.Dir(dir))
	assert.ErrorIs(t, err, ErrMountpoint)

	_, mnt := mountStore(t, dir, quietOpts(t))
	err = fsys.Mount(mnt)
	assert.ErrorIs(t, err, ErrMountpoint)
	assert.ErrorContains(t, err, "busy")

	_, err = Open(t.TempDir(), quietOpts(t))
	assert.ErrorIs(t, err, codec.ErrNotStore)
	_, err = Open(filepath.Join(t.TempDir(), "nope"), quietOpts(t))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestBigDirectory: a data file with many commands is listed in pieces
// (seekdir) and a command is found by name without listing.
func TestBigDirectory(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	dir := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.Mkdir(dir, 0o755))
	w := codec.NewJournalWriter(dir, codec.WriterOptions{MaxFileLength: 1 << 30, NoSync: true})
	c := codec.NewTraceCommand(nil)
	var locs []codec.Location
	for i := 0; i < n; i++ {
		c.Text = []byte(fmt.Sprintf("trace %d", i))
		loc, err := w.AppendCommand(c)
		require.NoError(t, err)
		locs = append(locs, loc)
	}
	require.NoError(t, w.Close())
	_, mnt := mountStore(t, dir, quietOpts(t))
	fdir := filepath.Join(mnt, "by-file", "db-1.log")

	// Lookup by name first: nothing has been listed.
	mid := locs[n/2]
	b, err := os.ReadFile(filepath.Join(fdir, fmt.Sprintf("%010d-KAHA_TRACE_COMMAND.json", mid.Offset)))
	require.NoError(t, err)
	assert.Contains(t, string(b), fmt.Sprintf(`"message":"trace %d"`, n/2))

	// Listing in small pieces.
	d, err := os.Open(fdir)
	require.NoError(t, err)
	defer d.Close()
	count, calls := 0, 0
	prev := ""
	for {
		part, err := d.Readdirnames(1000)
		calls++
		for _, p := range part {
			count++
			if !strings.HasSuffix(p, "-KAHA_TRACE_COMMAND.json") {
				continue
			}
			if p <= prev {
				t.Fatalf("not in journal order: %s after %s", p, prev)
			}
			prev = p
		}
		if err != nil {
			break
		}
	}
	assert.Equal(t, n+5, count)
	assert.Greater(t, calls, n/1000, "listed in pieces")
}

func TestEscapedNamesInListing(t *testing.T) {
	// The README's description of names is what the code does.
	dir, _ := synthStore(t, 1024)
	_, mnt := mountStore(t, dir, quietOpts(t))
	readme, err := os.ReadFile(filepath.Join(mnt, "README"))
	require.NoError(t, err)
	for _, example := range [][2]string{{"a/b", "a%2Fb"}, {"100%", "100%25"}, {"\t", "%09"}} {
		assert.Equal(t, example[1], EscapeName(example[0]))
		assert.True(t, bytes.Contains(readme, []byte(example[1])), example[1])
	}
}

// TestAccess: only the mounting user sees the tree, unless AllowOther.
func TestAccess(t *testing.T) {
	need.Root(t, "run a process as another user")
	statAs := func(p string) (string, error) {
		cmd := exec.Command("/usr/bin/stat", "-c", "%s", p)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	dir, _ := synthStore(t, 1024)
	for _, allow := range []bool{false, true} {
		opts := quietOpts(t)
		opts.AllowOther = allow
		_, mnt := mountStore(t, dir, opts)
		// Let the other user reach the mountpoint.
		for p := filepath.Dir(mnt); p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
			require.NoError(t, os.Chmod(p, 0o755))
		}
		out, err := statAs(filepath.Join(mnt, "README"))
		if allow {
			assert.NoError(t, err, out)
		} else {
			assert.Error(t, err)
			assert.Contains(t, out, "Permission denied")
		}
		info, err := os.ReadFile("/proc/self/mountinfo")
		require.NoError(t, err)
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) > 4 && f[4] == mnt {
				assert.Equal(t, allow, strings.Contains(line, "allow_other"), line)
				assert.Contains(t, f[5], "ro", "mounted read-only")
			}
		}
	}
}

// TestLiveAppend: a broker appending to the current file after the store
// was read does not change the snapshot's listing (the record index is
// built lazily, up to the end the snapshot saw); a refresh shows the new
// command.
func TestLiveAppend(t *testing.T) {
	dir, _ := synthStore(t, 1024)
	fsys, mnt := mountStore(t, dir, quietOpts(t))
	st, err := codec.OpenStore(dir)
	require.NoError(t, err)
	tail := st.Files[len(st.Files)-1]
	cmdsIn := func() int {
		n := 0
		for _, e := range names(t, filepath.Join(mnt, "by-file", tail.Name)) {
			if strings.HasSuffix(e, "_COMMAND.json") {
				n++
			}
		}
		return n
	}
	before := fsys.Snapshot().file(tail.ID).count

	// Append a batch where the broker would: over the EOF marker.
	f, err := os.OpenFile(tail.Path, os.O_RDWR, 0)
	require.NoError(t, err)
	info, err := f.Stat()
	require.NoError(t, err)
	rec := codec.AppendUserRecord(nil, codec.AppendCommand(nil, codec.NewTraceCommand([]byte("live"))))
	batch := append(codec.AppendBatch(nil, rec, true), codec.EOFRecord...)
	_, err = f.WriteAt(batch, info.Size()-int64(len(codec.EOFRecord)))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	assert.Equal(t, int(before), cmdsIn(), "the snapshot's view")
	changed, err := fsys.Refresh(false)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, int(before)+1, cmdsIn(), "after the refresh")
}

// TestEmptyStore: an index without data files (a broker that never wrote)
// is a store with nothing in it.
func TestEmptyStore(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "db.data"), nil, 0o644))
	_, mnt := mountStore(t, dir, quietOpts(t))
	assert.Empty(t, names(t, filepath.Join(mnt, "by-file")))
	assert.Empty(t, names(t, filepath.Join(mnt, "by-transaction")))
	assert.Equal(t, []string{"queue", "topic"}, names(t, filepath.Join(mnt, "by-destination")))
	assert.Empty(t, names(t, filepath.Join(mnt, "by-destination", "queue")))
	assert.Equal(t, "", readString(t, filepath.Join(mnt, "pinned")))
	var sum struct {
		Files    int   `json:"files"`
		Commands int64 `json:"commands"`
	}
	readJSON(t, filepath.Join(mnt, "summary.json"), &sum)
	assert.Zero(t, sum.Files)
	assert.Zero(t, sum.Commands)
}

package fsnode

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToErrno(t *testing.T) {
	var logged bytes.Buffer
	logger := log.New(&logged, "", 0)
	corrupt := &codec.CorruptionError{File: "db-3.log", FileID: 3, Offset: 100, Err: codec.ErrDecode}
	cases := []struct {
		err    error
		want   syscall.Errno
		logged bool
	}{
		{nil, 0, false},
		{errReadOnly, syscall.EROFS, false},
		{fmt.Errorf("x: %w", errNoEntry), syscall.ENOENT, false},
		{ErrBadName, syscall.ENOENT, false},
		{&codec.CorruptionError{File: "db-9.log", Err: codec.ErrMissingFile}, syscall.ENOENT, true},
		{fmt.Errorf("open: %w", fs.ErrNotExist), syscall.ENOENT, true},
		{corrupt, syscall.EIO, true},
		{errChanged, syscall.EIO, true},
		{errors.New("something else"), syscall.EIO, true},
		{syscall.EACCES, syscall.EACCES, true},
		{syscall.ENOSYS, syscall.EIO, true}, // never ENOSYS: the kernel would stop asking
	}
	for _, tc := range cases {
		logged.Reset()
		got := toErrno(logger, "op", tc.err)
		assert.Equal(t, tc.want, got, "%v", tc.err)
		assert.Equal(t, tc.logged, logged.Len() > 0, "%v logged: %q", tc.err, logged.String())
		if tc.logged {
			assert.Contains(t, logged.String(), tc.err.Error())
		}
	}
	assert.Contains(t, func() string { logged.Reset(); toErrno(logger, "read x", corrupt); return logged.String() }(), "db-3.log: offset 100")
}

func TestInoNumbers(t *testing.T) {
	seen := map[uint64]string{}
	add := func(ino uint64, what string) {
		t.Helper()
		assert.NotContains(t, []uint64{0, 1, ^uint64(0)}, ino, what)
		if prev, ok := seen[ino]; ok {
			t.Errorf("%s and %s share inode %d", what, prev, ino)
		}
		seen[ino] = what
	}
	for _, m := range (&Snapshot{}).rootTable() {
		add(m.ino, m.name)
	}
	for _, file := range []int32{1, 2, 1000, maxFileID} {
		add(inoAt(kindDataDir, file, 0), fmt.Sprint("dir ", file))
		for _, m := range []uint64{memberHolders, memberHoldersJSON, memberInfo} {
			add(inoAt(kindDataMember, file, m), fmt.Sprint("member ", file, m))
		}
		for _, off := range []int32{0, 28, 1 << 20, 1<<31 - 1} {
			loc := codec.Location{File: file, Offset: off}
			add(inoLoc(kindCommand, loc), "command "+loc.String())
			add(inoLoc(kindTxDir, loc), "tx "+loc.String())
			add(inoLoc(kindTxState, loc), "state "+loc.String())
			add(inoLoc(kindTxInfo, loc), "info "+loc.String())
		}
	}
	add(inoPath("by-destination", "0:Q"), "hashed")
	// Ids past 2^28 still get a number, from the hashed range.
	big := inoLoc(kindCommand, codec.Location{File: maxFileID + 1, Offset: 28})
	assert.Equal(t, uint64(kindHashed), big>>kindShift)
	// Stable: the same input, the same number.
	assert.Equal(t, inoLoc(kindCommand, codec.Location{File: 7, Offset: 99}), inoLoc(kindCommand, codec.Location{File: 7, Offset: 99, Size: 5}))
}

func TestNameIndexDuplicates(t *testing.T) {
	raw := []string{"XID:b", "XID:a", "XID:b", strings.Repeat("x", 300), strings.Repeat("x", 300), "a/b", "XID:b"}
	x := newNameIndex(len(raw), func(i int) string { return raw[i] })
	got := map[string]int{}
	for k := 0; k < x.len(); k++ {
		i, name := x.entry(k)
		checkComponent(t, raw[i], name)
		_, dup := got[name]
		require.False(t, dup, "name %q twice", name)
		got[name] = i
		j, ok := x.lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, i, j, name)
	}
	assert.Len(t, got, len(raw))
	// Duplicates keep their journal order: the first is plain, then %~2, %~3.
	assert.Equal(t, 0, got["XID:b"])
	assert.Equal(t, 2, got["XID:b%~2"])
	assert.Equal(t, 6, got["XID:b%~3"])
	assert.Equal(t, 5, got["a%2Fb"])
	for _, bad := range []string{"XID:b%~1", "XID:b%~4", "XID:b%~02", "XID:c", "a/b", "%41", "XID:b%~"} {
		_, ok := x.lookup(bad)
		assert.False(t, ok, bad)
	}
}

func TestPendingAndCommandNames(t *testing.T) {
	e := recEntry{off: 28, typ: codec.AddMessageCommand}
	n := commandName(e, false)
	assert.Equal(t, "0000000028-KAHA_ADD_MESSAGE_COMMAND.json", n)
	off, typ, body, ok := parseCommandName(n)
	require.True(t, ok)
	assert.Equal(t, int32(28), off)
	assert.Equal(t, codec.AddMessageCommand, typ)
	assert.False(t, body)
	n = commandName(e, true)
	assert.Equal(t, "0000000028-KAHA_ADD_MESSAGE_COMMAND.body", n)
	off, typ, body, ok = parseCommandName(n)
	require.True(t, ok)
	assert.Equal(t, int32(28), off)
	assert.Equal(t, codec.AddMessageCommand, typ)
	assert.True(t, body)
	_, _, body, ok = parseCommandName("0000000028-KAHA_UPDATE_MESSAGE_COMMAND.body")
	assert.True(t, ok && body)
	assert.Equal(t, "2147483647-KAHA_TRACE_COMMAND.json", commandName(recEntry{off: 1<<31 - 1}, false))
	for _, bad := range []string{"28-KAHA_ADD_MESSAGE_COMMAND.json", "00000000028-KAHA_ADD_MESSAGE_COMMAND.json", "0000000028-KAHA_NOPE.json",
		"0000000028-KAHA_ADD_MESSAGE_COMMAND", "9999999999-KAHA_TRACE_COMMAND.json", "00000000x8-KAHA_TRACE_COMMAND.json",
		"0000000028-KAHA_TRACE_COMMAND.body", "0000000028-KAHA_REMOVE_MESSAGE_COMMAND.body", "0000000028-KAHA_ADD_MESSAGE_COMMAND.txt"} {
		_, _, _, ok := parseCommandName(bad)
		assert.False(t, ok, bad)
	}
	for _, body := range []bool{false, true} {
		long := pendingName(41, strings.Repeat("ID:", 200), body)
		assert.LessOrEqual(t, len(long), MaxNameLen)
		assert.True(t, strings.HasPrefix(long, "0000000042-"))
		assert.True(t, strings.HasSuffix(long, suffix(body)))
		checkComponent(t, "", long)
	}
	assert.Equal(t, strings.TrimSuffix(pendingName(3, "ID:x", false), ".json"), strings.TrimSuffix(pendingName(3, "ID:x", true), ".body"))
}

func TestCheckFUSE(t *testing.T) {
	found := func(string) (string, error) { return "/usr/bin/fusermount3", nil }
	missing := func(string) (string, error) { return "", errors.New("not found") }
	dev := filepath.Join(t.TempDir(), "fuse")
	require.NoError(t, os.WriteFile(dev, nil, 0o600))

	err := checkFUSE(filepath.Join(t.TempDir(), "nofuse"), found)
	assert.ErrorIs(t, err, ErrNoFUSE)
	assert.ErrorContains(t, err, "nofuse")
	err = checkFUSE(dev, missing)
	assert.ErrorIs(t, err, ErrNoFUSE)
	assert.ErrorContains(t, err, "fusermount3 not found")
	assert.NoError(t, checkFUSE(dev, found))
}

func TestRecentRenders(t *testing.T) {
	var r recentRenders
	loc := func(i int) renderKey { return renderKey{loc: codec.Location{File: 1, Offset: int32(28 + i)}} }
	val := func(i int) []byte { return []byte(itoa(i)) }
	last := 3*recentSize - 1
	for i := 0; i <= last; i++ {
		r.put(loc(i), val(i))
	}
	assert.LessOrEqual(t, len(r.data), recentSize, "bounded")
	_, ok := r.get(loc(0))
	assert.False(t, ok, "evicted")
	b, ok := r.get(loc(last))
	require.True(t, ok)
	assert.Equal(t, val(last), b)
	_, ok = r.get(loc(last))
	assert.True(t, ok, "kept until dropped")
	r.drop(loc(last))
	_, ok = r.get(loc(last))
	assert.False(t, ok, "dropped")

	// Put twice (rendered ahead, then by the lookup): one slot, kept as
	// long as any other entry.
	r.put(loc(-1), val(1))
	r.put(loc(-1), val(2))
	for i := 0; i < recentSize-1; i++ {
		r.put(loc(last+1+i), val(i))
	}
	b, ok = r.get(loc(-1))
	require.True(t, ok, "one slot for both puts")
	assert.Equal(t, val(2), b)

	// A command and its message's body are two entries.
	r.put(renderKey{loc: loc(-2).loc, body: true}, val(3))
	b, _ = r.get(loc(-2))
	assert.Nil(t, b)
	b, _ = r.get(renderKey{loc: loc(-2).loc, body: true})
	assert.Equal(t, val(3), b)
}

// TestRecentRendersPutAgain: content dropped (read to its end) and put
// again takes a new slot; the reuse of its old slot does not remove it.
func TestRecentRendersPutAgain(t *testing.T) {
	var r recentRenders
	key := func(i int) renderKey { return renderKey{loc: codec.Location{File: 1, Offset: int32(i)}} }
	r.put(key(0), []byte("a"))
	r.drop(key(0))
	for i := 1; i < recentSize/2; i++ {
		r.put(key(i), []byte("b"))
	}
	r.put(key(0), []byte("again")) // slot recentSize/2
	for i := recentSize / 2; i < recentSize; i++ {
		r.put(key(i), []byte("c")) // the last one reuses slot 0
	}
	b, ok := r.get(key(0))
	require.True(t, ok, "kept: its old slot's reuse is not its eviction")
	assert.Equal(t, "again", string(b))
	assert.Equal(t, len("again")+recentSize-1, r.bytes)
}

// TestRecentRendersBytes: the content kept is bounded in bytes too, the
// oldest going first, never the last put.
func TestRecentRendersBytes(t *testing.T) {
	var r recentRenders
	key := func(i int) renderKey { return renderKey{loc: codec.Location{File: 1, Offset: int32(i)}, body: true} }
	big := make([]byte, recentBytes/4+1)
	for i := 0; i < 4; i++ {
		r.put(key(i), big)
	}
	assert.LessOrEqual(t, r.bytes, recentBytes)
	_, ok := r.get(key(0))
	assert.False(t, ok, "the oldest dropped")
	_, ok = r.get(key(3))
	assert.True(t, ok)
	huge := make([]byte, recentBytes+1)
	r.put(key(9), huge)
	b, ok := r.get(key(9))
	assert.True(t, ok, "the last put stays, however large")
	assert.Len(t, b, len(huge))
	assert.Equal(t, len(huge), r.bytes, "everything else dropped")
	r.drop(key(9))
	assert.Zero(t, r.bytes)
}

// TestClassifyMountError: the ways a mount fails when FUSE cannot be used
// here (go-fuse's error texts and errnos) match ErrNoFUSE and keep their
// cause, and say what the mount needs and what works without it; other
// failures stay as they are.
func TestClassifyMountError(t *testing.T) {
	for _, c := range []struct {
		err    error
		noFUSE bool
	}{
		// go-fuse: the fusermount3 helper failed (it printed why).
		{fmt.Errorf("fusermount exited with code %v\n", 256), true},
		{&os.PathError{Op: "open", Path: "/dev/fuse", Err: syscall.EACCES}, true},
		{&os.PathError{Op: "open", Path: "/dev/fuse", Err: syscall.ENOENT}, true},
		{syscall.EPERM, true},
		{syscall.ENODEV, true},
		{&os.PathError{Op: "stat", Path: "/mnt/x", Err: syscall.ENOENT}, false},
		{errors.New("init: protocol version 7.5 too old"), false},
	} {
		got := classifyMountError(c.err)
		assert.ErrorIs(t, got, c.err, "%v", c.err)
		if !c.noFUSE {
			assert.Same(t, c.err, got)
			assert.NotErrorIs(t, got, ErrNoFUSE, "%v", c.err)
			continue
		}
		assert.ErrorIs(t, got, ErrNoFUSE, "%v", c.err)
		msg := got.Error()
		assert.True(t, strings.HasPrefix(msg, "FUSE is not available: "+strings.TrimSpace(c.err.Error())+"\nhint: the mount needs /dev/fuse"), msg)
		for _, want := range []string{"--device /dev/fuse --cap-add SYS_ADMIN", "as root", "fuse group",
			`"kahafs ls STORE [PATH]"`, `"kahafs cat STORE PATH"`, `"kahafs find STORE --message-id ID"`, "byte for byte"} {
			assert.Contains(t, msg, want)
		}
		assert.NotContains(t, msg, "\n\n", "no blank line from go-fuse's trailing newline")
	}
	assert.NoError(t, classifyMountError(nil))
	// CheckFUSE's errors carry the hint too.
	err := checkFUSE(filepath.Join(t.TempDir(), "nofuse"), func(string) (string, error) { return "", errors.New("no") })
	assert.ErrorIs(t, err, ErrNoFUSE)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "\nhint: without FUSE")
}

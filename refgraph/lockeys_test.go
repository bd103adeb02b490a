package refgraph

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/require"
)

// The keys of a location index are checked against the order index's
// messages (kahaindex.LocationKeys): their number, an order-free sum of
// their locations, and the files they name. Damage found by garbling 16
// bytes of one page of seed 340's db.data at a time, against a real
// 5.17.2 broker (2026-12-04).

// q2Leaf is the offset in seed 340's db.data of page 71, a leaf of
// queue://Q.2's location index (page N is at (N+1)×4096, after the
// file's header), and q2Key that of its key 25 (137:3869): the page
// header (21 bytes), the count (2), 12 bytes a key (file, offset, size).
const q2Leaf = 72 * 4096
const q2Key = q2Leaf + 21 + 2 + 25*12

// editedSeed340 is a copy of seed 340's store with db.data edited.
func editedSeed340(t *testing.T, edit func(data []byte)) string {
	t.Helper()
	work := brokertest.CopyStore(t, seed340)
	path := filepath.Join(work, "db.data")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, uint32(137), binary.BigEndian.Uint32(data[q2Key:]), "Q.2's key 25 as the test expects it")
	require.Equal(t, uint32(3869), binary.BigEndian.Uint32(data[q2Key+4:]))
	edit(data)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return work
}

// A key whose file id changed to that of a file kahafs predicts free
// (db-30.log): counts, shapes and notes all agree, and kahafs called
// db-30.log free; the broker's cleanup keeps it (its location index
// visitor meets the key) and deletes nothing.
func TestChangedLocationKeyKeepsItsFile(t *testing.T) {
	work := editedSeed340(t, func(data []byte) { binary.BigEndian.PutUint32(data[q2Key:], 30) })
	st, err := codec.OpenStore(work)
	require.NoError(t, err)
	g, err := Load(st, StoreOptions(st, true, nil), codec.ReadOptions{})
	require.NoError(t, err)
	requireDamaged(t, g, `destination "0:Q.2": the location index's keys are not the locations of the order index's messages`)
	require.True(t, g.Damaged(), "a damaged index is damage (exit status 2; compaction refuses it)")
	require.NotEmpty(t, g.IndexDamage())

	brokertest.Require(t)
	in, out := inspectNoTrace(t, work)
	require.NotNil(t, in, "the broker did not start:\n%s", out)
	require.Empty(t, in.Deleted, "the broker keeps db-30.log, which the unedited store lets it delete")
}

// Keys garbled into files that do not exist (B-72 of the grid): a broker
// refuses to start ("Detected missing/corrupt journal files"), so it
// deletes nothing; kahafs predicted db-30.log free. Now the index is
// damaged, and the missing files are named as the broker would.
func TestLocationKeyInMissingFileStopsTheBroker(t *testing.T) {
	garble, err := hex.DecodeString("5fb0bf9d42af77c2490d71e906e42397")
	require.NoError(t, err)
	work := editedSeed340(t, func(data []byte) { copy(data[q2Leaf+321:], garble) })
	st, err := codec.OpenStore(work)
	require.NoError(t, err)
	g, err := Load(st, StoreOptions(st, true, nil), codec.ReadOptions{})
	require.NoError(t, err)
	requireDamaged(t, g, "db--1080212817.log")
	require.Contains(t, g.fileByID[30].Reasons[0].Text, "the location index of queue://Q.2 has a key in db--1080212817.log, which is not in the store (a broker refuses to start on it)")
	require.True(t, g.Damaged())
	refused := 0
	for _, w := range g.Warnings() {
		if strings.Contains(w, "the location index of queue://Q.2: a broker started with this index refuses to start") {
			refused++
		}
	}
	require.Equal(t, 2, refused, "db--1080212817.log and db-597098633.log: %q", g.Warnings())

	brokertest.Require(t)
	in, out := inspectNoTrace(t, work)
	require.Nil(t, in, "the broker started:\n%s", out)
	require.Contains(t, string(out), "Detected missing/corrupt journal files referenced by:[0:Q.2]")
}

// inspectTimeout bounds a broker run of inspectNoTrace: one takes 1-4 s.
const inspectTimeout = 2 * time.Minute

// inspectNoTrace runs brokerkit Inspect on work (it changes the store;
// without the TRACE lines: 5.17.2's TRACE line for seed 340's c11:s11,
// which has no ack positions, throws in checkpointUpdate) and returns
// what it found, nil when the broker did not start, and its output.
// A broker that has not finished in inspectTimeout is taken as one that
// does not start (it loops: see TestRedoOverDestinationsRootIsDamage).
func inspectNoTrace(t *testing.T, work string) (*brokertest.Inspection, []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "inspect.json")
	ctx, cancel := context.WithTimeout(context.Background(), inspectTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(brokertest.RepoRoot(), "brokerkit", "run.sh"), "Inspect", work, out, "--no-gc-trace")
	cmd.WaitDelay = 5 * time.Second
	msg, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return nil, fmt.Appendf(msg, "\nthe broker had not finished after %s: killed", inspectTimeout)
	}
	if err != nil {
		return nil, msg
	}
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var in brokertest.Inspection
	require.NoError(t, json.Unmarshal(raw, &in))
	return &in, msg
}

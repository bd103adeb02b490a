package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/adler32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/compact"
	"github.com/kahafs/kahafs/fsnode"
	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/kahafs/kahafs/internal/faults"
	"github.com/kahafs/kahafs/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileLayout lists the batch offsets and records of a clean data file.
func fileLayout(t *testing.T, path string) (batches []int, recs []codec.Record) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	r := codec.NewReader(codec.NewDataFile(0, path, b), codec.ReadOptions{})
	seen := map[int32]bool{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return batches, recs
		}
		require.NoError(t, err)
		if !seen[rec.Batch] {
			seen[rec.Batch] = true
			batches = append(batches, int(rec.Batch))
		}
		rec.Data = nil
		recs = append(recs, rec)
	}
}

// resum recomputes the checksum of the batch at off, so that only the
// framing or the content is wrong, not the checksum.
func resum(b []byte, off int) []byte {
	n := int(binary.BigEndian.Uint32(b[off+16:]))
	binary.BigEndian.PutUint64(b[off+20:], uint64(adler32.Checksum(b[off+codec.BatchHeaderSize:off+codec.BatchHeaderSize+n])))
	return b
}

type corruptionCase struct {
	name string
	// damage edits the store copy and returns the path of the damaged
	// file ("" when no file is named) and the offset reported.
	damage func(t *testing.T, dir string) (file string, offset int64)
	want   error // sentinel the codec reports (nil: none)
	// exit statuses of dump/stats and of holders
	journalExit, holdersExit int
	// refused: a record kahafs does not model (store.ErrUnmodeled):
	// stats, holders, the mount and compaction refuse the store (exit
	// status 1), naming the record's file and offset; dump still lists it
	refused bool
}

func TestCorruptionMatrix(t *testing.T) {
	var fx brokertest.Fixture
	for _, f := range brokertest.Fixtures(t) {
		if f.Name == "topics" {
			fx = f
		}
	}
	require.NotEmpty(t, fx.Name, "the topics fixture")
	middle := func(dir string) string { return filepath.Join(dir, "db-4.log") }
	edit := func(t *testing.T, path string, fn func(b []byte, batches []int, recs []codec.Record) ([]byte, int64)) (string, int64) {
		batches, recs := fileLayout(t, path)
		var off int64
		require.NoError(t, faults.EditFile(path, func(b []byte) []byte {
			var nb []byte
			nb, off = fn(b, batches, recs)
			return nb
		}))
		return path, off
	}
	cases := []corruptionCase{
		{"flipped byte inside a batch", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, _ []codec.Record) ([]byte, int64) {
				return faults.FlipByte(b, bs[1]+40), int64(bs[1])
			})
		}, codec.ErrChecksum, exitDamaged, exitDamaged, false},
		{"truncated record", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, rs []codec.Record) ([]byte, int64) {
				r := rs[len(rs)/2]
				return faults.Truncate(b, int(r.Loc.Offset)+10), int64(r.Batch)
			})
		}, codec.ErrTruncated, exitDamaged, exitDamaged, false},
		{"torn last batch of the last file", func(t *testing.T, dir string) (string, int64) {
			return edit(t, filepath.Join(dir, "db-8.log"), func(b []byte, bs []int, _ []codec.Record) ([]byte, int64) {
				last := bs[len(bs)-1]
				return faults.Truncate(b, last+codec.BatchHeaderSize+3), int64(last)
			})
		}, codec.ErrTornTail, exitOK, exitOK, false},
		{"zeroed 4 KiB sector", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, _ []codec.Record) ([]byte, int64) {
				// the sector holding the second batch's header
				return faults.Zero(b, bs[1], 4096), int64(bs[1])
			})
		}, codec.ErrBadBatch, exitDamaged, exitDamaged, false},
		{"length larger than the file", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, _ []codec.Record) ([]byte, int64) {
				return faults.Put(b, bs[1]+16, 0x7F, 0, 0, 0), int64(bs[1])
			})
		}, codec.ErrTruncated, exitDamaged, exitDamaged, false},
		{"negative length", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, _ []codec.Record) ([]byte, int64) {
				return faults.Put(b, bs[1]+16, 0xFF, 0xFF, 0xFF, 0xF0), int64(bs[1])
			})
		}, codec.ErrBadBatch, exitDamaged, exitDamaged, false},
		{"too-small record length", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, rs []codec.Record) ([]byte, int64) {
				r := rs[1]
				return resum(faults.Put(b, int(r.Loc.Offset), 0, 0, 0, 3), int(r.Batch)), int64(r.Loc.Offset)
			})
		}, codec.ErrBadSize, exitDamaged, exitDamaged, false},
		{"unknown record type", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, rs []codec.Record) ([]byte, int64) {
				r := rs[1]
				return resum(faults.Put(b, int(r.Loc.Offset)+4, 7), int(r.Batch)), int64(r.Loc.Offset)
			})
		}, codec.ErrBadRecordType, exitDamaged, exitDamaged, false},
		{"unknown command type", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, rs []codec.Record) ([]byte, int64) {
				r := rs[1]
				return resum(faults.Put(b, int(r.Loc.Offset)+5, 99), int(r.Batch)), int64(r.Loc.Offset)
			})
		}, codec.ErrUnknownCommand, exitDamaged, exitError, true},
		{"protobuf body that does not parse", func(t *testing.T, dir string) (string, int64) {
			return edit(t, middle(dir), func(b []byte, bs []int, rs []codec.Record) ([]byte, int64) {
				r := rs[1]
				// the first field tag becomes field 0, which protobuf forbids
				return resum(faults.Put(b, int(r.Loc.Offset)+7, 0x00), int(r.Batch)), int64(r.Loc.Offset)
			})
		}, codec.ErrDecode, exitDamaged, exitDamaged, false},
		{"missing file in the middle", func(t *testing.T, dir string) (string, int64) {
			// The index's ack map refers to db-3.log: a broker with this
			// index refuses to start without it.
			require.NoError(t, os.Remove(filepath.Join(dir, "db-3.log")))
			return "db-3.log", -1
		}, nil, exitOK, exitDamaged, false},
		{"unreadable file", func(t *testing.T, dir string) (string, int64) {
			p := middle(dir)
			require.NoError(t, os.Remove(p))
			require.NoError(t, syscall.Mkfifo(p, 0o644))
			return p, 0
		}, codec.ErrUnreadable, exitDamaged, exitDamaged, false},
		{"empty file", func(t *testing.T, dir string) (string, int64) {
			// The broker skips zero-length files ("partially initialised").
			require.NoError(t, os.Truncate(filepath.Join(dir, "db-6.log"), 0))
			return "", -1
		}, nil, exitOK, exitOK, false},
		{"zero-length db.data", func(t *testing.T, dir string) (string, int64) {
			// The broker then replays the whole journal.
			require.NoError(t, os.Truncate(filepath.Join(dir, "db.data"), 0))
			return "", -1
		}, nil, exitOK, exitOK, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := brokertest.CopyStore(t, fx.StoreDir)
			file, off := tc.damage(t, dir)

			// codec: the sentinel, with file and offset.
			st, err := codec.OpenStore(dir)
			require.NoError(t, err)
			stats, err := codec.ComputeStats(st, codec.ReadOptions{}, 0)
			require.NoError(t, err)
			var found *codec.CorruptionError
			for _, f := range stats.Files {
				for _, d := range f.Damage {
					if tc.want != nil && errors.Is(d, tc.want) {
						found = d
					}
				}
			}
			if tc.want != nil {
				require.NotNil(t, found, "no %v reported", tc.want)
				assert.Equal(t, file, found.File)
				assert.Equal(t, off, found.Offset, "damage offset")
			} else {
				assert.True(t, stats.Clean(), "no journal damage")
			}
			var records int64
			for _, f := range stats.Files {
				records += f.ByType.Sum().Count
			}
			assert.Greater(t, records, int64(100), "the rest of the store stays readable")

			// CLI: exit status and the damage on stderr.
			for _, args := range [][]string{{"dump", dir}, {"stats", dir}} {
				_, stderr, code := runCLI(t, args...)
				want := tc.journalExit
				if tc.refused && args[0] == "stats" {
					want = exitError
				}
				assert.Equal(t, want, code, "%v", args)
				if tc.want != nil {
					assert.Contains(t, stderr, file, "%v names the file", args)
				}
			}
			out, stderr, code := runCLI(t, "holders", "--json", "--max-file-length", "16384", dir)
			assert.Equal(t, tc.holdersExit, code, "holders: %s", stderr)
			if tc.refused {
				// no prediction at all: the record's file and offset, and its type
				assert.Empty(t, out)
				assert.Contains(t, stderr, file+": offset "+itoa(int32(off))+": ")
				assert.Contains(t, stderr, "kahafs makes no cleanup prediction")
				_, err := compact.Compact(dir, compact.Options{MaxFileLength: 16384, DryRun: true, Force: true})
				assert.ErrorIs(t, err, store.ErrUnmodeled)
				_, err = fsnode.Open(dir, fsnode.Options{Options: store.Options{MaxFileLength: 16384}})
				assert.ErrorIs(t, err, store.ErrUnmodeled, "the mount (and tree) refuses it")
				return
			}
			var doc struct {
				Files []struct {
					Name    string `json:"name"`
					Pinned  bool   `json:"pinned"`
					Reasons []struct {
						Kind string `json:"kind"`
					} `json:"reasons"`
				} `json:"files"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &doc), "holders still reports")
			assert.NotEmpty(t, doc.Files)
			if errors.Is(tc.want, codec.ErrUnreadable) {
				// never predicted deleted: what it holds is unknown
				for _, f := range doc.Files {
					if f.Name == filepath.Base(file) {
						assert.True(t, f.Pinned, "%s could not be read", f.Name)
						require.NotEmpty(t, f.Reasons)
						assert.Equal(t, "unreadable", f.Reasons[0].Kind)
					}
				}
			}
			if tc.holdersExit == exitDamaged && file != "" {
				assert.Contains(t, stderr, filepath.Base(file))
			}

			// The mount shows the damage in summary.json and the file's info.json.
			if fuseOK() {
				mnt := startMount(t, dir, "--max-file-length", "16384")
				b, err := os.ReadFile(filepath.Join(mnt, "summary.json"))
				require.NoError(t, err)
				var sum struct {
					Damage struct {
						Clean bool `json:"clean"`
					} `json:"damage"`
				}
				require.NoError(t, json.Unmarshal(b, &sum))
				assert.Equal(t, tc.journalExit == exitOK, sum.Damage.Clean)
				if tc.want != nil && tc.journalExit == exitDamaged {
					info, err := os.ReadFile(filepath.Join(mnt, "by-file", filepath.Base(file), "info.json"))
					require.NoError(t, err)
					assert.Contains(t, string(info), `"offset": `+itoa(int32(off)))
				}
				ents, err := os.ReadDir(filepath.Join(mnt, "by-destination", "topic"))
				require.NoError(t, err)
				assert.NotEmpty(t, ents, "the rest of the tree is browsable")
			}

			// Compaction refuses a damaged store unless forced, then says
			// what it dropped.
			if tc.journalExit == exitDamaged {
				_, err := compact.Compact(dir, compact.Options{MaxFileLength: 16384, DryRun: true})
				assert.ErrorIs(t, err, compact.ErrDamaged)
				rep, err := compact.Compact(dir, compact.Options{MaxFileLength: 16384, DryRun: true, Force: true})
				require.NoError(t, err)
				require.NotEmpty(t, rep.Dropped)
				assert.True(t, strings.Contains(strings.Join(rep.Dropped, "\n"), filepath.Base(file)))
			}
		})
	}
}

// fuseOK reports whether the mount can be tested here.
func fuseOK() bool {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return false
	}
	_, err := os.Stat("/bin/fusermount3")
	if err != nil {
		_, err = os.Stat("/usr/bin/fusermount3")
	}
	return err == nil
}

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/kahafs/kahafs/codec"
	"github.com/kahafs/kahafs/kahaindex"
	"github.com/kahafs/kahafs/store"
	"github.com/spf13/cobra"
)

type dumpFlags struct {
	file     string
	fileID   int32 // parsed from file
	json     bool
	noVerify bool
}

// parseDataFileArg reads a data file given by name (db-37.log, also as a
// path into the store) or by id (37).
func parseDataFileArg(s string) (int32, bool) {
	if id, ok := codec.ParseDataFileName(filepath.Base(s)); ok {
		return id, true
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int32(n), true
}

func newDumpCmd() *cobra.Command {
	var f dumpFlags
	cmd := &cobra.Command{
		Use:   "dump STORE",
		Short: "Print every journal command, in journal order",
		Long: `dump prints one line per journal command in journal (replay) order:
location, size, type and the command's fields. With --json every line is a
JSON object with file, offset, size, batch, type and the decoded fields; a
message's line also has a summary of its OpenWire header ("openwire") and the
message itself: "headers" (JMS headers, times in RFC 3339), "properties"
(typed values) and "body" (text, base64 bytes, typed map or stream, the
class name of an object; cut at 4096 bytes, with its full size).`,
		Args: withUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.file != "" {
				id, ok := parseDataFileArg(f.file)
				if !ok {
					return &usageError{cmd: cmd, err: fmt.Errorf("invalid argument %q for \"--file\": give a data file's name (db-37.log) or id (37)", f.file)}
				}
				f.fileID = id
			}
			return runDump(cmd, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.file, "file", "", "only this data file: its name (db-N.log) or id (N)")
	cmd.Flags().BoolVar(&f.json, "json", false, "one JSON object per line")
	cmd.Flags().BoolVar(&f.noVerify, "no-verify", false, "do not verify batch checksums")
	return cmd
}

func runDump(cmd *cobra.Command, dir string, f dumpFlags) error {
	l, err := store.Locate(dir)
	if err != nil {
		return err
	}
	if !l.Multi() {
		return dumpStore(cmd, dir, l.Journal, f)
	}
	if f.fileID != 0 {
		return &usageError{cmd: cmd, err: fmt.Errorf("--file names a data file of one store, and %s holds %d: give the store's directory (%s)", dir, len(l.Children), l.Children[0].Dir())}
	}
	// Each store in turn, after a line that names it: "== TITLE (REL,
	// KIND)", with --json {"store":NAME,"kind":KIND,"dir":DIR}.
	damaged := false
	for _, c := range l.Children {
		out := cmd.OutOrStdout()
		if f.json {
			head := map[string]string{"store": c.Name, "kind": c.KindName(), "dir": c.Dir()}
			if !c.Analysable() {
				head["notAnalysed"] = c.NotAnalysedText()
			}
			b, err := json.Marshal(head)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%s\n", b)
		} else {
			fmt.Fprintln(out, storeHeading(c))
			if !c.Analysable() {
				fmt.Fprintln(out, safe(c.NotAnalysedText()))
			}
		}
		if !c.Analysable() {
			continue
		}
		if err := dumpStore(cmd, c.Dir(), c.Journal, f); errors.Is(err, errDamaged) {
			damaged = true
		} else if err != nil {
			return err
		}
	}
	if damaged {
		return errDamaged
	}
	return nil
}

// dumpStore prints the commands of the store st (in dir).
func dumpStore(cmd *cobra.Command, dir string, st *codec.Store, f dumpFlags) error {
	var err error
	files := st.Files
	if f.fileID != 0 {
		fi, ok := st.File(f.fileID)
		if !ok {
			return fmt.Errorf("store %s has no %s; its data files are %s", dir, codec.DataFileName(f.fileID), fileRange(st.Files))
		}
		files = []codec.FileInfo{fi}
	}
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<16)
	defer out.Flush()
	opts := codec.ReadOptions{SkipChecksums: f.noVerify}
	jsonOpts := codec.JSONOptions{OpenWire: true, OpenWireVersion: kahaindex.StoreOpenWireVersion(st.Dir)}
	type part struct {
		text []byte
		sum  codec.FileSummary
	}
	damaged := false
	err = codec.ScanOrdered(files, 0, func(fi codec.FileInfo) (part, error) {
		var p part
		var err error
		var line []byte
		p.sum, err = codec.ScanFile(fi, opts, func(rec codec.Record, c *codec.Command) error {
			if f.json {
				p.text = codec.AppendCommandJSON(p.text, rec, c, jsonOpts)
			} else {
				line = codec.AppendCommandText(line[:0], rec, c)
				p.text = appendSafe(p.text, line)
			}
			p.text = append(p.text, '\n')
			return nil
		})
		if fi.ID != st.Files[len(st.Files)-1].ID {
			p.sum.NotLast()
		}
		return p, err
	}, func(fi codec.FileInfo, p part) error {
		if _, err := out.Write(p.text); err != nil {
			return err
		}
		if reportDamage(cmd.ErrOrStderr(), p.sum.Damage) {
			damaged = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if damaged {
		return errDamaged
	}
	return nil
}

// fileRange names a store's data files in a few words: "db-2.log … db-9.log
// (6 files)", "db-4.log", "none".
func fileRange(files []codec.FileInfo) string {
	switch len(files) {
	case 0:
		return "none"
	case 1:
		return files[0].Name
	}
	return fmt.Sprintf("%s … %s (%d files)", files[0].Name, files[len(files)-1].Name, len(files))
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// compactStep compacts a copy of the store (the original stays the cache).
func (b *bench) compactStep() []*result {
	r := &result{step: stepCompact, command: "`kahafs compact --json --no-cache COPY`" + b.indexSays()}
	if !b.needs(r, "compact") {
		return []*result{r}
	}
	dir := filepath.Join(b.work, "compact")
	defer os.RemoveAll(dir)
	cp := filepath.Join(dir, "store")
	if err := copyStore(b.storeFiles(), cp); err != nil {
		r.err = err
		return []*result{r}
	}
	var out bytes.Buffer
	c, err := b.runChild(&out, nil, b.bin, []string{"compact", "--json", "--max-file-length", b.fileLengthArg(),
		"--no-cache", "--backup", filepath.Join(dir, "original"), cp})
	r.wall, r.rss, r.cpu, r.err = c.wall, c.rss, c.cpu, err
	if err == nil {
		noteCompact(r, out.Bytes())
	}
	return []*result{r}
}

// compactCachedStep compacts another copy the way an admin does after
// looking at it: `kahafs holders` first (not timed; it writes the analysis
// cache), then `kahafs compact` with the same cache, timed. The compaction
// takes its analysis from the cache and still verifies the new journal by
// a full replay.
func (b *bench) compactCachedStep() []*result {
	r := &result{step: stepCompactCached, command: "`kahafs holders COPY`, then `kahafs compact --json COPY` (cache warm)" + b.indexSays()}
	if !b.needs(r, "compact") {
		return []*result{r}
	}
	dir := filepath.Join(b.work, "compact-cached")
	defer os.RemoveAll(dir)
	cp := filepath.Join(dir, "store")
	if err := copyStore(b.storeFiles(), cp); err != nil {
		r.err = err
		return []*result{r}
	}
	// The analysis cache does not trust files written within the last two
	// seconds by their identity alone (replaycache's racy window); a store
	// an admin compacts was not copied a moment ago.
	time.Sleep(2500 * time.Millisecond)
	cache := filepath.Join(dir, "analysis-cache")
	c, err := b.runChild(io.Discard, nil, b.bin, []string{"holders", "--json", "--max-file-length", b.fileLengthArg(),
		"--cache-dir", cache, cp})
	if err != nil {
		r.err = fmt.Errorf("holders before compact: %w", err)
		return []*result{r}
	}
	r.note("holders before it (writes the cache, not timed) %s", seconds(c.wall))
	var out bytes.Buffer
	c, err = b.runChild(&out, nil, b.bin, []string{"compact", "--json", "--max-file-length", b.fileLengthArg(),
		"--cache-dir", cache, "--backup", filepath.Join(dir, "original"), cp})
	r.wall, r.rss, r.cpu, r.err = c.wall, c.rss, c.cpu, err
	if err == nil {
		noteCompact(r, out.Bytes())
	}
	return []*result{r}
}

// noteCompact summarises the compaction report.
func noteCompact(r *result, raw []byte) {
	var rep struct {
		Before, After struct {
			Files int   `json:"files"`
			Bytes int64 `json:"bytes"`
		}
		Moved struct {
			Records  int `json:"records"`
			Messages int `json:"messages"`
		} `json:"moved"`
		Verified         bool    `json:"verified"`
		RecordsPerSecond float64 `json:"recordsPerSecond"`
		Analysis         struct {
			Cache  string `json:"cache"`
			Reason string `json:"reason"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		r.note("report not understood: %v", err)
		return
	}
	r.rate, r.rateW = float64(rep.Moved.Records)/r.wall.Seconds(), rep.RecordsPerSecond
	r.note("moved %d records (%d messages): %s records/s over the whole run, %s/s in its write phase",
		rep.Moved.Records, rep.Moved.Messages, thousands(int64(r.rate)), thousands(int64(rep.RecordsPerSecond)))
	r.note("%d → %d files, %s → %s, verified: %v", rep.Before.Files, rep.After.Files, mib(rep.Before.Bytes),
		mib(rep.After.Bytes), rep.Verified)
	a := "analysis cache: " + rep.Analysis.Cache
	if rep.Analysis.Reason != "" {
		a += " (" + rep.Analysis.Reason + ")"
	}
	r.note("%s", a)
}

// storeFiles are the files of the timed store: its data files and, with
// an index, everything else the broker left (db.data, db.redo, lock), as a
// store an admin compacts has them.
func (b *bench) storeFiles() []string {
	if b.cs.index == nil {
		return b.files
	}
	files := slices.Clone(b.files)
	ents, err := os.ReadDir(b.cs.store)
	if err != nil {
		return files
	}
	for _, e := range ents {
		if p := filepath.Join(b.cs.store, e.Name()); e.Type().IsRegular() && !slices.Contains(files, p) {
			files = append(files, p)
		}
	}
	return files
}

// copyStore copies the data files into dir and fsyncs them, so that the
// measured step neither reads the original nor waits for writeback.
func copyStore(files []string, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := copyFile(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			return err
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

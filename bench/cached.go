package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// cacheDir is the analysis cache of the cached rows: in the work
// directory, so that a run never touches the user's cache.
func (b *bench) cacheDir() string { return filepath.Join(b.work, "analysis-cache") }

// holdersCachedStep times holders run a second time: the first run (not
// timed) writes the analysis cache, the timed one answers from it.
func (b *bench) holdersCachedStep() []*result {
	r := &result{step: stepHoldersCached, command: "`kahafs holders STORE --json` again, the cache warm"}
	if !b.needs(r, "holders") {
		return []*result{r}
	}
	args := []string{"holders", b.cs.store, "--json", "--max-file-length", b.fileLengthArg(), "--cache-dir", b.cacheDir()}
	var warm bytes.Buffer
	c, err := b.runChild(&warm, nil, b.bin, args)
	if err != nil {
		r.err = fmt.Errorf("warming the cache: %w", err)
		return []*result{r}
	}
	r.note("first run (writes the cache) %s: %s", seconds(c.wall), lastLine(c.stderr))
	out := filepath.Join(b.work, "holders-cached.json")
	f, err := os.Create(out)
	if err != nil {
		r.err = err
		return []*result{r}
	}
	c, err = b.runChild(f, nil, b.bin, args)
	f.Close()
	r.wall, r.rss, r.cpu, r.err = c.wall, c.rss, c.cpu, err
	if err != nil {
		return []*result{r}
	}
	r.note("%s", lastLine(c.stderr))
	if !strings.Contains(c.stderr, "cache: hit") {
		r.err = fmt.Errorf("the second run did not answer from the cache: %s", c.stderr)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, warm.Bytes()) {
		r.note("OUTPUT DIFFERS from the first run")
	} else if cold, err := os.ReadFile(filepath.Join(b.work, "holders.json")); err == nil {
		if bytes.Equal(got, cold) {
			r.note("same output as the holders row")
		} else {
			r.note("OUTPUT DIFFERS from the holders row")
		}
	}
	return []*result{r}
}

// mountCachedStep times the first answer of a mount whose analysis is in
// the cache: a first mount (not timed) writes it, the timed one reads it.
func (b *bench) mountCachedStep() []*result {
	r := &result{step: stepMountCached, command: "`kahafs mount STORE MNT` until `ls MNT` answers, the cache warm"}
	if !b.canMount(r) {
		return []*result{r}
	}
	mnt := filepath.Join(b.work, "mnt-cached")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		r.err = err
		return []*result{r}
	}
	flags := []string{"--cache-dir", b.cacheDir()}
	warm, err := b.startMount(mnt, flags...)
	if err != nil {
		r.err = fmt.Errorf("warming the cache: %w", err)
		return []*result{r}
	}
	if _, err := warm.stop(mnt); err != nil {
		r.err = fmt.Errorf("warming the cache: %w", err)
		return []*result{r}
	}
	r.note("first mount (writes the cache) answered in %s", seconds(warm.ready))
	srv, err := b.startMount(mnt, flags...)
	if err != nil {
		r.err = err
		return []*result{r}
	}
	r.wall = srv.ready
	r.note("RSS at first answer %s", mibOrUnknown(srv.hwmAtReady))
	r.rss, r.err = srv.stop(mnt)
	ready := ""
	for _, l := range strings.Split(srv.stderr.String(), "\n") {
		if strings.HasPrefix(l, "ready:") {
			ready = l
		}
	}
	if !strings.Contains(ready, "cache hit") && r.err == nil {
		r.err = fmt.Errorf("the second mount did not answer from the cache: %s", srv.stderr)
	}
	return []*result{r}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// metricsCachedStep times `kahafs metrics --output` run a second time: the
// first run (not timed) writes the analysis cache, the timed one answers
// from it, as a run every minute from cron does (issue 23: under 0.2 s).
func (b *bench) metricsCachedStep() []*result {
	r := &result{step: stepMetricsCached, command: "`kahafs metrics STORE --output FILE` again, the cache warm"}
	if !b.needs(r, "metrics") {
		return []*result{r}
	}
	args := []string{"metrics", b.cs.store, "--max-file-length", b.fileLengthArg(), "--cache-dir", b.cacheDir(),
		"--output", filepath.Join(b.work, "kahafs.prom")}
	c, err := b.runChild(io.Discard, nil, b.bin, args)
	if err != nil {
		r.err = fmt.Errorf("warming the cache: %w", err)
		return []*result{r}
	}
	r.note("first run %s: %s", seconds(c.wall), lastLine(c.stderr))
	c, err = b.runChild(io.Discard, nil, b.bin, args)
	r.wall, r.rss, r.cpu, r.err = c.wall, c.rss, c.cpu, err
	if err != nil {
		return []*result{r}
	}
	r.note("%s", lastLine(c.stderr))
	if !strings.Contains(c.stderr, "cache: hit") {
		r.err = fmt.Errorf("the second run did not answer from the cache: %s", c.stderr)
	}
	return []*result{r}
}

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/kahafs/kahafs/holders"
	"golang.org/x/sys/unix"
)

// progressBar draws how far a long reading or writing is (reading a store
// for mount or holders; the phases of a compaction) on a terminal: what
// it does, a bar, the bytes done of the total and the rate, redrawn in
// place at most ten times a second and erased when done. On anything else
// (a pipe, a file, a log collector) it draws nothing at all.
type progressBar struct {
	w   io.Writer
	tty bool
	now func() time.Time

	mu    sync.Mutex // guards the fields below (updates may come from any goroutine)
	label string     // of the phase drawn
	start time.Time  // of the phase: when the one before it last said how far it was
	prev  time.Time  // of the last update (at first, when the bar was made)
	last  time.Time  // of the last drawing
	drawn bool       // a bar is on the screen
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, tty: isTerminal(w), now: time.Now, prev: time.Now()}
}

// reading is update for the phase that reads a store.
func (p *progressBar) reading(done, total int64) { p.update("reading store", done, total) }

// update draws the phase label at done bytes of total.
func (p *progressBar) update(label string, done, total int64) {
	if !p.tty || total <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if label != p.label {
		// The phase began when the one before it last reported (the
		// first update of a phase comes after some of its work).
		p.label, p.start, p.last = label, p.prev, time.Time{}
		if p.start.IsZero() {
			p.start = now
		}
	}
	p.prev = now
	if done < total && !p.last.IsZero() && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	rate := "--"
	if d := now.Sub(p.start); d >= time.Millisecond {
		rate = progressSize(int64(float64(max(done, 0))/d.Seconds())) + "/s"
	}
	done = min(max(done, 0), total) // a total that was an estimate
	const width = 30
	n := int(done * width / total)
	bar := strings.Repeat("#", n) + strings.Repeat(" ", width-n)
	fmt.Fprintf(p.w, "\r\033[K%s [%s] %3d%% %s / %s, %s", label, bar, done*100/total, progressSize(done), progressSize(total), rate)
	p.drawn = true
}

// Write writes b to the bar's writer, erasing the bar first: lines said
// while a bar is drawn (warnings) get a line of their own, and the bar is
// drawn again below them at its next update.
func (p *progressBar) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
		p.last = time.Time{}
	}
	return p.w.Write(b)
}

// finish erases the bar (before a line of text, or at the end).
func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
	p.label = ""
}

func progressSize(n int64) string { return holders.SizeText(n) }

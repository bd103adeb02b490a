package fsnode

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// nameControl is the writable file of a --rw mount.
const nameControl = "control"

// Controller runs one command written to the control file, e.g.
// ["compact", "--dry-run"]. progress reports the current phase. It returns
// the report to show, and whether the store changed (the tree is then read
// again). It must reject unknown commands with an error before doing
// anything.
type Controller func(args []string, progress func(phase string)) (report string, changed bool, err error)

// controlState is the state shown by the control file.
type controlState struct {
	run Controller

	mu      sync.Mutex // guards the fields below
	running bool
	command string
	phase   string
	started time.Time
	last    string // result of the last finished run or rejected write
}

// ErrBusy: a control command is still running.
var errBusy = fmt.Errorf("a control command is already running")

// text renders what reading `control` shows.
func (c *controlState) text() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	if c.running {
		fmt.Fprintf(&b, "state: running\ncommand: %s\nphase: %s\nstarted: %s\n", c.command, c.phase, c.started.UTC().Format(time.RFC3339))
	} else {
		b.WriteString("state: idle\n")
	}
	b.WriteString("usage: write \"compact\" or \"compact --dry-run\" to this file\n")
	if c.last != "" {
		b.WriteString("\nlast result:\n")
		b.WriteString(c.last)
		if !strings.HasSuffix(c.last, "\n") {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// start parses a written line and starts the command in the background.
func (c *controlState) start(f *FS, line string) error {
	args := strings.Fields(line)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return errBusy
	}
	if !validControl(args) {
		c.last = fmt.Sprintf("rejected %q: write \"compact\" or \"compact --dry-run\"\n", strings.TrimSpace(line))
		return errInvalidControl
	}
	c.running, c.command, c.phase, c.started = true, strings.Join(args, " "), "starting", time.Now()
	go func() {
		report, changed, err := c.run(args, func(p string) {
			c.mu.Lock()
			c.phase = p
			c.mu.Unlock()
		})
		if changed {
			if _, rerr := f.Refresh(true); rerr != nil {
				report += "\nre-reading the store failed: " + rerr.Error()
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.running = false
		status := "done"
		if err != nil {
			status = "failed: " + err.Error()
		}
		c.last = fmt.Sprintf("command: %s\nstatus: %s\nfinished: %s\n%s", c.command, status, time.Now().UTC().Format(time.RFC3339), report)
	}()
	return nil
}

var errInvalidControl = fmt.Errorf("invalid control command")

func validControl(args []string) bool {
	switch {
	case len(args) == 1 && args[0] == "compact":
		return true
	case len(args) == 2 && args[0] == "compact" && args[1] == "--dry-run":
		return true
	}
	return false
}

// lookup makes the control file's inode.
func (c *controlState) lookup(ctx context.Context, parent *fs.Inode, f *FS, out *fuse.EntryOut) *fs.Inode {
	n := &controlFile{fsys: f, c: c}
	n.fill(&out.Attr)
	return parent.NewInode(ctx, n, fs.StableAttr{Mode: syscall.S_IFREG, Ino: inoControl})
}

// controlFile is `control`: reads show the state, writes start commands.
// Its content changes, so it is opened with direct I/O and never cached.
type controlFile struct {
	fs.Inode
	fsys *FS
	c    *controlState
}

func (n *controlFile) fill(a *fuse.Attr) {
	n.fsys.Snapshot().attr(a, syscall.S_IFREG|0o600, int64(len(n.c.text())))
}

var _ fs.NodeGetattrer = (*controlFile)(nil)

func (n *controlFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.fill(&out.Attr)
	out.SetTimeout(0)
	return 0
}

// Setattr accepts the truncation a shell's `>` asks for, nothing else.
var _ fs.NodeSetattrer = (*controlFile)(nil)

func (n *controlFile) Setattr(ctx context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if !n.fsys.m.owner(ctx) {
		return toErrno(nil, "", errNotOwner)
	}
	if _, ok := in.GetSize(); !ok || in.Valid&^(fuse.FATTR_SIZE|fuse.FATTR_FH|fuse.FATTR_LOCKOWNER|fuse.FATTR_ATIME|fuse.FATTR_MTIME|fuse.FATTR_ATIME_NOW|fuse.FATTR_MTIME_NOW|fuse.FATTR_CTIME) != 0 {
		return syscall.EPERM
	}
	n.fill(&out.Attr)
	return 0
}

var _ fs.NodeOpener = (*controlFile)(nil)

// Open lets only the mounting user (and root) in, as the file's mode 0600
// says: the mount does not use the kernel's default_permissions, so with
// --allow-other any user could otherwise start a compaction.
func (n *controlFile) Open(ctx context.Context, _ uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if !n.fsys.m.owner(ctx) {
		return nil, 0, toErrno(nil, "", errNotOwner)
	}
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

var _ fs.NodeReader = (*controlFile)(nil)

func (n *controlFile) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	b := n.c.text()
	if off >= int64(len(b)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(b[off:min(int64(len(b)), off+int64(len(dest)))]), 0
}

var _ fs.NodeWriter = (*controlFile)(nil)

// Write takes one command per write call (what `echo compact > control`
// does). A command the file does not know gets EINVAL and changes nothing;
// one written while another runs gets EBUSY.
func (n *controlFile) Write(_ context.Context, _ fs.FileHandle, data []byte, _ int64) (uint32, syscall.Errno) {
	if len(data) > 4096 {
		return 0, syscall.EINVAL
	}
	switch err := n.c.start(n.fsys, string(data)); err {
	case nil:
		return uint32(len(data)), 0
	case errBusy:
		return 0, syscall.EBUSY
	default:
		return 0, syscall.EINVAL
	}
}

var _ fs.NodeFlusher = (*controlFile)(nil)

func (n *controlFile) Flush(context.Context, fs.FileHandle) syscall.Errno { return 0 }

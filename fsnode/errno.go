package fsnode

import (
	"context"
	"errors"
	"io/fs"
	"log"
	"syscall"

	"github.com/kahafs/kahafs/codec"
)

// Errors the tree itself produces. They become errnos in toErrno only.
var (
	// errReadOnly: any call that would change the tree.
	errReadOnly = errors.New("read-only file system")
	// errNoEntry: a name that is not in a directory (a clean miss, not
	// logged).
	errNoEntry = errors.New("no such entry")
	// errNotOwner: a user other than the mounting one (or root) asks for
	// the control file of a --rw mount.
	errNotOwner = errors.New("only the mounting user may use the control file")
	// errChanged: a data file no longer holds what the snapshot saw (it was
	// replaced or truncated behind the mount's back): codec's, as
	// codec.RecordIn reports it.
	errChanged = codec.ErrChanged
)

// toErrno is the one place where errors become errnos. Expected outcomes
// (a miss, a write attempt) map silently; everything else is logged with
// the operation and mapped, unknown errors to EIO, never ENOSYS.
func toErrno(logger *log.Logger, op string, err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	switch {
	case errors.Is(err, errReadOnly):
		return syscall.EROFS
	case errors.Is(err, errNotOwner):
		return syscall.EACCES
	case errors.Is(err, errNoEntry), errors.Is(err, ErrBadName):
		return syscall.ENOENT
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, codec.ErrMissingFile), errors.Is(err, fs.ErrNotExist):
		// A data file deleted by the broker after the store was read.
		errno = syscall.ENOENT
	case errors.As(err, &errno) && errno != syscall.ENOSYS:
	default:
		errno = syscall.EIO
	}
	if logger != nil {
		logger.Printf("%s: %v (returning %s)", op, err, errnoName(errno))
	}
	return errno
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EIO:
		return "EIO"
	case syscall.EROFS:
		return "EROFS"
	}
	return e.Error()
}

package compact

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrLocked: a broker (or another kahafs) holds the store's lock.
var ErrLocked = errors.New("store is locked by a running broker")

// LockedError names the process that holds a store's lock.
type LockedError struct {
	Path string
	PID  int32
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is locked by process %d (is the broker still running? stop it first)", e.Path, e.PID)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// LockHolder reports the pid holding the broker's POSIX record lock on
// STORE/lock, or 0 when nobody holds it (or there is no lock file). The
// broker locks with fcntl (Java FileChannel.tryLock), which flock(2) does
// not see.
func LockHolder(dir string) (int32, error) {
	p := filepath.Join(dir, "lock")
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lock file: %w", err)
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("lock file %s: F_GETLK: %w", p, err)
	}
	if lk.Type == unix.F_UNLCK {
		return 0, nil
	}
	return lk.Pid, nil
}

// StoreLock is the broker's lock taken by kahafs, so that no broker starts
// on a store while it is rewritten.
type StoreLock struct {
	f *os.File
}

// AcquireLock takes the store's lock the way the broker does (fcntl write
// lock on STORE/lock). A held lock yields a *LockedError naming the pid.
// The lock file's content is not changed.
func AcquireLock(dir string) (*StoreLock, error) {
	p := filepath.Join(dir, "lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock file: %w", err)
	}
	n := st.Size()
	if n < 1 {
		n = 1
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: n}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			pid, _ := LockHolder(dir)
			return nil, &LockedError{Path: p, PID: pid}
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return &StoreLock{f: f}, nil
}

// Release drops the lock.
func (l *StoreLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// ShareLock is the lock of a dry run: a read lock on STORE/lock, taken
// through a descriptor opened read-only, so that a dry run needs no write
// access to the store. It still conflicts with a broker's (write) lock: a
// dry run is refused beside a running broker (*LockedError), and no broker
// starts while it reads. A store without a lock file gets no lock (there
// is nothing to open without creating it).
func ShareLock(dir string) (*StoreLock, error) {
	p := filepath.Join(dir, "lock")
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return &StoreLock{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock file: %w", err)
	}
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: 0, Len: max(st.Size(), 1)}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		f.Close()
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			pid, _ := LockHolder(dir)
			return nil, &LockedError{Path: p, PID: pid}
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return &StoreLock{f: f}, nil
}

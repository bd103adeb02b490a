package fsnode

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"
)

// The tree without a mount: what `kahafs ls`, `cat` and `find` print. A
// path is relative to the top of the tree, slash-separated, as it is below
// a mountpoint ("by-file/db-1.log/holders"); "", "." and "/" are the top.
// The listings and the bytes are the mount's: both come from the same
// tables and renders (table.go).

// Entry is a name of the tree as its directory lists it.
type Entry struct {
	Name string
	Dir  bool
	Ino  uint64 // the inode number the mount gives it
	// Link is the target of a symbolic link (by-file/db-N.log/acks-for/
	// and acked-by/), relative to its directory; "" for anything else.
	Link string
}

// ReadDir returns the entries of the directory at p in the order the
// mount lists them. A path that is not in the tree is an *fs.PathError
// matching fs.ErrNotExist; a file, one matching syscall.ENOTDIR.
func (s *Snapshot) ReadDir(p string) ([]Entry, error) {
	var out []Entry
	err := s.ListDir(p, func(e Entry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// ListDir calls fn with each entry of the directory at p, in the order
// the mount lists them, without holding the listing in memory; an error
// from fn stops the listing and is returned.
func (s *Snapshot) ListDir(p string, fn func(Entry) error) error {
	e, owner, clean, err := s.resolveFollow("ls", p, true)
	if err != nil {
		return err
	}
	if !e.isDir() {
		return &fs.PathError{Op: "ls", Path: clean, Err: syscall.ENOTDIR}
	}
	t, err := e.sub()
	if err != nil {
		return &fs.PathError{Op: "ls", Path: clean, Err: err}
	}
	in := e.in(owner)
	for i := 0; i < t.len(); i++ {
		c := t.at(i)
		if err := fn(Entry{Name: c.name, Dir: c.isDir(), Ino: in.ino(c.ino), Link: c.link}); err != nil {
			return err
		}
	}
	return nil
}

// Stat returns the entry at p (the top of the tree: Name "", Dir true).
func (s *Snapshot) Stat(p string) (Entry, error) {
	e, owner, clean, err := s.resolve("stat", p)
	if err != nil {
		return Entry{}, err
	}
	if e.kind == cmdEntry {
		if _, _, err := e.in(owner).command(e.loc, e.body); err != nil {
			return Entry{}, &fs.PathError{Op: "stat", Path: clean, Err: err}
		}
	}
	return Entry{Name: e.name, Dir: e.isDir(), Ino: owner.ino(e.ino), Link: e.link}, nil
}

// ReadFile returns the content of the file at p: the bytes a read of the
// mounted file returns. A directory is an *fs.PathError matching
// syscall.EISDIR; a symbolic link is followed.
func (s *Snapshot) ReadFile(p string) ([]byte, error) {
	e, owner, clean, err := s.resolveFollow("cat", p, true)
	if err != nil {
		return nil, err
	}
	b, err := e.in(owner).content(e)
	if err != nil {
		return nil, &fs.PathError{Op: "cat", Path: clean, Err: err}
	}
	return b, nil
}

// content renders the file e.
func (s *Snapshot) content(e entry) ([]byte, error) {
	switch e.kind {
	case textEntry:
		return e.text()
	case cmdEntry:
		f, re, err := s.command(e.loc, e.body)
		if err != nil {
			return nil, err
		}
		return f.renderAs(re, e.body)
	}
	return nil, syscall.EISDIR
}

// CleanPath is p as the tree's paths are written: relative to the top,
// no "." or ".." or empty components ("" is the top).
func CleanPath(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

// rootEntry is the top of the tree.
func (s *Snapshot) rootEntry() entry {
	return dirOf("", inoRoot, func() (dirTable, error) { return s.rootTable(), nil })
}

// in is the snapshot that serves e, listed by a directory of owner.
func (e *entry) in(owner *Snapshot) *Snapshot {
	if e.snap != nil {
		return e.snap
	}
	return owner
}

// resolve walks the tables from the top to the entry at p; it returns the
// entry, the snapshot of the directory that lists it (whose inode numbers
// its are: Snapshot.ino) and the cleaned path. A missing name is named
// with its directory. A symbolic link on the way is followed, one at the
// end is returned as it is.
func (s *Snapshot) resolve(op, p string) (entry, *Snapshot, string, error) {
	return s.resolveFollow(op, p, false)
}

// maxLinks is how many symbolic links a resolution follows (Linux's
// limit): past it, ELOOP.
const maxLinks = 40

// resolveFollow is resolve, following a symbolic link at the end of p
// too when follow. The path it returns is p cleaned (what the caller
// names), not where the links led.
func (s *Snapshot) resolveFollow(op, p string, follow bool) (entry, *Snapshot, string, error) {
	given := CleanPath(p)
	for range maxLinks {
		e, owner, clean, next, err := s.resolveOnce(op, p, follow)
		if err != nil || next == "" {
			if err == nil {
				clean = given
			}
			return e, owner, clean, err
		}
		p = next
	}
	return entry{}, nil, CleanPath(p), &fs.PathError{Op: op, Path: CleanPath(p), Err: syscall.ELOOP}
}

// resolveOnce resolves p up to the first symbolic link to follow, and
// returns the path that link leads to (next), or the entry at p.
func (s *Snapshot) resolveOnce(op, p string, follow bool) (_ entry, _ *Snapshot, _ string, next string, _ error) {
	e, owner, clean, err := s.resolveTo(op, p, func(dir string, l entry, rest []string) bool {
		if len(rest) == 0 && !follow {
			return false
		}
		next = path.Join(append([]string{dir, l.link}, rest...)...)
		return true
	})
	return e, owner, clean, next, err
}

// resolveTo walks the tables to the entry at p, stopping at a symbolic
// link when stop (given the directory of the link, the link and the
// names after it) says so.
func (s *Snapshot) resolveTo(op, p string, stop func(dir string, l entry, rest []string) bool) (entry, *Snapshot, string, error) {
	clean := CleanPath(p)
	e, owner := s.rootEntry(), s
	if clean == "" {
		return e, owner, clean, nil
	}
	dir := ""
	names := strings.Split(clean, "/")
	for i, name := range names {
		if !e.isDir() {
			return entry{}, nil, clean, &fs.PathError{Op: op, Path: clean, Err: fmt.Errorf("%w (%s is a file)", syscall.ENOTDIR, dir)}
		}
		t, err := e.sub()
		if err != nil {
			return entry{}, nil, clean, &fs.PathError{Op: op, Path: clean, Err: err}
		}
		owner = e.in(owner)
		next, ok := lookupEntry(t, name)
		if !ok {
			where := dir
			if where == "" {
				where = "the top of the tree"
			}
			return entry{}, nil, clean, &fs.PathError{Op: op, Path: clean, Err: fmt.Errorf("%w (%s has no %q)", syscall.ENOENT, where, name)}
		}
		if next.kind == linkEntry && stop(dir, next, names[i+1:]) {
			return next, owner, clean, nil
		}
		e, dir = next, path.Join(dir, name)
	}
	return e, owner, clean, nil
}

package fsnode

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/kahafs/kahafs/codec"
)

// storeAccess is who may read the store in dir, as its own files say: the
// owner and group of its data files (of the directory when it has none),
// and the read bits that every data file and the index grant AND that the
// directory lets through (a class that cannot search the directory cannot
// reach its files). The tree carries them, and the kernel enforces them
// (default_permissions): nobody reads through the tree what they could
// not read in the store.
func storeAccess(dir string) (uid, gid, read uint32, err error) {
	var dst syscall.Stat_t
	if err := syscall.Stat(dir, &dst); err != nil {
		return 0, 0, 0, err
	}
	uid, gid = dst.Uid, dst.Gid
	// the classes that can search the directory, as read bits
	read = (dst.Mode & 0o111) << 2
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	first := true
	for _, e := range ents {
		name := e.Name()
		if _, ok := codec.ParseDataFileName(name); !ok && name != "db.data" && name != "db.redo" {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(dir, name), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue
		}
		if first {
			uid, gid, first = st.Uid, st.Gid, false
		}
		read &= st.Mode & 0o444
	}
	if first {
		read &= dst.Mode & 0o444
	}
	return uid, gid, read, nil
}

// modes are the file and directory modes of a tree whose store grants the
// read bits read: files readable as the store's, directories readable and
// searchable by the same classes.
func modes(read uint32) (file, dir uint32) {
	return syscall.S_IFREG | read, syscall.S_IFDIR | read | read>>2
}

//go:build !linux

package replaycache

import "errors"

// statIdentity is not implemented here: without device, inode and ctime
// a file's identity is too weak to trust, so the cache is off.
func statIdentity(path string) (identity, error) {
	return identity{}, errors.New("file identities are not supported on this system")
}

const supported = false

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrokerDataDirectory: given a broker's data (or base) directory
// instead of its store, every command says where the store is.
func TestBrokerDataDirectory(t *testing.T) {
	src := brokertest.Named(t, "tx").StoreDir
	root := t.TempDir()
	place := func(rel string) {
		t.Helper()
		dst := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.Rename(brokertest.CopyStore(t, src), dst))
	}
	place("debian/data/kahadb")                                                      // the Debian package, the upstream activemq.xml
	place("embedded/localhost/KahaDB")                                               // an embedded BrokerService
	place("multi/mKahaDB/#210")                                                      // mKahaDB: the catch-all filter
	place("multi/mKahaDB/queue#3a#2f#2fORDERS")                                      // mKahaDB: one filter
	require.NoError(t, os.MkdirAll(filepath.Join(root, "empty/data/kahadb"), 0o755)) // a store never started: nothing to show
	var all strings.Builder
	for _, args := range [][]string{
		{"holders", "debian/data"},
		{"stats", "debian"},
		{"dump", "embedded"},
		{"compact", "--dry-run", "multi"},
		{"holders", "multi/mKahaDB"},
		{"stats", "empty/data"},
	} {
		args[len(args)-1] = filepath.Join(root, args[len(args)-1])
		out, stderr, code := runCLI(t, args...)
		assert.Equal(t, exitError, code, args)
		assert.Empty(t, out)
		all.WriteString("$ kahafs " + strings.Join(args, " ") + "\n" + stderr + "\n")
	}
	golden(t, "data-directory", all.String(), root, "ROOT")

	requireFUSE(t)
	_, stderr, code := runCLI(t, "mount", filepath.Join(root, "debian/data"), t.TempDir())
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "this looks like a broker data directory: the KahaDB store is at "+filepath.Join(root, "debian/data/kahadb"))
}

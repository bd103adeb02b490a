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

// TestBrokerDataDirectory: given a directory that holds a store further
// below than a layout of several stores has it (a broker's base
// directory, an embedded broker's data directory), every command says
// where the store is; a broker's data directory and an mKahaDB root are
// layouts that holders reads store by store.
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
		{"stats", "debian"},
		{"dump", "embedded"},
		{"stats", "empty/data"},
	} {
		args[len(args)-1] = filepath.Join(root, args[len(args)-1])
		out, stderr, code := runCLI(t, args...)
		assert.Equal(t, exitError, code, args)
		assert.Empty(t, out)
		all.WriteString("$ kahafs " + strings.Join(args, " ") + "\n" + stderr + "\n")
	}
	golden(t, "data-directory", all.String(), root, "ROOT")

	for dir, stores := range map[string][]string{
		"debian/data":   {"== kahadb (kahadb, kahadb)"},
		"multi/mKahaDB": {"== catch-all (#210, kahadb)", "== queue://ORDERS (queue#3a#2f#2fORDERS, kahadb)"},
	} {
		out, stderr, code := runCLI(t, "holders", "--no-cache", filepath.Join(root, dir))
		assert.Equal(t, exitOK, code, stderr)
		for _, h := range stores {
			assert.Contains(t, out, h+"\n", dir)
		}
	}

	requireFUSE(t)
	_, stderr, code := runCLI(t, "mount", filepath.Join(root, "debian"), t.TempDir())
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "this looks like a broker data directory: the KahaDB store is at "+filepath.Join(root, "debian/data/kahadb"))
}

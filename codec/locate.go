package codec

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Where a broker keeps its KahaDB store below its data directory
// (KAHADB-FORMAT §1.1, §1.3): the Debian package and the upstream
// activemq.xml use <data>/kahadb, an embedded BrokerService
// <data>/<brokerName>/KahaDB, the multi-store adapter <data>/mKahaDB/<name>
// (one store per filter).
var storeDirNames = []string{"kahadb", "KahaDB"}

// findStores lists the KahaDB stores below dir, a directory that is not a
// store itself (a broker's data or base directory, an mKahaDB root): its
// kahadb/ or KahaDB/, those one level further down (<brokerName>/KahaDB,
// data/kahadb from the broker's base), and the children of an mKahaDB
// directory (or of dir itself when it is one). Only directories that hold
// data files or an index count.
func findStores(dir string) []string {
	var found []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] && looksLikeStore(p) {
			seen[p] = true
			found = append(found, p)
		}
	}
	addMulti := func(root string) {
		ents, err := os.ReadDir(root)
		if err != nil {
			return
		}
		for _, e := range ents {
			if e.IsDir() {
				add(filepath.Join(root, e.Name()))
			}
		}
	}
	below := func(d string) {
		for _, n := range storeDirNames {
			add(filepath.Join(d, n))
		}
		addMulti(filepath.Join(d, "mKahaDB"))
	}
	below(dir)
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				below(filepath.Join(dir, e.Name()))
			}
		}
	}
	if filepath.Base(dir) == "mKahaDB" {
		addMulti(dir)
	}
	sort.Strings(found)
	return found
}

// looksLikeStore reports whether dir holds a db-N.log or a db.data.
func looksLikeStore(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, ok := ParseDataFileName(e.Name()); (ok && !e.IsDir()) || e.Name() == "db.data" {
			return true
		}
	}
	return false
}

// storesHint says where the stores below dir are, for the error of a
// directory that is not a store ("" when there are none).
func storesHint(dir string) string {
	found := findStores(dir)
	what := "a broker data directory"
	if filepath.Base(dir) == "mKahaDB" {
		what = "an mKahaDB directory (one store per filter)"
	}
	switch len(found) {
	case 0:
		return ""
	case 1:
		return "; this looks like " + what + ": the KahaDB store is at " + found[0]
	}
	return "; this looks like " + what + ": its KahaDB stores (kahafs reads one at a time) are at " + strings.Join(found, ", ")
}

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/kahafs/kahafs/codec"
)

// Layouts made of several stores (Locate):
//
//   - an mKahaDB root (MultiKahaDBPersistenceAdapter's directory, mKahaDB/
//     below a broker's data directory): one KahaDB store per destination
//     filter, named by the filter (nameFromDestinationFilter, decoded by
//     DecodeFilterName), the catch-all "#210", and txStore/, the journal of
//     the transactions that span stores (KindTxStore);
//   - a broker's data directory: its kahadb/ (or KahaDB/) store, the
//     stores of its mKahaDB/, and its scheduler/ (the job scheduler store,
//     not modelled: KindUnmodelled).
//
// The children of a layout are always stores (never layouts of their own):
// those of a data directory's mKahaDB/ are the data directory's children,
// their Rel saying where they are ("mKahaDB/queue#3a#2f#2fORDERS.#3e").

// Names a broker gives the stores below its data directory and its mKahaDB
// root.
const (
	mKahaDBDirName   = "mKahaDB"
	txStoreDirName   = "txStore"
	schedulerDirName = "scheduler"
	// catchAllName is nameFromDestinationFilter of the catch-all filter (a
	// filter without destination: AnyDestination, qualified name "!0").
	catchAllName = "#210"
)

// Multi reports whether l is a layout of several stores (an mKahaDB root,
// a broker's data directory) rather than one store.
func (l *Layout) Multi() bool { return l.Kind == KindMKahaDB || l.Kind == KindDataDir }

// Analysable reports whether l is one store kahafs analyses (KahaDB or
// txStore journal): not a layout, not an unmodelled store.
func (l *Layout) Analysable() bool {
	return l.Journal != nil && l.Unmodelled == "" && l.Kind != KindScheduler
}

// NotAnalysedText is what a command that reads KahaDB stores says of a
// child it does not (one that is not Analysable).
func (l *Layout) NotAnalysedText() string {
	if l.Kind == KindScheduler && l.Unmodelled == "" {
		return "not analysed here: a job scheduler store (holders and the tree's pinned/free answer it with the scheduler's own model)"
	}
	return "not analysed: " + l.Unmodelled
}

// KindName is l's kind as the JSON documents name it: "kahadb", "txstore",
// "scheduler", "mkahadb", "datadir".
func (l *Layout) KindName() string {
	if l.Kind == KindUnmodelled && l.UnmodelledKind != "" {
		return l.UnmodelledKind
	}
	return l.Kind.String()
}

// Title is how a child is named in a layout's tree and text output: its
// decoded filter ("queue://ORDERS.>"), "catch-all", or its directory's
// name.
func (l *Layout) Title() string {
	switch {
	case l.Name == catchAllName && l.Kind == KindKahaDB:
		return "catch-all"
	case l.Filter != "":
		return l.Filter
	}
	return l.Name
}

// SingleError is the error of a command that works on one store at a
// time, given a layout of several: it names the stores to give it one by
// one. Nil when l is one store.
func (l *Layout) SingleError(what string) error {
	if !l.Multi() {
		return nil
	}
	var paths []string
	for _, c := range l.Children {
		if c.Analysable() {
			paths = append(paths, c.Dir())
		}
	}
	n := fmt.Sprintf("%d stores", len(l.Children))
	if len(l.Children) == 1 {
		n = "1 store"
	}
	return fmt.Errorf("%s: %w: %s holds %s and %s works on one store at a time; give it each of: %s",
		l.Dir(), ErrLayout, l.describe(), n, what, strings.Join(paths, ", "))
}

// ErrLayout: a command that works on one store was given a layout of
// several.
var ErrLayout = errors.New("a layout of several stores")

func (l *Layout) describe() string {
	if l.Kind == KindMKahaDB {
		return "this mKahaDB directory"
	}
	return "this broker data directory"
}

// locateLayout recognises the layout of several stores at dir, nil when
// dir is none.
func locateLayout(dir string) (*Layout, error) {
	if children, ok, err := dataDirChildren(dir); err != nil {
		return nil, err
	} else if ok {
		return &Layout{Kind: KindDataDir, Path: dir, Children: children}, nil
	}
	children, ok, err := mKahaDBChildren(dir, "")
	if err != nil || !ok {
		return nil, err
	}
	return &Layout{Kind: KindMKahaDB, Path: dir, Children: children}, nil
}

// dataDirChildren lists the stores of a broker's data directory: kahadb/
// (or KahaDB/), the stores of mKahaDB/, scheduler/. ok is false when dir
// holds none of them.
func dataDirChildren(dir string) (children []*Layout, ok bool, err error) {
	for _, name := range []string{"kahadb", "KahaDB"} {
		st, err := codec.OpenStore(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		children = append(children, &Layout{Kind: KindKahaDB, Journal: st, Name: name, Rel: name, Path: st.Dir})
		break
	}
	if isDir(filepath.Join(dir, mKahaDBDirName)) {
		mc, isRoot, err := mKahaDBChildren(filepath.Join(dir, mKahaDBDirName), mKahaDBDirName)
		if err != nil {
			return nil, false, err
		}
		if isRoot {
			children = append(children, mc...)
		}
	}
	if sched := filepath.Join(dir, schedulerDirName); isSchedulerStore(sched) {
		children = append(children, schedulerChild(sched, schedulerDirName))
	}
	return children, len(children) > 0, nil
}

// schedulerChild is the child Layout of a job scheduler store
// (KindScheduler): the KahaDB stores' replay does not model it; package
// scheduler does, on its own (Analyse says so of it in a layout).
func schedulerChild(dir, rel string) *Layout {
	l := &Layout{Kind: KindScheduler, Name: filepath.Base(dir), Rel: rel, Path: dir}
	if st, err := codec.OpenStore(dir); err == nil {
		l.Journal = st
	} else {
		l.Kind, l.UnmodelledKind, l.Unmodelled = KindUnmodelled, "scheduler", "job scheduler store: "+err.Error()
	}
	return l
}

// isSchedulerStore reports whether dir is a job scheduler store
// (JobSchedulerStoreImpl: scheduleDB.data and db-N.log files).
func isSchedulerStore(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "scheduleDB.") {
			return true
		}
	}
	return false
}

// mKahaDBChildren lists the stores of the mKahaDB root dir (rel: its path
// relative to the layout's root, "" when it is the root). ok says whether
// dir is one: named mKahaDB, or holding a txStore/ or a store whose name is
// an escaped destination filter.
func mKahaDBChildren(dir, rel string) (children []*Layout, ok bool, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, fmt.Errorf("store %s: %w", dir, err)
	}
	filterNamed := false
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		name := e.Name()
		p := filepath.Join(dir, name)
		if isSchedulerStore(p) {
			continue
		}
		st, err := codec.OpenStore(p)
		if err != nil {
			continue
		}
		c := &Layout{Kind: KindKahaDB, Journal: st, Name: name, Rel: filepath.Join(rel, name), Path: p}
		if name == txStoreDirName {
			c.Kind = KindTxStore
			filterNamed = true
		} else {
			c.Filter = DecodeFilterName(name)
			if name == catchAllName || strings.Contains(name, "#3a#2f#2f") {
				filterNamed = true
			}
		}
		children = append(children, c)
	}
	if len(children) == 0 || !(filterNamed || filepath.Base(dir) == mKahaDBDirName) {
		return nil, false, nil
	}
	sort.Slice(children, func(i, j int) bool { return children[i].Name < children[j].Name })
	return children, true, nil
}

// MKahaDBRoot is the mKahaDB root the store in dir is a child of ("" when
// it is none): a broker running on it locks the root's lock file, not the
// store's.
func MKahaDBRoot(dir string) string {
	clean := filepath.Clean(dir)
	parent := filepath.Dir(clean)
	if parent == clean {
		return ""
	}
	children, ok, err := mKahaDBChildren(parent, "")
	if err != nil || !ok {
		return ""
	}
	for _, c := range children {
		if c.Name == filepath.Base(clean) {
			return parent
		}
	}
	return ""
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// DecodeFilterName is the destination filter an mKahaDB store's directory
// is named after, undoing IOHelper.toFileSystemSafeName: every character
// other than a-z A-Z 0-9 _ - . # was written '#' and its UTF-16 code in
// lower-case hex, at least two digits ("queue#3a#2f#2fORDERS.#3e" is
// "queue://ORDERS.>", "#210" is "!0", the catch-all's name). The escaping
// is not reversible in every case: '#' is kept as it is, a code of more
// than two digits has no end marker, and names longer than 64 characters
// were cut at the front. The decoding takes a surrogate pair as one
// character, else two digits when they make a character the broker
// escapes, else up to four; the directory's own name is the one to trust.
func DecodeFilterName(name string) string {
	var units []uint16
	for i := 0; i < len(name); {
		c := name[i]
		if c == '#' {
			if hi, lo, ok := surrogatePair(name[i:]); ok {
				units = append(units, hi, lo)
				i += 10
				continue
			}
			if r, n := decodeEscape(name[i+1:]); n > 0 {
				units = append(units, r)
				i += 1 + n
				continue
			}
		}
		units = append(units, uint16(c))
		i++
	}
	return string(utf16.Decode(units))
}

// decodeEscape decodes the hex digits after a '#': the code and how many
// digits it took (0: none).
func decodeEscape(s string) (uint16, int) {
	hexLen := 0
	for hexLen < len(s) && hexLen < 4 && isHex(s[hexLen]) {
		hexLen++
	}
	if hexLen < 2 {
		return 0, 0
	}
	v, _ := strconv.ParseUint(s[:2], 16, 16)
	if !keptAsIs(rune(v)) {
		return uint16(v), 2
	}
	// Not a character the broker escapes: the code is longer.
	for n := hexLen; n > 2; n-- {
		v, _ := strconv.ParseUint(s[:n], 16, 16)
		if v >= 1<<(4*(n-1)) {
			return uint16(v), n
		}
	}
	return 0, 0
}

// surrogatePair decodes "#d83d#de00" at the start of s: a character
// beyond U+FFFF, escaped as its two UTF-16 units.
func surrogatePair(s string) (hi, lo uint16, ok bool) {
	if len(s) < 10 || s[5] != '#' {
		return 0, 0, false
	}
	h, err1 := strconv.ParseUint(s[1:5], 16, 16)
	l, err2 := strconv.ParseUint(s[6:10], 16, 16)
	if err1 != nil || err2 != nil || h < 0xd800 || h > 0xdbff || l < 0xdc00 || l > 0xdfff {
		return 0, 0, false
	}
	return uint16(h), uint16(l), true
}

// keptAsIs reports whether toFileSystemSafeName keeps r as it is.
func keptAsIs(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '_' || r == '-' || r == '.' || r == '#'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

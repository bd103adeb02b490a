package kahaindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
)

// Page layout. Part of the wire format (disk/page/Page.java).
const (
	pageHeaderSize = 21 // byte type, int64 txId, int64 next, int32 checksum
	pageFree       = 0  // Page.PAGE_FREE_TYPE
	pagePart       = 1  // Page.PAGE_PART_TYPE: full payload, continues at next
	pageEnd        = 2  // Page.PAGE_END_TYPE: next holds the end offset
	// redo file (db.redo): header then records of int64 page id + page.
	redoHeaderSize = 4096 // PageFile.RECOVERY_FILE_HEADER_SIZE
	// maxWriteOffset: the broker cannot write the redo file's pages past
	// this offset of db.data (ext4's 16 TiB file size limit).
	maxWriteOffset = 1 << 44
)

// source is one file of the page file: db.data, db.redo or db.free.
type source struct {
	name string
	r    io.ReaderAt // nil: the file does not exist
	size int64
}

func (s source) exists() bool { return s.r != nil }

// readFull reads len(b) bytes at off; a short file is io.ErrUnexpectedEOF.
func (s source) readFull(b []byte, off int64) error {
	if off < 0 || off+int64(len(b)) > s.size {
		return io.ErrUnexpectedEOF
	}
	n, err := s.r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// RedoOutcome says what PageFile.load did with db.redo.
type RedoOutcome int

const (
	// RedoNotNeeded: the page file was shut down cleanly; the broker does
	// not look at db.redo.
	RedoNotNeeded RedoOutcome = iota
	// RedoApplied: unclean shutdown; db.redo held a complete batch whose
	// Adler-32 matched, and its pages were written over db.data's.
	RedoApplied
	// RedoIncomplete: unclean shutdown; the batch in db.redo is shorter
	// than its page count says (a crash while writing it). Not applied:
	// db.data still holds the previous, consistent pages.
	RedoIncomplete
	// RedoChecksum: unclean shutdown; the batch's Adler-32 does not match.
	// Not applied.
	RedoChecksum
)

func (o RedoOutcome) String() string {
	switch o {
	case RedoNotNeeded:
		return "not-needed"
	case RedoApplied:
		return "applied"
	case RedoIncomplete:
		return "incomplete"
	case RedoChecksum:
		return "checksum-mismatch"
	}
	return fmt.Sprintf("RedoOutcome(%d)", int(o))
}

// PageFile is what PageFile.load learns before MessageDatabase reads the
// index: the header the broker chose, what became of the redo file, the
// page count and the free list.
type PageFile struct {
	PageSize int
	// PageCount: pages the broker counts, (length - 4096) / PageSize of
	// db.data after the redo file's pages were written.
	PageCount     int64
	CleanShutdown bool
	LastTxID      int64
	FreePages     int64 // header property freePages (-1 for a new file)
	MetaDataTxID  int64
	// HeaderCopy: which of the two 2 KiB header copies the broker used
	// (1 or 2; 0 for an empty db.data).
	HeaderCopy int
	Redo       RedoOutcome
	// RedoPages: pages in the redo batch (when it was read whole).
	RedoPages int
	// RedoNextTxID: the transaction id stored in the redo header; the
	// broker's next page transaction id after an unclean shutdown.
	RedoNextTxID int64
	// FreeList: db.free, loaded after a clean shutdown with free pages.
	FreeList []Range
}

// patch is one page write of the redo file applied over db.data.
type patch struct {
	off int64 // offset in db.data (4096 + id*pageSize, as the broker computes it)
	src int64 // offset of the page bytes in db.redo
}

// pageFile is the broker's view of db.data: the file, the redo file's
// writes over it, and the file length the broker then sees. It never
// writes anything.
type pageFile struct {
	data, redo source
	info       PageFile
	pageSize   int
	length     int64 // db.data's length after recovery (at least 4096)
	patches    []patch
	aligned    map[int64]int // patch offset -> index of the last patch there
	unaligned  bool          // some patch offset is not page aligned
	read       int64         // bytes of pages read so far
	budget     int64         // bytes of pages allowed
	cache      pageCache
	shape      shape
	spare      *stream // a released stream (its page buffer is reused)
	// ahead holds leaves read ahead of their loads (readahead.go; nil:
	// every page is read when loaded)
	ahead *readAhead
	// used: the pages streams loaded (freelist.go)
	used usedPages
}

// objectKind is the kind of object the broker's page cache holds for a page
// it decoded (Transaction.load with a marshaller caches the page with its
// object; later loads of the page return that object, whatever marshaller
// asks).
type objectKind int

const (
	kindMetadata      objectKind = iota + 1
	kindStats                    // MessageStoreStatistics
	kindDestinations             // BTreeNode String -> StoredDestination
	kindOrder                    // BTreeNode Long -> MessageKeys
	kindLocations                // BTreeNode Location -> Long
	kindMessageIDs               // BTreeNode String -> Long
	kindSubscriptions            // BTreeNode String -> KahaSubscriptionCommand
	kindLastAcks                 // BTreeNode String -> LastAck
	kindAckPositions             // ListNode String -> SequenceSet
	kindSubLocations             // ListNode String -> Location
	// a job scheduler store's index (scheduler.go): B-tree nodes
	kindSchedulers    // BTreeNode String -> JobSchedulerImpl
	kindJobs          // BTreeNode Long -> List<JobLocation>
	kindJournalRC     // BTreeNode Integer -> Integer
	kindRemoveTracker // BTreeNode Integer -> List<Integer>
)

var kindNames = map[objectKind]string{kindMetadata: "the metadata", kindStats: "statistics",
	kindDestinations: "a destinations B-tree node", kindOrder: "an order index node", kindLocations: "a location index node",
	kindMessageIDs: "a message-id index node", kindSubscriptions: "a subscriptions B-tree node",
	kindLastAcks: "a subscription-acks B-tree node", kindAckPositions: "an ack-positions list node",
	kindSubLocations: "a subscription-locations list node", kindSchedulers: "a schedulers B-tree node",
	kindJobs: "a scheduler's jobs B-tree node", kindJournalRC: "a journalRC B-tree node",
	kindRemoveTracker: "a remove tracker B-tree node"}

// class is the Java class of the cached object.
func (k objectKind) class() int {
	switch {
	case k >= kindDestinations && k <= kindLastAcks, k >= kindSchedulers:
		return 1 // BTreeNode
	case k >= kindAckPositions:
		return 2 // ListNode
	}
	return -int(k)
}

type cacheEntry struct {
	kind objectKind
	// empty: no key, value or statistics to cast; initialized: the broker
	// made it in memory (a free root page, null statistics).
	empty, initialized bool
}

// claim checks that page id can be read as kind: the broker's page cache
// returns whatever object it holds for the page, and using an object of
// another kind fails (ClassCastException, NullPointerException). Empty
// nodes of the same class are harmless.
func (pf *pageFile) claim(id int64, kind objectKind, what string) error {
	e, ok := pf.cache.get(id)
	if !ok || e.kind == kind || e.kind.class() == kind.class() && e.empty {
		return nil
	}
	return pf.pageErr(id, pf.toOffset(id), what, ErrInconsistent,
		fmt.Sprintf("page %d was already read as %s (the broker's page cache would hand that object out)", id, kindNames[e.kind]), false)
}

// cacheAs records what the broker's cache holds for page id once it has
// been decoded (or made) as kind; the first object stays.
func (pf *pageFile) cacheAs(id int64, kind objectKind, empty, initialized bool) {
	if _, ok := pf.cache.get(id); !ok {
		pf.cache.put(id, cacheEntry{kind, empty, initialized})
	}
}

// pageCache is what the broker's page cache holds, by page id: in an
// array for the pages of the file (a look-up per page read, without a
// map's hashing), in a map for any other id (a page made in memory).
type pageCache struct {
	pages []cacheEntry // kind 0: nothing cached
	other map[int64]cacheEntry
}

func (c *pageCache) get(id int64) (cacheEntry, bool) {
	if uint64(id) < uint64(len(c.pages)) {
		e := c.pages[id]
		return e, e.kind != 0
	}
	e, ok := c.other[id]
	return e, ok
}

func (c *pageCache) put(id int64, e cacheEntry) {
	if uint64(id) < uint64(len(c.pages)) {
		c.pages[id] = e
		return
	}
	if c.other == nil {
		c.other = map[int64]cacheEntry{}
	}
	c.other[id] = e
}

// shape counts what the structures read looked like (for tests that check
// a store exercises what it should).
type shape struct {
	multiPage map[string]int // structure -> streams that spanned several pages
	branches  map[string]int // structure -> branch nodes read
}

func (s *shape) add(m *map[string]int, what string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[what]++
}

// openPageFile does what PageFile.load does before any index is read:
// header, redo recovery (unclean shutdown only), free list (clean shutdown
// with free pages only), page count. fresh is true when the broker finds
// no page at all and starts a new index.
func openPageFile(data, redo, free source) (pf *pageFile, fresh bool, err error) {
	pf = &pageFile{data: data, redo: redo, aligned: map[int64]int{}}
	if !data.exists() || data.size == 0 {
		// The broker creates the file with a fresh header and a new index.
		pf.info = PageFile{PageSize: 4096, CleanShutdown: true, FreePages: -1, Redo: RedoNotNeeded}
		pf.pageSize = 4096
		pf.length = fileHeaderSize
		return pf, true, nil
	}
	h, copyNo, err := pf.chooseHeader()
	if err != nil {
		return nil, false, err
	}
	pf.info = PageFile{PageSize: int(h.pageSize), CleanShutdown: h.cleanShutdown, LastTxID: h.lastTxID,
		FreePages: h.freePages, MetaDataTxID: h.metaDataTxID, HeaderCopy: copyNo}
	if h.pageSize <= pageHeaderSize {
		return nil, false, pf.headerErr(int64(copyNo-1)*headerCopySize,
			fmt.Sprintf("page size %d (the broker cannot read pages of that size)", h.pageSize))
	}
	pf.pageSize = int(h.pageSize)
	pf.length = data.size
	if h.cleanShutdown {
		pf.info.Redo = RedoNotNeeded
		if h.freePages > 0 {
			if pf.info.FreeList, err = readFreeList(free); err != nil {
				return nil, false, err
			}
		}
	} else if err := pf.recoverRedo(); err != nil {
		return nil, false, err
	}
	if pf.length < fileHeaderSize {
		// PageFile.load extends it with RecoverableRandomAccessFile.setLength,
		// which in 5.17.2 always throws IllegalStateException.
		return nil, false, pf.headerErr(0, fmt.Sprintf("file is %d bytes, shorter than its %d-byte header (the broker cannot extend it)",
			pf.length, fileHeaderSize))
	}
	pf.info.PageCount = (pf.length - fileHeaderSize) / int64(pf.pageSize)
	// the pages db.data holds (a redo batch can claim pages far past it)
	pf.cache.pages = make([]cacheEntry, max(min(pf.info.PageCount, (data.size-fileHeaderSize)/int64(pf.pageSize)), 0))
	// A sound index reads 1.1 to 1.5 times its size (every page once,
	// the B-tree descents of lookups and last entries again; free pages
	// not at all); allow far more than that, and no more: what Read
	// returns grows with what it reads.
	stored := data.size + int64(len(pf.patches))*int64(pf.pageSize)
	pf.budget = 16*stored + 1<<22
	return pf, pf.info.PageCount == 0, nil
}

func (pf *pageFile) headerErr(off int64, detail string) error {
	return &CorruptionError{File: pf.data.name, Page: -1, Offset: off, Structure: "header",
		Err: ErrHeader, Detail: detail, AtLoad: true}
}

// chooseHeader is PageFile.loadMetaData: both copies are read; the first
// is used unless it is missing or has no metaDataTxId, or the two
// metaDataTxIds differ (then the second one was written last).
func (pf *pageFile) chooseHeader() (header, int, error) {
	var copies [2]*header
	for i := range copies {
		b := make([]byte, headerCopySize)
		if err := pf.data.readFull(b, int64(i)*headerCopySize); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				continue // readFully fails: this copy is null
			}
			return header{}, 0, fmt.Errorf("kahaindex: %s: %w", pf.data.name, err)
		}
		h, err := parseHeader(b)
		if err != nil {
			return header{}, 0, pf.headerErr(int64(i)*headerCopySize, err.Error())
		}
		copies[i] = &h
	}
	v1, v2 := copies[0], copies[1]
	switch {
	case v1 == nil && v2 == nil:
		return header{}, 0, pf.headerErr(0, fmt.Sprintf("file is %d bytes, shorter than one header copy", pf.data.size))
	case v1 == nil || v1.metaDataTxID < 0:
		if v2 == nil {
			return header{}, 0, pf.headerErr(0, "first copy has no metaDataTxId and there is no second copy")
		}
		return *v2, 2, nil
	case v2 == nil || v1.metaDataTxID == v2.metaDataTxID:
		return *v1, 1, nil
	}
	return *v2, 2, nil
}

// recoverRedo is PageFile.redoRecoveryUpdates: the last batch of page
// writes, applied only when it was written whole and its Adler-32 matches.
func (pf *pageFile) recoverRedo() error {
	r := pf.redo
	if !r.exists() || r.size == 0 {
		// The broker initialises an empty redo file with
		// RecoverableRandomAccessFile.setLength, which in 5.17.2 always
		// throws IllegalStateException.
		return &CorruptionError{File: r.name, Page: -1, Offset: 0, Structure: "redo file", Err: ErrRedo,
			Detail: "unclean shutdown and no redo file (the broker cannot create one)", AtLoad: true}
	}
	var hdr [20]byte
	if err := r.readFull(hdr[:], 0); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return &CorruptionError{File: r.name, Page: -1, Offset: 0, Structure: "redo header", Err: ErrRedo,
				Detail: fmt.Sprintf("file is %d bytes, shorter than its 20-byte header", r.size), AtLoad: true, eof: true}
		}
		return fmt.Errorf("kahaindex: %s: %w", r.name, err)
	}
	pf.info.RedoNextTxID = int64(binary.BigEndian.Uint64(hdr[0:8]))
	want := binary.BigEndian.Uint64(hdr[8:16])
	count := int32(binary.BigEndian.Uint32(hdr[16:20]))
	rec := int64(8 + pf.pageSize)
	sum := adler32.New()
	type write struct {
		id  int64
		src int64
	}
	var batch []write
	pos := map[int64]int{} // LinkedHashMap: first insertion keeps its place, last value wins
	buf := make([]byte, min(int64(pf.pageSize), max(r.size-redoHeaderSize, 0)))
	for i := int32(0); i < count; i++ {
		off := redoHeaderSize + int64(i)*rec
		if off+rec > r.size {
			pf.info.Redo = RedoIncomplete
			return nil
		}
		var idb [8]byte
		if err := r.readFull(idb[:], off); err != nil {
			return fmt.Errorf("kahaindex: %s: %w", r.name, err)
		}
		if err := r.readFull(buf, off+8); err != nil {
			return fmt.Errorf("kahaindex: %s: %w", r.name, err)
		}
		sum.Write(buf)
		id := int64(binary.BigEndian.Uint64(idb[:]))
		if j, ok := pos[id]; ok {
			batch[j].src = off + 8
		} else {
			pos[id] = len(batch)
			batch = append(batch, write{id, off + 8})
		}
	}
	pf.info.RedoPages = max(int(count), 0)
	if uint64(sum.Sum32()) != want {
		pf.info.Redo = RedoChecksum
		return nil
	}
	for _, w := range batch {
		off := fileHeaderSize + w.id*int64(pf.pageSize) // wraps as Java's long does
		if off < 0 || off > maxWriteOffset {
			return &CorruptionError{File: r.name, Page: -1, Offset: w.src - 8, Structure: "redo batch", Err: ErrRedo,
				Detail: fmt.Sprintf("page %d would be written at offset %d of db.data", w.id, off), AtLoad: true}
		}
		if (off-fileHeaderSize)%int64(pf.pageSize) != 0 {
			pf.unaligned = true
		}
		pf.aligned[off] = len(pf.patches)
		pf.patches = append(pf.patches, patch{off: off, src: w.src})
		pf.length = max(pf.length, off+int64(pf.pageSize))
	}
	pf.info.Redo = RedoApplied
	return nil
}

// readFreeList is PageFile.loadFreeList: db.free holds a SequenceSet.
func readFreeList(free source) ([]Range, error) {
	if !free.exists() {
		return nil, &CorruptionError{File: free.name, Page: -1, Structure: "free list", Err: ErrFreeList,
			Detail: "the header says the page file has free pages but db.free is missing", AtLoad: true}
	}
	in := &byteInput{src: free}
	set, err := readSequenceSet(in)
	if err != nil {
		return nil, &CorruptionError{File: free.name, Page: -1, Offset: in.off, Structure: "free list",
			Err: ErrFreeList, Detail: err.Error(), AtLoad: true}
	}
	return set, nil
}

// toOffset is PageFile.toOffset (with Java's long overflow).
func (pf *pageFile) toOffset(id int64) int64 { return fileHeaderSize + id*int64(pf.pageSize) }

// readAt fills b from the broker's view of db.data at off: the file (zeros
// past its end up to the recovered length) with the redo writes over it.
func (pf *pageFile) readAt(b []byte, off int64) error {
	if off < 0 || off+int64(len(b)) > pf.length || off+int64(len(b)) < off {
		return io.ErrUnexpectedEOF
	}
	// the file's bytes, zeros past its end (b is cleared only there: a
	// page of the file is read over whatever b held)
	n := max(min(int64(len(b)), pf.data.size-off), 0)
	if n > 0 && (n < int64(len(b)) || !pf.ahead.take(off, b)) {
		if err := pf.data.readFull(b[:n], off); err != nil {
			return err
		}
	}
	clear(b[n:])
	if len(pf.patches) == 0 {
		return nil
	}
	if !pf.unaligned && (off-fileHeaderSize)%int64(pf.pageSize) == 0 && len(b) <= pf.pageSize {
		if i, ok := pf.aligned[off]; ok {
			return pf.redo.readFull(b, pf.patches[i].src)
		}
		return nil
	}
	for _, p := range pf.patches { // in the order the broker wrote them
		lo, hi := max(off, p.off), min(off+int64(len(b)), p.off+int64(pf.pageSize))
		if lo >= hi {
			continue
		}
		if err := pf.redo.readFull(b[lo-off:hi-off], p.src+(lo-p.off)); err != nil {
			return err
		}
	}
	return nil
}

// readPage reads page id whole (PageFile.readPage) into b (pageSize bytes).
// Errors are ErrPageID (negative id, past the end) or I/O errors.
func (pf *pageFile) readPage(id int64, b []byte, what string) error {
	if err := pf.count(id, int64(pf.pageSize), what); err != nil {
		return err
	}
	if err := pf.checkPage(id, int64(pf.pageSize), what); err != nil {
		return err
	}
	if err := pf.readAt(b, pf.toOffset(id)); err != nil {
		return fmt.Errorf("kahaindex: %s: page %d: %w", pf.data.name, id, err)
	}
	return nil
}

// checkPage reports whether the first n bytes of page id can be read.
func (pf *pageFile) checkPage(id, n int64, what string) error {
	off := pf.toOffset(id)
	if id < 0 || off < 0 {
		// Transaction.load refuses a negative id, and a seek to a negative
		// offset fails: IOExceptions, not EOFExceptions.
		return pf.pageErr(id, off, what, ErrPageID, "negative page id or offset", false)
	}
	if off+n > pf.length || off+n < off {
		return pf.pageErr(id, off, what, ErrPageID,
			fmt.Sprintf("page is past the end of the file (%d pages)", pf.info.PageCount), true)
	}
	return nil
}

// pageType reads just the header of page id, as Transaction.load(id, null)
// does before an index is used: the page must exist (21 bytes of it).
func (pf *pageFile) pageType(id int64, what string) (byte, error) {
	if err := pf.count(id, pageHeaderSize, what); err != nil {
		return 0, err
	}
	if err := pf.checkPage(id, pageHeaderSize, what); err != nil {
		return 0, err
	}
	if _, ok := pf.cache.get(id); ok {
		return pageEnd, nil // the cached page, never a free one
	}
	var h [pageHeaderSize]byte
	if err := pf.readAt(h[:], pf.toOffset(id)); err != nil {
		return 0, fmt.Errorf("kahaindex: %s: page %d: %w", pf.data.name, id, err)
	}
	return h[0], nil
}

// count charges n bytes of page reads to the budget.
func (pf *pageFile) count(id, n int64, what string) error {
	pf.read += n
	if pf.read > pf.budget {
		return pf.pageErr(id, pf.toOffset(id), what, ErrBudget,
			fmt.Sprintf("more than %d bytes of page reads for a %d-byte file", pf.budget, pf.data.size), false)
	}
	return nil
}

func (pf *pageFile) pageErr(id, off int64, what string, sentinel error, detail string, eof bool) error {
	return &CorruptionError{File: pf.data.name, Page: id, Offset: off, Structure: what, Err: sentinel,
		Detail: detail, eof: eof}
}

// filePages is how many pages db.data holds (at most the broker's page
// count): the pages a walk's cycle guard keeps in a bitmap (pageSet), so
// that its size follows the file, not a length the header claims.
func (pf *pageFile) filePages() int64 { return int64(len(pf.cache.pages)) }

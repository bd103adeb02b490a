package codec

import "sync"

// Visitor receives a store's commands in journal (replay) order.
type Visitor interface {
	// Command is called for every record that decodes, in journal order.
	// rec and c are only valid during the call: copy what must be kept.
	Command(rec Record, c *Command) error
	// FileDone is called after the last command of each data file, with
	// what reading it found (damage included).
	FileDone(sum *FileSummary) error
}

type framedFile struct {
	df      *DataFile
	records []Record
	sum     FileSummary
}

// ReadStore reads every data file of s and hands the decoded commands to v
// in journal order. Framing and checksum verification run on up to workers
// files in parallel; decoding and the visitor run sequentially. At most
// 2×workers files are mapped at a time and only record locations are kept
// per file, so memory does not grow with the store.
func ReadStore(s *Store, opts ReadOptions, workers int, v Visitor) error {
	return ReadFiles(s.Files, opts, workers, v)
}

// dropChunk: while a file is read, the pages behind the read position are
// released every dropChunk bytes (see DataFile.DropPages).
const dropChunk = 4 << 20

// recordSlices recycles the per-file record lists between files, so that
// a store of many files does not regrow one per file.
var recordSlices = sync.Pool{New: func() any { return new([]Record) }}

// ReadFiles is ReadStore over a chosen list of files (in replay order).
func ReadFiles(files []FileInfo, opts ReadOptions, workers int, v Visitor) error {
	opts.Lenient = true
	return ScanOrdered(files, workers, func(fi FileInfo) (*framedFile, error) {
		ff := &framedFile{sum: FileSummary{Info: fi}}
		ff.records = (*recordSlices.Get().(*[]Record))[:0]
		df, err := fi.Open()
		if err != nil {
			if ce := unreadable(err); ce != nil {
				ff.sum.Damage = []*CorruptionError{ce}
				return ff, nil
			}
			return nil, err
		}
		ff.df = df
		ff.sum.Size, ff.sum.Allocated = df.Size, df.Allocated
		r := NewReader(df, opts)
		var dropped int64
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			ff.records = append(ff.records, rec)
			if off := int64(rec.Loc.Offset); off-dropped >= dropChunk {
				df.DropPages(dropped, off)
				dropped = off
			}
		}
		df.DropPages(dropped, df.Size)
		ff.sum.End = r.End()
		ff.sum.Records = r.Records()
		ff.sum.Batches, ff.sum.Checksummed = r.Batches()
		ff.sum.Damage = r.Damage()
		return ff, nil
	}, func(fi FileInfo, ff *framedFile) error {
		if ff.df == nil {
			return v.FileDone(&ff.sum)
		}
		defer ff.df.Close()
		var c Command
		var decodeDamage []*CorruptionError
		var dropped int64
		ff.df.Prefetch(0, dropChunk)
		for _, rec := range ff.records {
			if off := int64(rec.Loc.Offset); off-dropped >= dropChunk {
				ff.df.DropPages(dropped, off)
				ff.df.Prefetch(off, off+dropChunk)
				dropped = off
			}
			if err := DecodeRecord(fi.Path, rec, &c); err != nil {
				decodeDamage = append(decodeDamage, err.(*CorruptionError))
				continue
			}
			if err := v.Command(rec, &c); err != nil {
				return err
			}
		}
		ff.sum.Damage = mergeDamage(ff.sum.Damage, decodeDamage)
		if fi.ID != files[len(files)-1].ID {
			ff.sum.NotLast()
		}
		recs := ff.records[:0]
		ff.records = nil
		recordSlices.Put(&recs)
		return v.FileDone(&ff.sum)
	})
}

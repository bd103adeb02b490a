package codec

import (
	"errors"
	"strings"
)

// FileSummary is what reading one data file found besides its records.
type FileSummary struct {
	Info        FileInfo
	Size        int64 // apparent size
	Allocated   int64 // bytes on disk
	End         int64 // logical end of the data
	Records     int
	Batches     int
	Checksummed int
	Damage      []*CorruptionError // reader and decoder damage, in offset order
}

// NotLast turns a torn tail into damage: only the last data file of a
// store can end in an unfinished write (the broker appends to it alone);
// a torn end of an earlier file lost records the broker had written.
// Call it for every file but the store's last.
func (s *FileSummary) NotLast() {
	for i, d := range s.Damage {
		if errors.Is(d.Err, ErrTornTail) {
			c := *d
			c.Err = ErrTruncated
			// The torn tail's detail starts with its cause, which
			// becomes the error: said once.
			c.Detail = "torn batch at the end of a data file that is not the last one: " + strings.TrimPrefix(d.Detail, ErrTruncated.Error()+": ")
			s.Damage[i] = &c
		}
	}
}

// Clean reports whether nothing but a torn tail was found.
func (s *FileSummary) Clean() bool {
	for _, d := range s.Damage {
		if !IsTail(d) {
			return false
		}
	}
	return true
}

// ScanFile reads every record of one data file in lenient mode, decodes it
// into a reused Command and calls fn with it. Records that do not decode are
// reported in the summary's Damage and not passed to fn. The Record and
// Command are only valid during the call.
func ScanFile(fi FileInfo, opts ReadOptions, fn func(Record, *Command) error) (FileSummary, error) {
	opts.Lenient = true
	var c Command
	var decodeDamage []*CorruptionError
	var fnErr error
	get := func() (*chunk, bool) { return chunkPool.Get().(*chunk), true }
	put := func(ch *chunk) bool {
		defer ch.recycle()
		for _, rec := range ch.records {
			if derr := DecodeRecord(fi.Path, rec, &c); derr != nil {
				decodeDamage = append(decodeDamage, derr.(*CorruptionError))
				continue
			}
			if fn != nil {
				if fnErr = fn(rec, &c); fnErr != nil {
					return false
				}
			}
		}
		return true
	}
	sum, err := frameFile(fi, 0, opts, get, put)
	if fnErr != nil {
		return sum, fnErr
	}
	if err != nil {
		return sum, err
	}
	sum.Damage = mergeDamage(sum.Damage, decodeDamage)
	return sum, nil
}

// mergeDamage merges two offset-ordered lists.
func mergeDamage(a, b []*CorruptionError) []*CorruptionError {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]*CorruptionError, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Offset <= b[0].Offset {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// unreadable returns err as damage when it means one data file cannot be
// read (the rest of the store can), nil for other errors.
func unreadable(err error) *CorruptionError {
	var ce *CorruptionError
	if errors.As(err, &ce) && errors.Is(err, ErrUnreadable) {
		return ce
	}
	return nil
}

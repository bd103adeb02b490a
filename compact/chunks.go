package compact

// chunked is a list appended to, then read once from the start, whose
// chunks are freed as they are read: what a compaction keeps for a later
// phase (the records to read, the sums to check) gives its memory back
// while the next phase builds what it needs.
type chunked[T any] struct {
	size      int // of a chunk (0: chunkLen)
	chunks    [][]T
	n         int
	head, pos int // next: the chunk being read and the next element in it
}

// chunkLen is the length of a chunk.
const chunkLen = 1 << 14

func (c *chunked[T]) push(v T) {
	if c.size <= 0 {
		c.size = chunkLen
	}
	if k := len(c.chunks); k == 0 || len(c.chunks[k-1]) == c.size {
		c.chunks = append(c.chunks, make([]T, 0, c.size))
	}
	k := len(c.chunks) - 1
	c.chunks[k] = append(c.chunks[k], v)
	c.n++
}

// len is how many were pushed.
func (c *chunked[T]) len() int { return c.n }

// each calls fn with the chunks in order, each freed once fn returns;
// fn returning false stops.
func (c *chunked[T]) each(fn func(chunk []T) bool) {
	for k := range c.chunks {
		ok := fn(c.chunks[k])
		c.chunks[k] = nil
		if !ok {
			return
		}
	}
}

// next returns the first element not yet read (false past the end),
// freeing each chunk once it has been read.
func (c *chunked[T]) next() (T, bool) {
	for c.head < len(c.chunks) {
		if ch := c.chunks[c.head]; c.pos < len(ch) {
			c.pos++
			return ch[c.pos-1], true
		}
		c.chunks[c.head] = nil
		c.head, c.pos = c.head+1, 0
	}
	var zero T
	return zero, false
}

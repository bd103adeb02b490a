package main

import (
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/kahafs/kahafs/internal/brokertest"
	"github.com/stretchr/testify/assert"
)

// TestTextOutputEscapesNames: the text output of dump, stats and holders
// prints names from clients (destinations, subscription keys, message and
// transaction ids); none of it may reach the terminal raw: no control
// bytes (ESC starts terminal escape sequences, CR and LF forge lines) and
// no invisible or bidi-reordering characters.
func TestTextOutputEscapesNames(t *testing.T) {
	fx := brokertest.Named(t, "hostile")
	mfl := strconv.Itoa(fx.Expected.MaxFileLength)
	for _, args := range [][]string{
		{"dump", fx.StoreDir},
		{"stats", fx.StoreDir},
		{"holders", "--max-file-length", mfl, fx.StoreDir},
	} {
		out, stderr, code := runCLI(t, args...)
		assert.NotEqual(t, exitError, code, stderr)
		for i, line := range strings.Split(out, "\n") {
			for _, r := range line {
				if r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
					t.Errorf("kahafs %s: line %d holds %U: %q", args[0], i+1, r, line)
					break
				}
			}
		}
	}
}

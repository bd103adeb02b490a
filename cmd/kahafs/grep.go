package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kahafs/kahafs/treegrep"
	"github.com/spf13/cobra"
)

type grepFlags struct {
	treeFlags
	ignoreCase, fixed, extended bool
	list, count, json           bool
	profile                     profileFlags
}

// grepTrouble is an error of kahafs grep other than "no match": exit
// status 2, as grep's, so that a script tells it from status 1.
type grepTrouble struct{ err error }

func (e grepTrouble) Error() string { return e.err.Error() }
func (e grepTrouble) Unwrap() error { return e.err }

// errNoMatch: grep found nothing (exit status 1, no message, as grep).
var errNoMatch = errors.New("no file matches")

func newGrepCmd() *cobra.Command {
	var f grepFlags
	cmd := &cobra.Command{
		Use:   "grep [-i] [-F|-E] [-l|-c] [--json] PATTERN STORE [PATH]",
		Short: "Print the files of the tree whose content matches, without FUSE",
		Long: `grep prints the paths of the files below PATH (default: the whole tree)
of the tree that "kahafs mount STORE" serves whose content matches PATTERN:
what "grep -r -l PATTERN MOUNTPOINT/PATH" prints (less the mountpoint),
without FUSE, reading the journal once in order and matching on every core.
Paths are the tree's, as ls, cat and find write them, in tree order (the
order find lists them; find and grep -r visit a directory of more than
10,000 entries in inode order instead). Content is the mount's: a message's
JSON and its body (compressed bodies inflated), and every other file.

  -l (default)  one path a line, of the files that match
  -c            PATH:COUNT for every file below PATH, COUNT the lines that
                match (0 included), as grep -r -c
  --json        {"files":N,"matches":[{"path":...,"count":N},...]}: the
                files that match with their counts (with -c every file)

PATTERN is a basic regular expression, as grep's default (POSIX, with GNU's
\| \+ \?), translated to RE2; a pattern RE2 cannot match alike
(back-references, \< \>, \w and other GNU escapes, [= =], [. .]) is refused.
-E takes RE2 syntax (Go's regexp: like ERE, plus \b \w \d, no
back-references); -F a fixed string. A pattern of several lines matches
what any line of it matches. Lines are grep's: a last line without a
newline counts, and in a file with NUL bytes a NUL ends a line as well.

Exit status, as grep's: 0 a file matched, 1 none did (silently), 2 trouble:
a file could not be read (reported on stderr, the others searched), or the
pattern, the store or PATH was refused.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := withUsage(cobra.RangeArgs(2, 3))(cmd, args); err != nil {
				return grepTrouble{err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, both := range [][2]string{{"fixed-strings", "extended-regexp"}, {"files-with-matches", "count"}} {
				if cmd.Flags().Changed(both[0]) && cmd.Flags().Changed(both[1]) {
					return grepTrouble{&usageError{cmd: cmd, err: fmt.Errorf("--%s and --%s exclude each other", both[0], both[1])}}
				}
			}
			p := ""
			if len(args) == 3 {
				p = args[2]
			}
			err := f.profile.around(cmd, func() error { return runGrep(cmd, args[0], args[1], p, f) })
			if err != nil && !errors.Is(err, errNoMatch) && !errors.Is(err, errDamaged) {
				// grep's status for trouble: 2, not 1 ("no match")
				return grepTrouble{err}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.ignoreCase, "ignore-case", "i", false, "match upper and lower case alike")
	fl.BoolVarP(&f.fixed, "fixed-strings", "F", false, "PATTERN is a string, not a regular expression")
	fl.BoolVarP(&f.extended, "extended-regexp", "E", false, "PATTERN is RE2 syntax (Go's regexp)")
	fl.BoolVarP(&f.list, "files-with-matches", "l", false, "print the paths of the files that match (the default)")
	fl.BoolVarP(&f.count, "count", "c", false, "print PATH:COUNT of every file, COUNT its matching lines")
	fl.BoolVar(&f.json, "json", false, "print the matches as JSON")
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return grepTrouble{&usageError{cmd: cmd, err: err}}
	})
	f.treeFlags.add(cmd)
	f.profile.add(cmd)
	return cmd
}

func runGrep(cmd *cobra.Command, pattern, store, p string, f grepFlags) error {
	syn := treegrep.Basic
	switch {
	case f.fixed:
		syn = treegrep.Fixed
	case f.extended:
		syn = treegrep.Extended
	}
	m, err := treegrep.Compile(pattern, syn, f.ignoreCase)
	if err != nil {
		return &usageError{cmd: cmd, err: err}
	}
	s, err := openTree(cmd, store, f.treeFlags)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(cmd.OutOrStdout())
	defer w.Flush()
	stderr := cmd.ErrOrStderr()
	type match struct {
		Path  string `json:"path"`
		Count int    `json:"count"`
	}
	doc := struct {
		Files   int     `json:"files"`
		Matches []match `json:"matches"`
	}{Matches: []match{}}
	matched, failed := false, 0
	_, err = treegrep.Grep(s, p, treegrep.Options{Matcher: m, Count: f.count || f.json}, func(r treegrep.Result) error {
		if r.Err != nil {
			failed++
			w.Flush()
			fmt.Fprintf(stderr, "kahafs grep: %s: %v\n", r.Path(), r.Err)
			return nil
		}
		doc.Files++
		matched = matched || r.Count > 0
		switch {
		case f.json:
			if r.Count > 0 || f.count {
				doc.Matches = append(doc.Matches, match{r.Path(), r.Count})
			}
		case f.count:
			fmt.Fprintf(w, "%s:%d\n", r.Path(), r.Count)
		case r.Count > 0:
			fmt.Fprintln(w, r.Path())
		}
		return nil
	})
	if err != nil {
		return err
	}
	if f.json {
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		w.Write(append(b, '\n'))
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d files could not be read: %w", failed, errDamaged)
	case !matched:
		return errNoMatch
	}
	return nil
}

// Package treegrep searches the content of the files of the tree kahafs
// serves (kahafs grep) without FUSE: the files below a path whose content
// matches a pattern, the same as `grep -r -l` (or -c) over a mount of the
// store.
//
// A mount serves a file per command and per message body; grep -r reads
// them one at a time, each costing the kernel a LOOKUP (past the link
// limit) and a render of its record. Grep instead walks the tree once to
// note which records its files show, reads those records in journal
// order in large sequential reads, and renders and matches them on every
// core (fsnode.RecordRenderer renders from the bytes read the content
// fsnode serves). Small files (README, summary.json, holders, stats.json,
// info.json) are rendered through the tree as `kahafs cat` does.
//
// Matching is grep's: lines ended by "\n" (a last line without one counts,
// an empty file has none), NUL bytes ending lines too (GNU grep's binary
// files), a pattern of several lines matching what any of them matches. A
// basic regular expression (grep's default) is translated to RE2 and
// refused where RE2 cannot match the same (back-references, \< \>, GNU
// escapes); -E is RE2 syntax. Character classes and -i follow RE2: Unicode
// case folding, ASCII [:alpha:] and \w, "." matching one UTF-8 character
// (an invalid byte as one).
package treegrep

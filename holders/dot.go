package holders

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The ack chain as a Graphviz digraph (`kahafs holders --dot`): a node per
// data file (its name, length, pinned or free, the kinds of its holders),
// an edge A -> B for every file B holding messages that acks in A are for
// (File.AcksFor: the broker keeps A as long as it keeps B), and the files
// that start a chain (File.ChainStart of some file) drawn bold.

// WriteDot writes doc's files and ack edges as a Graphviz digraph.
func (doc Doc) WriteDot(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph kahafs {\n")
	writeDotHeader(bw, doc.Store)
	doc.writeDotBody(bw, "  ", "")
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

// WriteDot writes the files of every analysed store of the layout, a
// cluster each (node names prefixed by the store's position).
func (doc LayoutDoc) WriteDot(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph kahafs {\n")
	writeDotHeader(bw, "")
	for i, sd := range doc.Stores {
		if sd.Doc == nil {
			continue
		}
		fmt.Fprintf(bw, "  subgraph cluster_%d {\n    label=%s;\n", i, dotQuote(sd.Name+" ("+sd.Kind+")"))
		sd.Doc.writeDotBody(bw, "    ", fmt.Sprintf("s%d_", i))
		fmt.Fprintf(bw, "  }\n")
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

func writeDotHeader(w io.Writer, store string) {
	lines := []string{"A -> B: acks in A are for messages in B (A is kept while B is); bold red: the start of an ack chain"}
	if store != "" {
		lines = append([]string{store}, lines...)
	}
	fmt.Fprintf(w, "  label=%s;\n  labelloc=t;\n  rankdir=LR;\n", dotQuote(lines...))
	fmt.Fprintf(w, "  node [shape=box, style=filled, fontname=\"monospace\"];\n")
}

// DotNodeName is the name of file id's node in the digraph of a store
// (prefix: its store's, in a layout's).
func DotNodeName(prefix string, id int32) string { return fmt.Sprintf("%sf%d", prefix, id) }

func (doc Doc) writeDotBody(w io.Writer, indent, prefix string) {
	starts := map[int32]bool{}
	for _, f := range doc.Files {
		for _, s := range f.ChainStart {
			starts[s] = true
		}
	}
	for _, f := range doc.Files {
		state, fill := "free", "palegreen"
		if f.Pinned {
			state, fill = "pinned", "lightsalmon"
		}
		var kinds []string
		for _, r := range f.Reasons {
			if k := string(r.Kind); !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		label := []string{f.Name, SizeText(f.Bytes) + " " + state}
		if len(kinds) > 0 {
			label = append(label, strings.Join(kinds, ", "))
		}
		extra := ""
		if starts[f.ID] {
			label = append(label, "chain start")
			extra = ", penwidth=3, color=red"
		}
		fmt.Fprintf(w, "%s%s [label=%s, fillcolor=%s%s];\n", indent, DotNodeName(prefix, f.ID), dotQuote(label...), fill, extra)
	}
	pinned := map[int32]bool{}
	for _, f := range doc.Files {
		pinned[f.ID] = f.Pinned
	}
	for _, f := range doc.Files {
		for _, b := range f.AcksFor {
			// An edge that keeps its source: both are kept.
			style := "style=dashed, color=gray"
			if f.Pinned && pinned[b] {
				style = "style=solid"
			}
			fmt.Fprintf(w, "%s%s -> %s [label=\"acks for\", %s];\n", indent, DotNodeName(prefix, f.ID), DotNodeName(prefix, b), style)
		}
	}
}

// dotQuote is the lines as a DOT string: quoted, with quotes and
// backslashes escaped, the lines joined by DOT's line break.
func dotQuote(lines ...string) string {
	var b strings.Builder
	b.WriteByte('"')
	for n, s := range lines {
		if n > 0 {
			b.WriteString(`\n`)
		}
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c == 0x7f:
				b.WriteByte(' ')
			default:
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

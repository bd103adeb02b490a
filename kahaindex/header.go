package kahaindex

import (
	"fmt"
	"strconv"
	"strings"
)

// Header: the first 4 KiB of db.data hold two copies of a Java properties
// text (PageFile.MetaData), 2 KiB each, padded with spaces. Part of the
// wire format.
const (
	fileHeaderSize = 4096 // PageFile.PAGE_FILE_HEADER_SIZE
	headerCopySize = fileHeaderSize / 2
)

// header is one copy of PageFile.MetaData with the broker's defaults for
// missing or unparsable properties.
type header struct {
	fileType        string
	fileTypeVersion string
	metaDataTxID    int64 // -1 when absent
	pageSize        int64 // 0 when absent
	cleanShutdown   bool
	lastTxID        int64
	freePages       int64
}

// parseHeader reads one 2 KiB copy as java.util.Properties.load (ISO-8859-1)
// followed by IntrospectionSupport.setProperties on a PageFile.MetaData:
// a property sets the field whose setter is "set" + the key with its
// first letter upper-cased; a value that does not convert is ignored (the
// broker logs it and keeps the default). A malformed \uXXXX escape makes
// Properties.load throw, which fails the broker's page file load.
func parseHeader(b []byte) (header, error) {
	h := header{metaDataTxID: -1}
	props, err := loadProperties(b)
	if err != nil {
		return h, err
	}
	for _, p := range props {
		if p.key == "" {
			continue
		}
		name := strings.ToUpper(p.key[:1]) + p.key[1:]
		switch name {
		case "FileType":
			h.fileType = p.value
		case "FileTypeVersion":
			h.fileTypeVersion = p.value
		case "MetaDataTxId":
			if v, ok := javaLong(p.value, 64); ok {
				h.metaDataTxID = v
			}
		case "PageSize":
			if v, ok := javaLong(p.value, 32); ok {
				h.pageSize = v
			}
		case "CleanShutdown":
			h.cleanShutdown = strings.EqualFold(p.value, "true")
		case "LastTxId":
			if v, ok := javaLong(p.value, 64); ok {
				h.lastTxID = v
			}
		case "FreePages":
			if v, ok := javaLong(p.value, 64); ok {
				h.freePages = v
			}
		}
	}
	return h, nil
}

// javaLong is Long.parseLong / Integer.parseInt for ASCII digits.
func javaLong(s string, bits int) (int64, bool) {
	if s == "" || s == "+" || s == "-" {
		return 0, false
	}
	for i, c := range s {
		if (c == '+' || c == '-') && i == 0 {
			continue
		}
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, bits)
	return v, err == nil
}

type property struct{ key, value string }

// loadProperties parses a properties text the way java.util.Properties
// does: logical lines (a line ending in an odd number of backslashes
// continues on the next, whose leading blanks are dropped), comments
// starting with # or !, the key ending at the first unescaped '=', ':' or
// blank, escapes \t \n \r \f \uXXXX and \c for any other c. Bytes are
// ISO-8859-1 characters. Later duplicates replace earlier ones.
func loadProperties(b []byte) ([]property, error) {
	var out []property
	index := map[string]int{}
	i := 0
	for i < len(b) {
		// skip leading blanks and line terminators
		for i < len(b) && isPropBlank(b[i]) || i < len(b) && (b[i] == '\n' || b[i] == '\r') {
			i++
		}
		if i >= len(b) {
			break
		}
		if b[i] == '#' || b[i] == '!' {
			for i < len(b) && b[i] != '\n' && b[i] != '\r' {
				i++
			}
			continue
		}
		// collect one logical line, unescaped line continuations joined
		var line []byte
		for i < len(b) {
			c := b[i]
			if c == '\n' || c == '\r' {
				// count trailing backslashes
				n := 0
				for j := len(line) - 1; j >= 0 && line[j] == '\\'; j-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				line = line[:len(line)-1]
				if c == '\r' && i+1 < len(b) && b[i+1] == '\n' {
					i++
				}
				i++
				for i < len(b) && isPropBlank(b[i]) {
					i++
				}
				continue
			}
			line = append(line, c)
			i++
		}
		if n := trailingBackslashes(line); n%2 == 1 {
			line = line[:len(line)-1] // continuation at end of input
		}
		k, v, err := splitProperty(line)
		if err != nil {
			return nil, err
		}
		if j, ok := index[k]; ok {
			out[j].value = v
		} else {
			index[k] = len(out)
			out = append(out, property{k, v})
		}
	}
	return out, nil
}

func trailingBackslashes(b []byte) int {
	n := 0
	for j := len(b) - 1; j >= 0 && b[j] == '\\'; j-- {
		n++
	}
	return n
}

func isPropBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func splitProperty(line []byte) (string, string, error) {
	keyEnd := len(line)
	valStart := len(line)
	for j := 0; j < len(line); j++ {
		c := line[j]
		if c == '\\' {
			j++
			continue
		}
		if c == '=' || c == ':' {
			keyEnd, valStart = j, j+1
			break
		}
		if isPropBlank(c) {
			keyEnd, valStart = j, j+1
			for valStart < len(line) && isPropBlank(line[valStart]) {
				valStart++
			}
			if valStart < len(line) && (line[valStart] == '=' || line[valStart] == ':') {
				valStart++
			}
			break
		}
	}
	for valStart < len(line) && isPropBlank(line[valStart]) {
		valStart++
	}
	k, err := unescapeProperty(line[:keyEnd])
	if err != nil {
		return "", "", err
	}
	v, err := unescapeProperty(line[valStart:])
	if err != nil {
		return "", "", err
	}
	return k, v, nil
}

func unescapeProperty(b []byte) (string, error) {
	var sb strings.Builder
	for j := 0; j < len(b); j++ {
		c := b[j]
		if c != '\\' || j+1 >= len(b) {
			if c != '\\' {
				sb.WriteRune(rune(c)) // ISO-8859-1
			}
			continue
		}
		j++
		switch c = b[j]; c {
		case 't':
			sb.WriteByte('\t')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 'f':
			sb.WriteByte('\f')
		case 'u':
			if j+4 >= len(b) {
				return "", fmt.Errorf("malformed \\uxxxx encoding")
			}
			v, err := strconv.ParseUint(string(b[j+1:j+5]), 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx encoding")
			}
			sb.WriteRune(rune(v))
			j += 4
		default:
			sb.WriteRune(rune(c))
		}
	}
	return sb.String(), nil
}

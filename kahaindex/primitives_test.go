package kahaindex

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestLoadProperties(t *testing.T) {
	rows := []struct {
		in   string
		want []property
		err  bool
	}{
		{in: "a=1\nb = 2\n", want: []property{{"a", "1"}, {"b", "2"}}},
		{in: "# comment\n! other\n   \n\tkey:value\n", want: []property{{"key", "value"}}},
		{in: "key value with spaces  \n", want: []property{{"key", "value with spaces  "}}},
		{in: "key\n", want: []property{{"key", ""}}},
		{in: "a=1\\\n   2\nb=3", want: []property{{"a", "12"}, {"b", "3"}}},
		{in: "a=1\\\\\nb=3", want: []property{{"a", "1\\"}, {"b", "3"}}},
		{in: "a\\=b=c\r\nd=e\rf=g", want: []property{{"a=b", "c"}, {"d", "e"}, {"f", "g"}}},
		{in: "u=\\u0041\\t\\x", want: []property{{"u", "A\tx"}}},
		{in: "a=1\na=2\n", want: []property{{"a", "2"}}},
		{in: "# comment ending in a backslash \\\na=1", want: []property{{"a", "1"}}},
		{in: "latin=\xe9", want: []property{{"latin", "é"}}},
		{in: "bad=\\u00", err: true},
		{in: "bad=\\uzzzz", err: true},
	}
	for _, r := range rows {
		got, err := loadProperties([]byte(r.in))
		if (err != nil) != r.err || !r.err && !reflect.DeepEqual(got, r.want) {
			t.Errorf("%q: got %q, %v; want %q", r.in, got, err, r.want)
		}
	}
}

func TestParseHeader(t *testing.T) {
	h, err := parseHeader([]byte("PageSize=512\nmetaDataTxId=3\ncleanShutdown=TRUE\nlastTxId= 9\nfreePages=4 \nfileType=x\n"))
	if err != nil {
		t.Fatal(err)
	}
	// A setter is found from the key with its first letter upper-cased;
	// a value Long.valueOf refuses (trailing blank) is ignored.
	want := header{fileType: "x", metaDataTxID: 3, pageSize: 512, cleanShutdown: true, lastTxID: 9, freePages: 0}
	if h != want {
		t.Errorf("got %+v, want %+v", h, want)
	}
	if h, _ = parseHeader([]byte("pageSize=99999999999\n")); h.pageSize != 0 {
		t.Errorf("int overflow accepted: %+v", h)
	}
}

func TestModifiedUTF8(t *testing.T) {
	rows := []struct {
		in   []byte
		want []uint16
		err  bool
	}{
		{in: []byte("abc"), want: []uint16{'a', 'b', 'c'}},
		{in: []byte{0xC0, 0x80}, want: []uint16{0}},
		{in: []byte{0xC3, 0xA9}, want: []uint16{0xE9}},
		{in: []byte{0xED, 0xA0, 0x80}, want: []uint16{0xD800}},
		{in: []byte{0xE2, 0x82, 0xAC}, want: []uint16{0x20AC}},
		{in: []byte{0xC3}, err: true},
		{in: []byte{0xC3, 0x41}, err: true},
		{in: []byte{0xE2, 0x82}, err: true},
		{in: []byte{0xE2, 0x02, 0xAC}, err: true},
		{in: []byte{0x80}, err: true},
		{in: []byte{0xF0, 0x9F, 0x98, 0x80}, err: true},
	}
	for _, r := range rows {
		got, err := decodeModifiedUTF8(r.in)
		if (err != nil) != r.err || !r.err && !reflect.DeepEqual([]uint16(got), r.want) {
			t.Errorf("% x: got %v, %v; want %v", r.in, got, err, r.want)
		}
	}
	if s := (jstring{'h', 'i', 0xD800}).String(); s != "hi\uFFFD" {
		t.Errorf("lone surrogate: %q", s)
	}
}

func TestCompareJava(t *testing.T) {
	// Java orders by UTF-16 code unit: U+FFFD sorts after the surrogates
	// of U+1F600, unlike Go's byte order.
	a, b := jstring(utf16.Encode([]rune("\U0001F600"))), jstring(utf16.Encode([]rune("\uFFFD")))
	if compareJava(a, b) >= 0 || strings.Compare("\U0001F600", "\uFFFD") <= 0 {
		t.Error("code unit order")
	}
	if compareJava(jstring{'a'}, jstring{'a', 'b'}) >= 0 || compareJava(jstring{'b'}, jstring{'a', 'b'}) <= 0 {
		t.Error("prefix order")
	}
}

func TestBinarySearch(t *testing.T) {
	keys := []int64{1, 3, 5, 7}
	for key, want := range map[int64]int{1: 0, 7: 3, 0: -1, 4: -3, 9: -5} {
		if got := binarySearch(keys, key, compareInt64); got != want {
			t.Errorf("%d: %d, want %d", key, got, want)
		}
	}
	// Unsorted keys: Java's algorithm, not a scan.
	if got := binarySearch([]int64{9, 1, 5}, 9, compareInt64); got != -4 {
		t.Errorf("unsorted: %d", got)
	}
}

func TestIteratedMax(t *testing.T) {
	const maxLong = math.MaxInt64
	rows := []struct {
		in   []Range
		want int64
		ok   bool
		err  bool
	}{
		{in: nil},
		{in: []Range{{5, 5}}, want: 5, ok: true},
		{in: []Range{{1, 3}, {7, 7}, {9, 12}}, want: 12, ok: true},
		{in: []Range{{-5, -2}}, want: -2, ok: true},
		{in: []Range{{9, 12}, {1, 3}}, err: true},                                // counts on from 12 towards 3
		{in: []Range{{9, 3}}, err: true},                                         // reversed
		{in: []Range{{4, 4}, {4, 4}}, err: true},                                 // repeated single value
		{in: []Range{{4, 6}, {5, 9}}, want: 9, ok: true},                         // overlap: counts on from 6 to 9
		{in: []Range{{maxLong - 1, math.MinInt64 + 1}}, want: maxLong, ok: true}, // wraps
	}
	for _, r := range rows {
		got, ok, err := iteratedMax(r.in)
		if (err != nil) != r.err || !r.err && (got != r.want || ok != r.ok) {
			t.Errorf("%v: got %d %v %v, want %d %v", r.in, got, ok, err, r.want, r.ok)
		}
	}
}

func TestReadRawVarint32(t *testing.T) {
	rows := []struct {
		in   []byte
		want int32
		err  error
	}{
		{in: []byte{5}, want: 5},
		{in: []byte{0xAC, 0x02}, want: 300},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, want: -1},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, want: -1},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, want: 0},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, err: ErrProtobuf},
		{in: []byte{0x80}, err: ErrProtobuf},
		{in: nil, err: ErrProtobuf},
	}
	for _, r := range rows {
		in := &byteInput{src: source{name: "x", r: bytes.NewReader(r.in), size: int64(len(r.in))}}
		got, err := readRawVarint32(in)
		if !errors.Is(err, r.err) || r.err == nil && got != r.want {
			t.Errorf("% x: got %d, %v; want %d, %v", r.in, got, err, r.want, r.err)
		}
	}
}

func TestCheckSubscriptionCommand(t *testing.T) {
	good := []byte(subCommand("T.B", "c:s"))
	body := good[1:] // unframed
	rows := []struct {
		name string
		in   []byte
		want error
	}{
		{"sound", body, nil},
		{"empty", []byte{}, nil},
		{"nested message cut short", []byte{0x0a, 0x05}, nil},
		{"unknown tag: its data read as tags", []byte{0x28, 0x10}, nil},
		{"end-group tag", []byte{0x0c}, errPBEndTag},
		{"end-group tag in the destination", []byte{0x0a, 0x01, 0x0c}, errPBEndTag},
		{"tag 0", []byte{0x12, 0x00, 0x80, 0x00}, errPBTag},
		{"string past the end", []byte{0x12, 0x05, 'a'}, errPBEOF},
		{"negative string length", []byte{0x12, 0xfe, 0xff, 0xff, 0xff, 0x0f, 'a'}, errPBNegative},
		{"malformed varint", []byte{0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, errPBMalformed},
	}
	for _, r := range rows {
		err := checkSubscriptionCommand(r.in)
		if !errors.Is(err, r.want) || (r.want == nil) != (err == nil) {
			t.Errorf("%s: got %v, want %v", r.name, err, r.want)
		}
	}
}

package docdiff

import (
	"bytes"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestSharedPrefix: the length of the prefix two byte strings share, where
// they differ within, at and past a word of eight.
func TestSharedPrefix(t *testing.T) {
	a := []byte("0123456789abcdefghij")
	for _, tc := range []struct {
		b    []byte
		want int
	}{
		{a, 20}, {nil, 0}, {a[:13], 13}, {append([]byte("01234567"), a...), 8},
		{[]byte("x123456789abcdefghij"), 0}, {[]byte("0123456x89abcdefghij"), 7},
		{[]byte("01234567x9abcdefghij"), 8}, {[]byte("0123456789abcdexghij"), 15},
		{[]byte("0123456789abcdefghix"), 19}, {[]byte("0123456789abcdefghijk"), 20},
	} {
		if got := sharedPrefix(a, tc.b); got != tc.want {
			t.Errorf("sharedPrefix(%q, %q) = %d, want %d", a, tc.b, got, tc.want)
		}
		if got := sharedPrefix(tc.b, a); got != tc.want {
			t.Errorf("sharedPrefix(%q, %q) = %d, want %d", tc.b, a, got, tc.want)
		}
	}
}

// TestSharedSuffix: the length of the suffix two byte strings share, where
// they differ within, at and past a word of eight from the end.
func TestSharedSuffix(t *testing.T) {
	a := []byte("0123456789abcdefghij")
	for _, tc := range []struct {
		b    []byte
		want int
	}{
		{a, 20}, {nil, 0}, {a[7:], 13}, {append([]byte("xyz"), a...), 20},
		{[]byte("0123456789abcdefghix"), 0}, {[]byte("0123456789abcxefghij"), 6},
		{[]byte("0123456789axcdefghij"), 8}, {[]byte("0123x56789abcdefghij"), 15},
		{[]byte("x123456789abcdefghij"), 19}, {[]byte("k0123456789abcdefghij"), 20},
	} {
		if got := sharedSuffix(a, tc.b); got != tc.want {
			t.Errorf("sharedSuffix(%q, %q) = %d, want %d", a, tc.b, got, tc.want)
		}
		if got := sharedSuffix(tc.b, a); got != tc.want {
			t.Errorf("sharedSuffix(%q, %q) = %d, want %d", tc.b, a, got, tc.want)
		}
	}
}

// TestSameNamesAtThePrefixEdge: diffSameNames reads the elements inside
// the prefix both documents share, and the rest once it is the same bytes
// in both, from old alone; a change in the last byte of an element (an
// int32's high byte, a nested document's last value), the first byte after
// it, or an element's first byte (its type) is still found, as diffFields
// finds it.
func TestSameNamesAtThePrefixEdge(t *testing.T) {
	for _, pair := range [][2]bson.D{
		{{{Key: "a", Value: int32(1)}, {Key: "b", Value: "x"}}, {{Key: "a", Value: int32(1 + 1<<24)}, {Key: "b", Value: "x"}}},
		{{{Key: "a", Value: "x"}, {Key: "b", Value: int32(5)}}, {{Key: "a", Value: "x"}, {Key: "b", Value: int32(5 + 1<<24)}}},
		{{{Key: "a", Value: "x"}, {Key: "b", Value: int32(5)}}, {{Key: "a", Value: "x"}, {Key: "b", Value: int32(6)}}},
		{{{Key: "_id", Value: 1}, {Key: "n", Value: bson.D{{Key: "p", Value: int32(1)}}}}, {{Key: "_id", Value: 1}, {Key: "n", Value: bson.D{{Key: "p", Value: int32(1 + 1<<24)}}}}},
		{{{Key: "_id", Value: 1}, {Key: "a", Value: int64(0)}, {Key: "b", Value: "x"}}, {{Key: "_id", Value: 1}, {Key: "a", Value: bson.DateTime(0)}, {Key: "b", Value: "x"}}},
		{{{Key: "a", Value: int64(0)}, {Key: "b", Value: "x"}}, {{Key: "a", Value: bson.DateTime(0)}, {Key: "b", Value: "x"}}},
		{{{Key: "field0", Value: "aaaaaaaa"}, {Key: "field1", Value: "bbbbbbbb"}}, {{Key: "field0", Value: "aaaaaaab"}, {Key: "field1", Value: "bbbbbbbb"}}},
	} {
		old, _ := bson.Marshal(pair[0])
		new, _ := bson.Marshal(pair[1])
		fast, ok := diffSameNames(nil, old, new)
		general, gok := diffFields(old, new)
		if !ok || !gok || !bytes.Equal(fast, general) || len(general) <= 5 {
			t.Errorf("%s → %s: diffSameNames %s (%v), diffFields %s (%v)", bson.Raw(old), bson.Raw(new), bson.Raw(fast), ok, bson.Raw(general), gok)
		}
	}
}

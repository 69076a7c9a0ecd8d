// Package docdiff owns the difference between two versions of a document
// in the form MongoDB's oplog writes for an update ($v: 2 diffs): what a
// change log entry carries instead of the whole new document, what a
// secondary applies, and what a change stream reports as an update's
// updateDescription.
//
// A document diff has up to four kinds of entries, in this order:
//
//	d: {field: false, …}   fields removed
//	u: {field: value, …}   fields whose value is replaced in place
//	i: {field: value, …}   fields added, appended after the others
//	s<field>: <diff>       a nested diff of an object or array field
//
// An array diff is {a: true, l: <new length>, u<index>: value,
// s<index>: <diff>}: l only when the array shrank; indexes past the old end
// (which must follow it without a gap) extend it.
//
// # Invariants
//
// "Apply inverts Diff": for any documents old and new, Apply(old,
// Diff(old, new)) is new byte for byte (field order included). Where a
// diff cannot say it (new puts a field before one it kept from old), Diff
// replaces the smallest enclosing object whole with a u entry, or returns
// nil at the top, and the caller logs a replacement. FuzzDiffApply and
// TestDiffApplyRandom check it.
//
// "Never larger than the value": a nested diff is used only when its
// encoding is smaller than the new value it describes; otherwise the
// value itself is written (as MongoDB does).
package docdiff

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
)

// Diff returns the diff that turns old into new, or nil when the documents
// are equal or when only a replacement can express the change (its caller
// then logs the whole new document).
func Diff(old, new bsoncore.Document) bsoncore.Document {
	d, ok := AppendDiff(nil, old, new)
	if !ok {
		return nil
	}
	return d
}

// AppendDiff appends Diff(old, new) to dst; ok is false (and dst is
// returned as it was) where Diff returns nil. The common update that
// changes values only (diffSameNames) writes its diff straight into dst,
// allocating nothing when dst has room (an oplog entry's buffer).
func AppendDiff(dst []byte, old, new bsoncore.Document) ([]byte, bool) {
	if bytes.Equal(old, new) {
		return dst, false
	}
	return appendDiffObject(dst, old, new)
}

// diffObject diffs two embedded documents; ok is false when the new field
// order cannot be reached by removing, replacing and appending fields.
func diffObject(old, new bsoncore.Document) (bsoncore.Document, bool) {
	return appendDiffObject(nil, old, new)
}

// appendDiffObject is diffObject appending to dst.
func appendDiffObject(dst []byte, old, new bsoncore.Document) ([]byte, bool) {
	if d, ok := diffSameNames(dst, old, new); ok {
		return d, true
	}
	d, ok := diffFields(old, new)
	if !ok {
		return dst, false
	}
	return append(dst, d...), true
}

// diffFields is diffObject's general case: fields removed, kept, replaced
// and appended.
func diffFields(old, new bsoncore.Document) (bsoncore.Document, bool) {
	oel, err1 := old.Elements()
	nel, err2 := new.Elements()
	if err1 != nil || err2 != nil {
		return nil, false
	}
	inOld := make(map[string]bsoncore.Value, len(oel))
	for _, e := range oel {
		inOld[e.Key()] = e.Value()
	}
	inNew := make(map[string]bool, len(nel))
	for _, e := range nel {
		inNew[e.Key()] = true
	}
	if len(inOld) != len(oel) || len(inNew) != len(nel) {
		return nil, false // duplicate field names: only a replacement says it
	}
	// Kept fields must come first in new, in their old order.
	var kept []string
	for _, e := range oel {
		if inNew[e.Key()] {
			kept = append(kept, e.Key())
		}
	}
	for i, name := range kept {
		if i >= len(nel) || nel[i].Key() != name {
			return nil, false
		}
	}
	var del, upd, ins, sub []bsoncore.Element
	for _, e := range oel {
		if !inNew[e.Key()] {
			del = append(del, bsoncore.AppendBooleanElement(nil, e.Key(), false))
		}
	}
	for i, e := range nel {
		name, v := e.Key(), e.Value()
		if i >= len(kept) {
			ins = append(ins, bsoncore.Element(e))
			continue
		}
		ov := inOld[name]
		if ov.Type == v.Type && bytes.Equal(ov.Data, v.Data) {
			continue
		}
		if nested, ok := diffValue(ov, v); ok {
			sub = append(sub, bsoncore.AppendDocumentElement(nil, "s"+name, nested))
			continue
		}
		upd = append(upd, bsoncore.Element(e))
	}
	return assemble(del, upd, ins, sub), true
}

// maxSameNames bounds the fields diffSameNames compares pairwise for
// repeated names; larger documents take diffObject's maps.
const maxSameNames = 32

// diffSameNames is diffObject for the common update that changes values
// only: old and new hold the same field names in the same order, none
// repeated, so every field is kept and the diff has only u and s entries.
// It reads both documents in step, without diffObject's element slices
// and maps (the oplog entry of every update diffs its document: YCSB-A's
// profile had diffObject at 6–7% of the server's CPU). ok is false when
// the names differ in any way (or a document is cut short, or has more
// than maxSameNames fields), and diffFields decides then; where both
// decide, they write the same bytes (TestSameNamesAsFields).
func diffSameNames(dst []byte, old, new bsoncore.Document) ([]byte, bool) {
	if len(old) < 5 || len(new) < 5 {
		return dst, false
	}
	orest, nrest := old[4:len(old)-1], new[4:len(new)-1]
	// Names and elements are read in place, into arrays on the stack: the
	// diff of a few changed fields allocates nothing but, when dst lacks
	// room, its bytes (and a nested diff's).
	// Elements are read with bsonx.NextElement, whose framing is stricter
	// than bsoncore's: what it refuses diffFields decides, as a name out of
	// place is. A name is compared with the earlier ones only when one of
	// them shares its bit in seen (its length and last byte), so distinct
	// names such as field0…field9 cost no comparisons.
	var names [maxSameNames][]byte
	var seen uint64
	var updArr, subArr [8]bsoncore.Element
	upd, sub := updArr[:0], subArr[:0]
	// The elements wholly inside the bytes both documents begin with, and
	// all of them once what is left of each is the same bytes (inside the
	// bytes both end with, as long), are the same in both: read once, from
	// old, their values not compared (an update of one field of many
	// leaves those before and after it alike).
	shared := sharedPrefix(orest, nrest)
	suffix, tail := sharedSuffix(orest, nrest), false
	for n := 0; len(orest) > 0 || len(nrest) > 0; n++ {
		if n == maxSameNames {
			return dst, false
		}
		tail = tail || len(orest) == len(nrest) && len(orest) <= suffix
		ot, name, oval, or, ok1 := bsonx.NextElement(orest)
		alike := ok1 && (tail || len(orest)-len(or) <= shared)
		var nt bsoncore.Type
		var nval []byte
		var ne bsoncore.Element
		if alike {
			size := len(orest) - len(or)
			shared -= size
			orest, nrest = or, nrest[size:]
		} else {
			shared = 0
			var nname, nr []byte
			var ok2 bool
			nt, nname, nval, nr, ok2 = bsonx.NextElement(nrest)
			if !ok1 || !ok2 || !bytes.Equal(name, nname) {
				return dst, false
			}
			ne = bsoncore.Element(nrest[:len(nrest)-len(nr)])
			orest, nrest = or, nr
		}
		bit := uint64(1) << nameBit(name)
		if seen&bit != 0 {
			for _, earlier := range names[:n] {
				if bytes.Equal(earlier, name) {
					return dst, false // a repeated name: diffObject refuses it
				}
			}
		}
		seen |= bit
		names[n] = name
		if alike || ot == nt && bytes.Equal(oval, nval) {
			continue
		}
		ov, v := bsoncore.Value{Type: ot, Data: oval}, bsoncore.Value{Type: nt, Data: nval}
		if nested, ok := diffValue(ov, v); ok {
			sub = append(sub, bsoncore.AppendDocumentElement(nil, "s"+string(name), nested))
			continue
		}
		upd = append(upd, ne)
	}
	return appendAssembled(dst, nil, upd, nil, sub), true
}

// sharedPrefix is the length of the longest prefix a and b share, compared
// 64 bytes at a time (the runtime's vector compare), then eight.
func sharedPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && string(a[i:i+64]) == string(b[i:i+64]) {
		i += 64
	}
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n && a[i] == b[i]; i++ {
	}
	return i
}

// sharedSuffix is the length of the longest suffix a and b share, compared
// 64 bytes at a time, then eight.
func sharedSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	a, b = a[len(a)-n:], b[len(b)-n:]
	i := n // a[i:] and b[i:] are alike
	for i >= 64 && string(a[i-64:i]) == string(b[i-64:i]) {
		i -= 64
	}
	for ; i >= 8; i -= 8 {
		if x := binary.LittleEndian.Uint64(a[i-8:]) ^ binary.LittleEndian.Uint64(b[i-8:]); x != 0 {
			return n - i + bits.LeadingZeros64(x)/8
		}
	}
	for ; i > 0 && a[i-1] == b[i-1]; i-- {
	}
	return n - i
}

// nameBit is a field name's bit in diffSameNames' filter of names seen:
// equal names share it.
func nameBit(name []byte) uint {
	if len(name) == 0 {
		return 0
	}
	return uint(len(name)*7+int(name[len(name)-1])) & 63
}

// assemble writes a document diff's sections in their order: d, u and i,
// then the nested diffs.
func assemble(del, upd, ins, sub []bsoncore.Element) bsoncore.Document {
	return appendAssembled(nil, del, upd, ins, sub)
}

// appendAssembled is assemble appending to dst, in one exact growth of
// dst when it lacks room.
func appendAssembled(dst []byte, del, upd, ins, sub []bsoncore.Element) []byte {
	size := 5 // the diff's length and its end
	for _, sec := range [...][]bsoncore.Element{del, upd, ins} {
		if len(sec) > 0 {
			size += 1 + 2 + 5 // type, "x\x00", the section's length and end
			for _, e := range sec {
				size += len(e)
			}
		}
	}
	for _, e := range sub {
		size += len(e)
	}
	dst = slices.Grow(dst, size)
	start, dst := bsoncore.ReserveLength(dst)
	for i, sec := range [...][]bsoncore.Element{del, upd, ins} {
		if len(sec) == 0 {
			continue
		}
		dst = append(dst, byte(bsoncore.TypeEmbeddedDocument), "dui"[i], 0)
		var s int32
		s, dst = bsoncore.ReserveLength(dst)
		for _, e := range sec {
			dst = append(dst, e...)
		}
		dst, _ = bsoncore.AppendDocumentEnd(dst, s)
	}
	for _, e := range sub {
		dst = append(dst, e...)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, start)
	return dst
}

// diffValue returns a nested diff of two objects or two arrays when it is
// expressible and smaller than the new value ("Never larger than the
// value").
func diffValue(ov, v bsoncore.Value) (bsoncore.Document, bool) {
	var d bsoncore.Document
	var ok bool
	switch {
	case ov.Type == bsoncore.TypeEmbeddedDocument && v.Type == bsoncore.TypeEmbeddedDocument:
		d, ok = diffObject(ov.Document(), v.Document())
	case ov.Type == bsoncore.TypeArray && v.Type == bsoncore.TypeArray:
		d, ok = diffArray(ov.Array(), v.Array())
	}
	if !ok || len(d) >= len(v.Data) {
		return nil, false
	}
	return d, true
}

// diffArray diffs two arrays element by element.
func diffArray(old, new bsoncore.Array) (bsoncore.Document, bool) {
	ov, err1 := old.Values()
	nv, err2 := new.Values()
	if err1 != nil || err2 != nil {
		return nil, false
	}
	b := bsoncore.NewDocumentBuilder().AppendBoolean("a", true)
	if len(nv) < len(ov) {
		b.AppendInt32("l", int32(len(nv)))
	}
	var sub []bsoncore.Element
	for i, v := range nv {
		idx := strconv.Itoa(i)
		if i < len(ov) {
			if ov[i].Type == v.Type && bytes.Equal(ov[i].Data, v.Data) {
				continue
			}
			if nested, ok := diffValue(ov[i], v); ok {
				sub = append(sub, bsoncore.AppendDocumentElement(nil, "s"+idx, nested))
				continue
			}
		}
		b.AppendValue("u"+idx, v)
	}
	return appendElems(b.Build(), sub), true
}

func docOf(els []bsoncore.Element) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	for _, e := range els {
		b = append(b, e...)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// appendElems returns d with els appended.
func appendElems(d bsoncore.Document, els []bsoncore.Element) bsoncore.Document {
	if len(els) == 0 {
		return d
	}
	body := d[4 : len(d)-1]
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = append(b, body...)
	for _, e := range els {
		b = append(b, e...)
	}
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// Apply returns old with diff applied.
func Apply(old, diff bsoncore.Document) (bsoncore.Document, error) {
	return applyObject(old, diff)
}

func applyObject(old, diff bsoncore.Document) (bsoncore.Document, error) {
	dels, upds, subs := map[string]bool{}, map[string]bsoncore.Value{}, map[string]bsoncore.Document{}
	var ins []bsoncore.Element
	els, err := diff.Elements()
	if err != nil {
		return nil, err
	}
	for _, e := range els {
		k, v := e.Key(), e.Value()
		switch {
		case k == "d" || k == "u" || k == "i":
			sec, ok := v.DocumentOK()
			if !ok {
				return nil, fmt.Errorf("docdiff: section %q is not a document", k)
			}
			fs, err := sec.Elements()
			if err != nil {
				return nil, err
			}
			for _, f := range fs {
				switch k {
				case "d":
					dels[f.Key()] = true
				case "u":
					upds[f.Key()] = f.Value()
				default:
					ins = append(ins, f)
				}
			}
		case len(k) > 1 && k[0] == 's':
			d, ok := v.DocumentOK()
			if !ok {
				return nil, fmt.Errorf("docdiff: sub-diff %q is not a document", k)
			}
			subs[k[1:]] = d
		default:
			return nil, fmt.Errorf("docdiff: unknown entry %q in an object diff", k)
		}
	}
	oel, err := old.Elements()
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder()
	for _, e := range oel {
		k := e.Key()
		switch {
		case dels[k]:
		case upds[k].Type != 0:
			b.AppendValue(k, upds[k])
		case subs[k] != nil:
			nv, err := applyValue(e.Value(), subs[k])
			if err != nil {
				return nil, fmt.Errorf("%s.%w", k, err)
			}
			b.AppendValue(k, nv)
		default:
			b.AppendValue(k, e.Value())
		}
	}
	for _, e := range ins {
		b.AppendValue(e.Key(), e.Value())
	}
	return b.Build(), nil
}

// applyValue applies a sub-diff to an object or array value.
func applyValue(v bsoncore.Value, d bsoncore.Document) (bsoncore.Value, error) {
	if isArrayDiff(d) {
		arr, ok := v.ArrayOK()
		if !ok {
			return bsoncore.Value{}, fmt.Errorf("docdiff: an array diff applied to a %s", v.Type)
		}
		out, err := applyArray(arr, d)
		return bsoncore.Value{Type: bsoncore.TypeArray, Data: out}, err
	}
	doc, ok := v.DocumentOK()
	if !ok {
		return bsoncore.Value{}, fmt.Errorf("docdiff: an object diff applied to a %s", v.Type)
	}
	out, err := applyObject(doc, d)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out}, err
}

func isArrayDiff(d bsoncore.Document) bool {
	a, ok := d.Lookup("a").BooleanOK()
	return ok && a
}

func applyArray(old bsoncore.Array, d bsoncore.Document) (bsoncore.Array, error) {
	vals, err := old.Values()
	if err != nil {
		return nil, err
	}
	els, err := d.Elements()
	if err != nil {
		return nil, err
	}
	for _, e := range els {
		k, v := e.Key(), e.Value()
		switch {
		case k == "a":
		case k == "l":
			n, ok := v.AsInt64OK()
			if !ok || n < 0 || n > int64(len(vals)) {
				return nil, fmt.Errorf("docdiff: bad array length %s", v)
			}
			vals = vals[:n]
		case len(k) > 1 && (k[0] == 'u' || k[0] == 's'):
			i, err := strconv.Atoi(k[1:])
			if err != nil || i < 0 || i > len(vals) || k[0] == 's' && i == len(vals) {
				return nil, fmt.Errorf("docdiff: bad array entry %q for length %d", k, len(vals))
			}
			nv := v
			if k[0] == 's' {
				sd, ok := v.DocumentOK()
				if !ok {
					return nil, fmt.Errorf("docdiff: sub-diff %q is not a document", k)
				}
				if nv, err = applyValue(vals[i], sd); err != nil {
					return nil, fmt.Errorf("%d.%w", i, err)
				}
			}
			if i == len(vals) {
				vals = append(vals, nv)
			} else {
				vals[i] = nv
			}
		default:
			return nil, fmt.Errorf("docdiff: unknown entry %q in an array diff", k)
		}
	}
	b := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		b.AppendValue(v)
	}
	return b.Build(), nil
}

// Description is an update's updateDescription in a change stream event:
// the fields set (by dotted path), the fields removed, the arrays truncated
// to a new size, and the paths a dotted string leaves ambiguous.
type Description struct {
	Updated   bsoncore.Document
	Removed   []string
	Truncated []Truncation
	// Disambiguated is MongoDB 7.0's disambiguatedPaths: for each path of
	// Updated, Removed or Truncated that holds an object field named by
	// digits only or a field name with a dot, the path's parts, field
	// names as strings and array indexes as int32s. Empty when no path is
	// ambiguous.
	Disambiguated bsoncore.Document
}

// Truncation is one truncated array.
type Truncation struct {
	Field   string
	NewSize int32
}

// pathPart is one step of a path: an object field, or an array index.
type pathPart struct {
	name  string
	index bool
}

// describer builds a Description; parts is the path being walked.
type describer struct {
	desc  Description
	upd   *bsoncore.DocumentBuilder
	dis   *bsoncore.DocumentBuilder
	seen  map[string]bool
	parts []pathPart
}

// Describe turns a diff into its updateDescription.
func Describe(diff bsoncore.Document) (Description, error) {
	d := &describer{upd: bsoncore.NewDocumentBuilder(), dis: bsoncore.NewDocumentBuilder()}
	if err := d.object(diff); err != nil {
		return Description{}, err
	}
	d.desc.Updated = d.upd.Build()
	d.desc.Disambiguated = d.dis.Build()
	return d.desc, nil
}

// path is the dotted path of parts plus last, noting it in Disambiguated
// when the dots leave it ambiguous.
func (d *describer) path(last pathPart) string {
	parts := append(d.parts, last)
	var b []byte
	ambiguous := false
	for i, p := range parts {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, p.name...)
		if !p.index && (allDigits(p.name) || bytes.IndexByte([]byte(p.name), '.') >= 0) {
			ambiguous = true
		}
	}
	path := string(b)
	if ambiguous && !d.seen[path] {
		if d.seen == nil {
			d.seen = map[string]bool{}
		}
		d.seen[path] = true
		arr := bsoncore.NewArrayBuilder()
		for _, p := range parts {
			if p.index {
				n, _ := strconv.Atoi(p.name)
				arr.AppendInt32(int32(n))
			} else {
				arr.AppendString(p.name)
			}
		}
		d.dis.AppendArray(path, arr.Build())
	}
	return path
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (d *describer) object(diff bsoncore.Document) error {
	els, err := diff.Elements()
	if err != nil {
		return err
	}
	for _, e := range els {
		k, v := e.Key(), e.Value()
		switch {
		case k == "d" || k == "u" || k == "i":
			fs, err := v.Document().Elements()
			if err != nil {
				return err
			}
			for _, f := range fs {
				p := d.path(pathPart{name: f.Key()})
				if k == "d" {
					d.desc.Removed = append(d.desc.Removed, p)
				} else {
					d.upd.AppendValue(p, f.Value())
				}
			}
		case len(k) > 1 && k[0] == 's':
			if err := d.sub(pathPart{name: k[1:]}, v.Document()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *describer) sub(at pathPart, sd bsoncore.Document) error {
	d.parts = append(d.parts, at)
	defer func() { d.parts = d.parts[:len(d.parts)-1] }()
	if !isArrayDiff(sd) {
		return d.object(sd)
	}
	els, err := sd.Elements()
	if err != nil {
		return err
	}
	for _, e := range els {
		k, v := e.Key(), e.Value()
		switch {
		case k == "l":
			n, _ := v.AsInt64OK()
			d.parts = d.parts[:len(d.parts)-1]
			field := d.path(at)
			d.parts = append(d.parts, at)
			d.desc.Truncated = append(d.desc.Truncated, Truncation{Field: field, NewSize: int32(n)})
		case len(k) > 1 && k[0] == 'u':
			d.upd.AppendValue(d.path(pathPart{name: k[1:], index: true}), v)
		case len(k) > 1 && k[0] == 's':
			if err := d.sub(pathPart{name: k[1:], index: true}, v.Document()); err != nil {
				return err
			}
		}
	}
	return nil
}

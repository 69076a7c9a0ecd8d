// Package bsonxtest generates random BSON values for property tests of
// bsonx and keystring: every type, nested, with numbers crowded around the
// boundaries where types and encodings change (2^31, 2^53, 2^63, ±0, NaN,
// ±Inf, subnormals, decimals next to doubles), and pairs of values that
// differ in one small place, so that comparisons run deep before they decide.
//
// A Gen draws from a *rand.Rand; tests seed it and print the seed, and fuzz
// targets feed it the fuzzer's bytes through ByteSource.
package bsonxtest

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Gen makes random values.
type Gen struct {
	r *rand.Rand
	// MaxDepth bounds the nesting of generated documents and arrays.
	MaxDepth int
	// Malformed is the probability that Value or Pair damages a value's
	// bytes (truncates them, breaks a length, changes a type byte).
	Malformed float64
}

// New returns a Gen drawing from r, nesting up to three levels deep.
func New(r *rand.Rand) *Gen {
	return &Gen{r: r, MaxDepth: 3}
}

// ByteSource is a rand.Source that plays back fuzzer input: each Uint64
// takes its top byte from the input and the rest from a fixed PCG stream, so
// each byte steers one choice of the generator. Once the input runs out the
// PCG stream goes on alone; a source stuck at one value would hang
// math/rand's unbiasing loops.
type ByteSource struct {
	b   []byte
	pcg *rand.PCG
}

// NewByteSource plays back b.
func NewByteSource(b []byte) *ByteSource {
	return &ByteSource{b: b, pcg: rand.NewPCG(1, 2)}
}

// Uint64 implements rand.Source.
func (s *ByteSource) Uint64() uint64 {
	x := s.pcg.Uint64()
	if len(s.b) == 0 {
		return x
	}
	top := s.b[0]
	s.b = s.b[1:]
	return uint64(top)<<56 | x>>8
}

// Value returns a random value.
func (g *Gen) Value() bsoncore.Value {
	v := g.node(0).value()
	if g.r.Float64() < g.Malformed {
		v = g.damage(v)
	}
	return v
}

// Pair returns two values, the second made from the first by one or two
// small changes (a replaced leaf, an equal number of another type, an added,
// removed, renamed or moved field…), and sometimes equal to it.
func (g *Gen) Pair() (a, b bsoncore.Value) {
	n := g.node(0)
	m := n.clone()
	for range 1 + g.r.IntN(2) {
		m = g.mutate(m, 0)
	}
	a, b = n.value(), m.value()
	if g.r.Float64() < g.Malformed {
		b = g.damage(b)
	}
	return a, b
}

// Number returns a random int32, int64, double or decimal128.
func (g *Gen) Number() bsoncore.Value {
	return g.number().value()
}

// NumberPair returns two numbers that are often equal in different types or
// adjacent (one ulp, one unit, one unit in the last decimal digit) and
// otherwise independent.
func (g *Gen) NumberPair() (a, b bsoncore.Value) {
	n := g.number()
	switch g.pick(4) {
	case 0:
		return n.value(), g.sameNumber(n).value()
	case 1:
		return n.value(), g.nearNumber(n).value()
	case 2:
		return n.value(), g.nearNumber(g.sameNumber(n)).value()
	}
	return n.value(), g.number().value()
}

// node is a value under construction: a scalar's bytes, or a container's
// keys and children.
type node struct {
	t    bsoncore.Type
	data []byte   // a scalar's value bytes
	code string   // the code of a code-with-scope
	keys []string // document (or scope) field names; unused for arrays
	kids []*node
}

func (n *node) clone() *node {
	c := *n
	c.keys = slices.Clone(n.keys)
	c.kids = make([]*node, len(n.kids))
	for i, k := range n.kids {
		c.kids[i] = k.clone()
	}
	return &c
}

func (n *node) value() bsoncore.Value {
	return bsoncore.Value{Type: n.t, Data: n.appendData(nil)}
}

func (n *node) appendData(dst []byte) []byte {
	switch n.t {
	case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return n.appendDocument(dst)
	case bsoncore.TypeCodeWithScope:
		at := len(dst)
		dst = bsoncore.AppendString(append(dst, 0, 0, 0, 0), n.code)
		dst = n.appendDocument(dst)
		binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at))
		return dst
	}
	return append(dst, n.data...)
}

func (n *node) appendDocument(dst []byte) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for i, k := range n.kids {
		key := strconv.Itoa(i)
		if n.t != bsoncore.TypeArray {
			key = n.keys[i]
		}
		dst = append(dst, byte(k.t))
		dst = append(append(dst, key...), 0)
		dst = k.appendData(dst)
	}
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at))
	return dst
}

func (g *Gen) pick(n int) int { return g.r.IntN(n) }

func (g *Gen) node(depth int) *node {
	switch k := g.pick(20); {
	case k < 7:
		return g.number()
	case k < 9:
		return g.stringNode(bsoncore.TypeString)
	case k < 11 && depth < g.MaxDepth:
		return g.container(bsoncore.TypeEmbeddedDocument, depth)
	case k < 13 && depth < g.MaxDepth:
		return g.container(bsoncore.TypeArray, depth)
	}
	return g.other(depth)
}

// other makes a value of one of the less common types.
func (g *Gen) other(depth int) *node {
	switch g.pick(17) {
	case 0:
		return &node{t: bsoncore.TypeMinKey}
	case 1:
		return &node{t: bsoncore.TypeMaxKey}
	case 2:
		return &node{t: bsoncore.TypeNull}
	case 3:
		return &node{t: bsoncore.TypeUndefined}
	case 4:
		return g.stringNode(bsoncore.TypeSymbol)
	case 5:
		return g.stringNode(bsoncore.TypeJavaScript)
	case 6:
		sub := []byte{0, 2, 4, 0x80}[g.pick(4)]
		return &node{t: bsoncore.TypeBinary, data: bsoncore.AppendBinary(nil, sub, g.bytes(4))}
	case 7:
		return &node{t: bsoncore.TypeObjectID, data: g.objectID()}
	case 8:
		return &node{t: bsoncore.TypeBoolean, data: bsoncore.AppendBoolean(nil, g.pick(2) == 0)}
	case 9:
		ms := []int64{0, -1, 1, math.MinInt64, math.MaxInt64, 1700000000000, g.r.Int64() - g.r.Int64()}[g.pick(7)]
		return &node{t: bsoncore.TypeDateTime, data: bsoncore.AppendDateTime(nil, ms)}
	case 10:
		u := func() uint32 { return []uint32{0, 1, 2, math.MaxUint32, g.r.Uint32()}[g.pick(5)] }
		return &node{t: bsoncore.TypeTimestamp, data: bsoncore.AppendTimestamp(nil, u(), u())}
	case 11:
		p := []string{"", "a", "ab", "b", "a.b", "\xff"}[g.pick(6)]
		o := []string{"", "i", "im", "m", "x"}[g.pick(5)]
		return &node{t: bsoncore.TypeRegex, data: append(append(append([]byte(p), 0), o...), 0)}
	case 12:
		ns := []string{"", "a", "ab", "b", "a\x00", "db.c"}[g.pick(6)]
		data := bsoncore.AppendString(nil, ns)
		return &node{t: bsoncore.TypeDBPointer, data: append(data, g.objectID()...)}
	case 13:
		n := g.container(bsoncore.TypeEmbeddedDocument, max(depth, g.MaxDepth-1))
		n.t, n.code = bsoncore.TypeCodeWithScope, g.str()
		return n
	case 14:
		return &node{t: bsoncore.TypeBoolean, data: bsoncore.AppendBoolean(nil, true)}
	case 15:
		return g.stringNode(bsoncore.TypeString)
	}
	return g.number()
}

// str builds strings from a few pieces, so that equal strings, prefixes and
// embedded NULs are common.
func (g *Gen) str() string {
	pieces := []string{"", "a", "b", "\x00", "\xff", "ab", "é", "\x01"}
	var sb strings.Builder
	for range g.pick(4) {
		sb.WriteString(pieces[g.pick(len(pieces))])
	}
	return sb.String()
}

func (g *Gen) stringNode(t bsoncore.Type) *node {
	return &node{t: t, data: bsoncore.AppendString(nil, g.str())}
}

func (g *Gen) bytes(maxLen int) []byte {
	b := make([]byte, g.pick(maxLen+1))
	for i := range b {
		b[i] = []byte{0, 1, 0x7f, 0x80, 0xff}[g.pick(5)]
	}
	return b
}

func (g *Gen) objectID() []byte {
	oid := []byte("\x65\x00\x00\x01abcdefgh")
	oid[g.pick(12)] = byte(g.pick(3))
	return oid
}

var keyNames = []string{"", "a", "b", "ab", "_id", "\xff"}

func (g *Gen) container(t bsoncore.Type, depth int) *node {
	n := &node{t: t}
	for range g.pick(5) {
		n.keys = append(n.keys, keyNames[g.pick(len(keyNames))])
		n.kids = append(n.kids, g.node(depth+1))
	}
	return n
}

// mutate changes n (a fresh clone) in one place at or below depth.
func (g *Gen) mutate(n *node, depth int) *node {
	container := n.t == bsoncore.TypeEmbeddedDocument || n.t == bsoncore.TypeArray || n.t == bsoncore.TypeCodeWithScope
	if container && len(n.kids) > 0 && g.pick(3) > 0 {
		i := g.pick(len(n.kids))
		n.kids[i] = g.mutate(n.kids[i], depth+1)
		return n
	}
	switch k := g.pick(10); {
	case k < 3 && isNumber(n.t):
		return g.sameNumber(n)
	case k < 5 && isNumber(n.t):
		return g.nearNumber(n)
	case k < 7 && container:
		g.editContainer(n, depth)
		return n
	case k == 7:
		return n // unchanged: equal values must compare equal
	}
	return g.node(depth)
}

// editContainer adds, removes, renames or moves a field.
func (g *Gen) editContainer(n *node, depth int) {
	i := g.pick(len(n.kids) + 1)
	switch g.pick(4) {
	case 0:
		n.keys = slices.Insert(n.keys, i, keyNames[g.pick(len(keyNames))])
		n.kids = slices.Insert(n.kids, i, g.node(depth+1))
	case 1:
		if i < len(n.kids) {
			n.keys = slices.Delete(n.keys, i, i+1)
			n.kids = slices.Delete(n.kids, i, i+1)
		}
	case 2:
		if i < len(n.kids) {
			n.keys[i] = keyNames[g.pick(len(keyNames))]
		}
	case 3:
		if j := g.pick(len(n.kids) + 1); i < len(n.kids) && j < len(n.kids) {
			n.keys[i], n.keys[j] = n.keys[j], n.keys[i]
			n.kids[i], n.kids[j] = n.kids[j], n.kids[i]
		}
	}
}

func isNumber(t bsoncore.Type) bool {
	switch t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return true
	}
	return false
}

// damage breaks v's bytes in one of the ways a corrupt or hostile input can.
func (g *Gen) damage(v bsoncore.Value) bsoncore.Value {
	d := slices.Clone(v.Data)
	switch g.pick(4) {
	case 0:
		if len(d) > 0 {
			d = d[:g.pick(len(d))]
		}
	case 1:
		if len(d) > 0 {
			d[g.pick(len(d))] = []byte{0, 1, 0x7f, 0xff, 0x10}[g.pick(5)]
		}
	case 2:
		v.Type = bsoncore.Type([]byte{0, 0x14, 0x80, 0x02, 0x03, 0x04, 0x08, 0x0f}[g.pick(8)])
	case 3:
		d = append(d, byte(g.pick(256)))
	}
	v.Data = d
	return v
}

// Numbers.

var specialInt64s = []int64{
	0, 1, -1, 2, -2, 3, 127, 128, 255, 256, 1000, -1000,
	math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1,
	1 << 32, 1<<53 - 1, 1 << 53, 1<<53 + 1, -(1 << 53), -(1 << 53) - 1,
	1 << 62, 1<<62 + 1, math.MaxInt64, math.MaxInt64 - 1, math.MinInt64, math.MinInt64 + 1,
	1e15, 1e18, 999999999999999999,
}

var specialFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 0.1, 1.0 / 3, 2, 1.5, 100, 1e15, 1e22, 1e23,
	1 << 31, -(1 << 31), 1 << 53, 1<<53 + 2, -(1 << 53), 1 << 62, 0x1p63, -0x1p63, 0x1p64,
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	0x1p-1022, 0x1p-1023, 0x1p-60, 0x1p-2000 * 0, 1e-300, 1e300, 0x1.fffffffffffffp1023 / 2,
	math.NaN(), math.Inf(1), math.Inf(-1),
}

var specialDecimals = []string{
	"0", "-0", "0E+100", "-0E-6176", "1", "-1", "1.0", "1.00", "10E-1", "0.1", "-0.1", "0.5", "0.10",
	"NaN", "-NaN", "Infinity", "-Infinity", "9.999999999999999999999999999999999E+6144",
	"-9.999999999999999999999999999999999E+6144", "1E-6176", "-1E-6176", "1E+6144",
	"1E+400", "1E-400", "9007199254740993", "9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "1.7976931348623157E+308", "1.7976931348623159E+308",
	"4.9406564584124654E-324", "2.4703282292062327E-324", "0.30000000000000004",
	"0.1000000000000000055511151231257827", "0.1000000000000000055511151231257828",
	"3.333333333333333333333333333333333", "1E+30", "123456789012345678901234567890.1234",
}

func (g *Gen) number() *node {
	switch g.pick(4) {
	case 0:
		return int32Node(int32(g.int64()))
	case 1:
		return int64Node(g.int64())
	case 2:
		return doubleNode(g.float())
	}
	return g.decimalNode()
}

func (g *Gen) int64() int64 {
	switch g.pick(4) {
	case 0:
		return specialInt64s[g.pick(len(specialInt64s))] + int64(g.pick(3)) - 1
	case 1:
		return int64(g.pick(600)) - 300
	case 2:
		return g.r.Int64() >> g.pick(64) * int64(1-2*g.pick(2))
	}
	return specialInt64s[g.pick(len(specialInt64s))]
}

func (g *Gen) float() float64 {
	switch g.pick(6) {
	case 0:
		return math.Float64frombits(g.r.Uint64())
	case 1:
		return float64(g.int64())
	case 2:
		f := specialFloats[g.pick(len(specialFloats))]
		return math.Nextafter(f, []float64{math.Inf(1), math.Inf(-1)}[g.pick(2)])
	case 3:
		return float64(g.pick(2000)-1000) / float64(int(1)<<g.pick(12))
	}
	return specialFloats[g.pick(len(specialFloats))]
}

func (g *Gen) decimalNode() *node {
	switch g.pick(5) {
	case 0:
		return decimalNode(specialDecimals[g.pick(len(specialDecimals))])
	case 1: // the double next door, or its shortest decimal rendering
		f := g.float()
		if s, ok := exactDecimal(f); ok && g.pick(2) == 0 {
			return decimalNode(s)
		}
		return decimalNode(strconv.FormatFloat(f, 'e', -1, 64))
	case 2: // coefficient and exponent at random, exponent often extreme
		coef := new(big.Int).SetUint64(g.r.Uint64())
		coef.Lsh(coef, 64).Or(coef, new(big.Int).SetUint64(g.r.Uint64()))
		coef.Rsh(coef, uint(15+g.pick(128))) // at most 113 bits
		exp := []int{0, -1, 1, -6176, 6111, g.pick(12300) - 6176, g.pick(40) - 20}[g.pick(7)]
		d, ok := bson.ParseDecimal128FromBigInt(coef, exp)
		if !ok {
			return decimalNode("0")
		}
		return decimalFromBSON(d, g.pick(2) == 0)
	case 3: // a raw bit pattern: non-canonical coefficients, NaN payloads
		hi, lo := g.r.Uint64(), g.r.Uint64()
		return &node{t: bsoncore.TypeDecimal128, data: bsoncore.AppendDecimal128(nil, hi, lo)}
	}
	return decimalNode(strconv.FormatInt(g.int64(), 10) + []string{"", "E-1", "E+2", ".00", "E-20"}[g.pick(5)])
}

func int32Node(i int32) *node {
	return &node{t: bsoncore.TypeInt32, data: bsoncore.AppendInt32(nil, i)}
}

func int64Node(i int64) *node {
	return &node{t: bsoncore.TypeInt64, data: bsoncore.AppendInt64(nil, i)}
}

func doubleNode(f float64) *node {
	return &node{t: bsoncore.TypeDouble, data: bsoncore.AppendDouble(nil, f)}
}

func decimalNode(s string) *node {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		return int32Node(0)
	}
	return decimalFromBSON(d, false)
}

func decimalFromBSON(d bson.Decimal128, neg bool) *node {
	hi, lo := d.GetBytes()
	if neg {
		hi ^= 1 << 63
	}
	return &node{t: bsoncore.TypeDecimal128, data: bsoncore.AppendDecimal128(nil, hi, lo)}
}

// exactDecimal renders f exactly when 34 digits suffice.
func exactDecimal(f float64) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	s := strconv.FormatFloat(f, 'e', 767, 64)
	mant, exp, _ := strings.Cut(s, "e")
	mant = strings.TrimRight(mant, "0")
	digits := strings.Count(mant, "") - 1 - strings.Count(mant, ".") - strings.Count(mant, "-")
	if digits > 34 {
		return "", false
	}
	return strings.TrimSuffix(mant, ".") + "E" + exp, true
}

// value of a number node as a float64, for building neighbours.
func (n *node) float() (float64, bool) {
	switch n.t {
	case bsoncore.TypeInt32:
		return float64(int32(binary.LittleEndian.Uint32(n.data))), true
	case bsoncore.TypeInt64:
		return float64(int64(binary.LittleEndian.Uint64(n.data))), true
	case bsoncore.TypeDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(n.data)), true
	}
	return 0, false
}

// sameNumber returns a number equal to n in another type, where one exists.
func (g *Gen) sameNumber(n *node) *node {
	switch n.t {
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		var i int64
		if n.t == bsoncore.TypeInt32 {
			i = int64(int32(binary.LittleEndian.Uint32(n.data)))
		} else {
			i = int64(binary.LittleEndian.Uint64(n.data))
		}
		switch g.pick(4) {
		case 0:
			if int64(int32(i)) == i {
				return int32Node(int32(i))
			}
		case 1:
			return int64Node(i)
		case 2:
			if f := float64(i); f < 0x1p63 && int64(f) == i {
				return doubleNode(f)
			}
		}
		return decimalNode(strconv.FormatInt(i, 10) + []string{"", ".0", "00E-2"}[g.pick(3)])
	case bsoncore.TypeDouble:
		f, _ := n.float()
		if i := int64(f); float64(i) == f && f < 0x1p63 && g.pick(2) == 0 {
			if int64(int32(i)) == i {
				return int32Node(int32(i))
			}
			return int64Node(i)
		}
		if s, ok := exactDecimal(f); ok {
			return decimalNode(s)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return decimalNode(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case bsoncore.TypeDecimal128:
		d := bson.NewDecimal128(binary.LittleEndian.Uint64(n.data[8:]), binary.LittleEndian.Uint64(n.data))
		if f, err := strconv.ParseFloat(d.String(), 64); err == nil {
			if s, ok := exactDecimal(f); ok && strings.EqualFold(normalizeDecimal(s), normalizeDecimal(d.String())) {
				return doubleNode(f)
			}
		}
		// Same value, other cohort member: scale by ten where room allows.
		if bi, exp, err := d.BigInt(); err == nil && bi.Sign() != 0 {
			bi.Mul(bi, big.NewInt(10))
			if d2, ok := bson.ParseDecimal128FromBigInt(bi, exp-1); ok {
				return decimalFromBSON(d2, false)
			}
		}
	}
	return n
}

// normalizeDecimal puts a decimal string in a form where equal finite
// values are equal strings (sign, significant digits, adjusted exponent).
func normalizeDecimal(s string) string {
	r, ok := new(big.Rat).SetString(strings.Replace(strings.ToLower(s), "e+", "e", 1))
	if !ok {
		return s
	}
	return r.RatString()
}

// nearNumber returns a number just beside n.
func (g *Gen) nearNumber(n *node) *node {
	switch n.t {
	case bsoncore.TypeInt32:
		return int32Node(int32(binary.LittleEndian.Uint32(n.data)) + int32(g.pick(3)) - 1)
	case bsoncore.TypeInt64:
		return int64Node(int64(binary.LittleEndian.Uint64(n.data)) + int64(g.pick(3)) - 1)
	case bsoncore.TypeDouble:
		f, _ := n.float()
		return doubleNode(math.Nextafter(f, []float64{math.Inf(1), math.Inf(-1)}[g.pick(2)]))
	}
	d := bson.NewDecimal128(binary.LittleEndian.Uint64(n.data[8:]), binary.LittleEndian.Uint64(n.data))
	if bi, exp, err := d.BigInt(); err == nil {
		bi.Add(bi, big.NewInt(int64(g.pick(3))-1))
		if d2, ok := bson.ParseDecimal128FromBigInt(bi, exp); ok {
			return decimalFromBSON(d2, false)
		}
	}
	return n
}

// Document returns a document of fewer than maxFields fields, each named
// from names (repeats included) with a value from Value (so damaged as
// often as Malformed says), its whole bytes then sometimes damaged too
// (DamageDocument): input for walks that must agree with bsoncore's.
func (g *Gen) Document(names []string, maxFields int) []byte {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	for n := g.r.IntN(maxFields); n > 0; n-- {
		doc = bsoncore.AppendValueElement(doc, names[g.r.IntN(len(names))], g.Value())
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return g.DamageDocument(doc)
}

// DamageDocument, one time in two, damages a document's bytes: a byte
// changed, the end cut off, or the length read wrong by up to 4 either way.
func (g *Gen) DamageDocument(doc []byte) []byte {
	switch g.r.IntN(6) {
	case 0:
		doc[g.r.IntN(len(doc))] = byte(g.r.IntN(256))
	case 1:
		doc = doc[:g.r.IntN(len(doc))]
	case 2:
		binary.LittleEndian.PutUint32(doc, uint32(len(doc)+g.r.IntN(9)-4))
	}
	return doc
}

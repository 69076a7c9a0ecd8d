package keystring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ErrCorrupt is wrapped by every error of Len and Decode: the bytes are not
// an encoding made by Append or AppendDesc.
var ErrCorrupt = errors.New("keystring: corrupt key")

// The errors are made once: Len runs on hot paths, even when it fails.
var (
	errTruncated   = fmt.Errorf("%w: truncated", ErrCorrupt)
	errTag         = fmt.Errorf("%w: unknown type tag", ErrCorrupt)
	errEscape      = fmt.Errorf("%w: bad escape in string", ErrCorrupt)
	errRank        = fmt.Errorf("%w: field rank does not match its value", ErrCorrupt)
	errKeyNUL      = fmt.Errorf("%w: NUL in field name", ErrCorrupt)
	errDepth       = fmt.Errorf("%w: nested deeper than bsonx.MaxDepth", ErrCorrupt)
	errLength      = fmt.Errorf("%w: bad length", ErrCorrupt)
	errTooLarge    = fmt.Errorf("%w: value too large for BSON", ErrCorrupt)
	errNumber      = fmt.Errorf("%w: bad number", ErrCorrupt)
	errNonCanon    = fmt.Errorf("%w: non-canonical number", ErrCorrupt)
	errNotAKeyByte = fmt.Errorf("%w: first byte is 0x00 or 0xff", ErrCorrupt)
)

// reader walks an encoding, undoing the complement of descending encodings
// (and of negative numbers' magnitudes) as it reads.
type reader struct {
	b   []byte
	pos int
	inv byte // 0x00, or 0xff while reading complemented bytes
}

// start sets r to read b from its first byte, which tells the direction.
// (Initialising in place rather than returning a reader keeps Len on tiny
// keys at half the time: the copy stalled the loads that followed it.)
func (r *reader) start(b []byte) error {
	r.b, r.pos, r.inv = b, 0, 0
	switch {
	case len(b) == 0:
		return errTruncated
	case b[0] == 0x00 || b[0] == 0xff:
		return errNotAKeyByte
	case b[0]&descBit != 0:
		r.inv = 0xff
	}
	return nil
}

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.pos] ^ r.inv
	r.pos++
	return c, nil
}

func (r *reader) peek() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errTruncated
	}
	return r.b[r.pos] ^ r.inv, nil
}

func (r *reader) skip(n int) error {
	if n > len(r.b)-r.pos {
		return errTruncated
	}
	r.pos += n
	return nil
}

// appendN appends the next n bytes, uncomplemented, to dst.
func (r *reader) appendN(dst []byte, n int) ([]byte, error) {
	if n > len(r.b)-r.pos {
		return dst, errTruncated
	}
	for _, c := range r.b[r.pos : r.pos+n] {
		dst = append(dst, c^r.inv)
	}
	r.pos += n
	return dst, nil
}

// escaped reads an escaped string, appending its bytes to dst when keep is
// set. hasNUL reports an escaped NUL.
func (r *reader) escaped(dst []byte, keep bool) (out []byte, hasNUL bool, err error) {
	for {
		i := bytes.IndexByte(r.b[r.pos:], r.inv) // the encoded 0x00
		if i < 0 {
			return dst, hasNUL, errTruncated
		}
		if keep {
			dst, _ = r.appendN(dst, i)
		} else {
			r.pos += i
		}
		r.pos++
		c, err := r.byte()
		switch {
		case err != nil:
			return dst, hasNUL, err
		case c == 0x00:
			return dst, hasNUL, nil
		case c != 0xff:
			return dst, hasNUL, errEscape
		}
		hasNUL = true
		if keep {
			dst = append(dst, 0)
		}
	}
}

// length reads a number written by appendLength, rejecting longer forms
// than needed.
func (r *reader) length() (int, error) {
	c, err := r.byte()
	if err != nil {
		return 0, err
	}
	var extra int
	var n uint64
	switch {
	case c < 0x80:
		return int(c), nil
	case c < 0xc0:
		extra, n = 1, uint64(c&0x3f)
	case c < 0xe0:
		extra, n = 2, uint64(c&0x1f)
	case c < 0xf0:
		extra, n = 3, uint64(c&0x0f)
	case c == 0xf0:
		extra = 4
	default:
		return 0, errLength
	}
	for range extra {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		n = n<<8 | uint64(c)
	}
	if n < 1<<(7*extra) { // fits a shorter form: not what appendLength writes
		return 0, errLength
	}
	return int(n), nil
}

// Len reports how many bytes the first encoding in b occupies, be it
// ascending or descending, so that a compound key can be split into its
// parts. It checks the structure (tags, terminators, lengths) without
// building the value and without allocating; it never panics. Decode checks
// more (canonical numbers, field ranks) and so rejects some bytes Len
// accepts; where both succeed they agree.
func Len(b []byte) (int, error) {
	var r reader
	if err := r.start(b); err != nil {
		return 0, err
	}
	if err := r.skipValue(1); err != nil {
		return 0, err
	}
	return r.pos, nil
}

// skipValue moves past one encoded value at nesting depth depth.
func (r *reader) skipValue(depth int) error {
	tag, err := r.byte()
	if err != nil {
		return err
	}
	switch tag {
	case tagMinKey, tagUndefined, tagNull, tagMaxKey, tagFalse, tagTrue, tagNaN, tagNegInf, tagZero, tagPosInf:
		return nil
	case tagString, tagCode:
		_, _, err := r.escaped(nil, false)
		return err
	case tagObject:
		return r.skipFields(depth + 1)
	case tagArray:
		if depth+1 > bsonx.MaxDepth+1 {
			return errDepth
		}
		for {
			c, err := r.peek()
			if err != nil {
				return err
			}
			if c == tagEnd {
				r.pos++
				return nil
			}
			if err := r.skipValue(depth + 1); err != nil {
				return err
			}
		}
	case tagBinary:
		n, err := r.length()
		if err != nil {
			return err
		}
		return r.skip(1 + n)
	case tagObjectID:
		return r.skip(12)
	case tagDate, tagTimestamp:
		return r.skip(8)
	case tagRegex:
		for range 2 {
			i := bytes.IndexByte(r.b[r.pos:], r.inv)
			if i < 0 {
				return errTruncated
			}
			r.pos += i + 1
		}
		return nil
	case tagDBPointer:
		n, err := r.length()
		if err != nil {
			return err
		}
		return r.skip(n + 12)
	case tagCodeWithScope:
		if _, _, err := r.escaped(nil, false); err != nil {
			return err
		}
		return r.skipFields(depth + 1)
	}
	if tag > tagNegInf && tag < tagPosInf {
		return r.skipMagnitude(tag)
	}
	return errTag
}

// skipMagnitude moves past the chunks and tail of a finite nonzero number
// whose tag has been read. The "more" bit is the low bit of each chunk,
// complemented in negative numbers.
func (r *reader) skipMagnitude(tag byte) error {
	c, more := int(tag)-tagPosFirst, byte(1)
	if tag < tagZero {
		c, more = tagNegFirst+numClasses-1-int(tag), 0
	}
	for range magClasses[c].maxChunks() {
		b, err := r.byte()
		if err != nil {
			return err
		}
		if b&1 != more {
			return nil
		}
	}
	// All chunks said "more": a decimal tail follows, 2 bytes of exponent
	// and digit pairs up to a terminator (0x00, or 0xff when negative).
	if err := r.skip(2); err != nil {
		return err
	}
	end := more - 1 // 0x00 when positive, 0xff when negative
	for range len(finite{}.pairs) + 1 {
		b, err := r.byte()
		if err != nil {
			return err
		}
		if b == end {
			return nil
		}
		if p := b ^ end; p > 100 {
			return errNumber
		}
	}
	return errNumber
}

// skipFields moves past a document's elements, which sit at depth depth,
// and its terminator.
func (r *reader) skipFields(depth int) error {
	if depth > bsonx.MaxDepth+1 {
		return errDepth
	}
	for {
		rank, err := r.byte()
		if err != nil {
			return err
		}
		if rank == tagEnd {
			return nil
		}
		if _, _, err := r.escaped(nil, false); err != nil {
			return err
		}
		if err := r.skipValue(depth); err != nil {
			return err
		}
	}
}

// magnitude reads the chunks (and tail) of the finite nonzero number whose
// tag has been read. It does not check that they are canonical.
func (r *reader) magnitude(tag byte) (finite, error) {
	neg := tag < tagZero
	c := int(tag) - tagPosFirst
	if neg {
		// Negative magnitudes are stored complemented.
		c = tagNegFirst + numClasses - 1 - int(tag)
		r.inv ^= 0xff
	}
	m, err := r.unsignedMagnitude(magClasses[c])
	if neg {
		r.inv ^= 0xff
	}
	m.neg = neg
	return m, err
}

// unsignedMagnitude reads the chunks and tail of a magnitude of class.
func (r *reader) unsignedMagnitude(class magClass) (m finite, err error) {
	var hi, lo uint64 // the stream, left-aligned
	p := 0            // bits read
	for i := 0; ; i++ {
		b, err := r.byte()
		if err != nil {
			return m, err
		}
		chunk := uint64(b >> 1)
		switch {
		case p <= 57:
			hi |= chunk << (57 - p)
		case p >= 64:
			lo |= chunk << (121 - p)
		default:
			hi |= chunk >> (p - 57)
			lo |= chunk << (121 - p)
		}
		p += 7
		if b&1 == 0 {
			break
		}
		if i+1 == class.maxChunks() {
			m.inexact = true
			break
		}
	}
	s := class.bits
	m.e = class.lo + int(hi>>(64-s))
	m.frac = (hi<<s | lo>>(64-s)) >> 2
	if !m.inexact {
		return m, nil
	}
	var a [2]byte
	for i := range a {
		if a[i], err = r.byte(); err != nil {
			return m, err
		}
	}
	m.adj = int(binary.BigEndian.Uint16(a[:])) - decimalBias
	for {
		pair, err := r.byte()
		if err != nil {
			return m, err
		}
		if pair == 0 {
			return m, nil
		}
		if pair > 100 || m.npairs == len(m.pairs) {
			return m, errNumber
		}
		m.pairs[m.npairs] = pair
		m.npairs++
	}
}

// finite is a decoded finite nonzero number: its binary form and, when
// inexact, the tail: adjusted exponent and digit pairs as stored (1+10a+b).
type finite struct {
	binaryForm
	neg    bool
	adj    int
	pairs  [decimalDigits / 2]byte
	npairs int
}

// Decode decodes the first encoding in b (ascending or descending),
// returning the value and the number of bytes it occupies. It never panics
// and rejects any bytes that Append and AppendDesc would not produce.
//
// Every value round-trips to one that bsonx.Compare finds equal, and all but
// numbers and symbols round-trip exactly. Numbers come back in the narrowest
// type that holds the value exactly: int32, then int64, then double, then
// decimal128 (so int64 5, double 5.0 and decimal 5.00 all decode as int32 5;
// NaN and ±Inf decode as doubles). Symbols come back as strings: they compare
// equal, so they encode alike. Array keys are renumbered "0", "1", ….
func Decode(b []byte) (bsoncore.Value, int, error) {
	var r reader
	if err := r.start(b); err != nil {
		return bsoncore.Value{}, 0, err
	}
	// One allocation: BSON is at most about twice the size of its key
	// (a 2-byte small integer becomes a 4-byte int32, a key's 2-byte
	// terminator a 4-byte length).
	n, err := Len(b)
	if err != nil {
		return bsoncore.Value{}, 0, err
	}
	t, data, err := r.decodeValue(make([]byte, 0, 2*n+8), 1)
	if err != nil {
		return bsoncore.Value{}, 0, err
	}
	return bsoncore.Value{Type: t, Data: data}, r.pos, nil
}

// decodeValue decodes one value at nesting depth depth, appending its BSON
// bytes to dst.
func (r *reader) decodeValue(dst []byte, depth int) (bsoncore.Type, []byte, error) {
	start := r.pos
	tag, err := r.byte()
	if err != nil {
		return 0, dst, err
	}
	switch tag {
	case tagMinKey:
		return bsoncore.TypeMinKey, dst, nil
	case tagUndefined:
		return bsoncore.TypeUndefined, dst, nil
	case tagNull:
		return bsoncore.TypeNull, dst, nil
	case tagMaxKey:
		return bsoncore.TypeMaxKey, dst, nil
	case tagFalse:
		return bsoncore.TypeBoolean, append(dst, 0), nil
	case tagTrue:
		return bsoncore.TypeBoolean, append(dst, 1), nil
	case tagString:
		dst, err = r.decodeString(dst)
		return bsoncore.TypeString, dst, err
	case tagCode:
		dst, err = r.decodeString(dst)
		return bsoncore.TypeJavaScript, dst, err
	case tagObject:
		dst, err = r.decodeFields(dst, depth+1)
		return bsoncore.TypeEmbeddedDocument, dst, err
	case tagArray:
		dst, err = r.decodeItems(dst, depth+1)
		return bsoncore.TypeArray, dst, err
	case tagBinary:
		n, err := r.length()
		if err != nil {
			return 0, dst, err
		}
		if n > math.MaxInt32-5 {
			return 0, dst, errTooLarge
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
		dst, err = r.appendN(dst, 1+n)
		return bsoncore.TypeBinary, dst, err
	case tagObjectID:
		dst, err = r.appendN(dst, 12)
		return bsoncore.TypeObjectID, dst, err
	case tagDate:
		var u [8]byte
		if _, err := r.appendN(u[:0], 8); err != nil {
			return 0, dst, err
		}
		return bsoncore.TypeDateTime, binary.LittleEndian.AppendUint64(dst, binary.BigEndian.Uint64(u[:])^1<<63), nil
	case tagTimestamp:
		var u [8]byte
		if _, err := r.appendN(u[:0], 8); err != nil {
			return 0, dst, err
		}
		return bsoncore.TypeTimestamp, binary.LittleEndian.AppendUint64(dst, binary.BigEndian.Uint64(u[:])), nil
	case tagRegex:
		for range 2 {
			i := bytes.IndexByte(r.b[r.pos:], r.inv)
			if i < 0 {
				return 0, dst, errTruncated
			}
			dst, _ = r.appendN(dst, i+1)
		}
		return bsoncore.TypeRegex, dst, nil
	case tagDBPointer:
		n, err := r.length()
		if err != nil {
			return 0, dst, err
		}
		if n > math.MaxInt32-1 {
			return 0, dst, errTooLarge
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n+1))
		if dst, err = r.appendN(dst, n); err != nil {
			return 0, dst, err
		}
		dst, err = r.appendN(append(dst, 0), 12)
		return bsoncore.TypeDBPointer, dst, err
	case tagCodeWithScope:
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		if dst, err = r.decodeString(dst); err != nil {
			return 0, dst, err
		}
		if dst, err = r.decodeFields(dst, depth+1); err != nil {
			return 0, dst, err
		}
		dst, err = patchLength(dst, at)
		return bsoncore.TypeCodeWithScope, dst, err
	}
	if tag >= tagNaN && tag <= tagPosInf {
		return r.decodeNumber(dst, tag, start)
	}
	return 0, dst, errTag
}

// patchLength writes the int32 length of what dst holds from at onward.
func patchLength(dst []byte, at int) ([]byte, error) {
	n := len(dst) - at
	if n > math.MaxInt32 {
		return dst, errTooLarge
	}
	binary.LittleEndian.PutUint32(dst[at:], uint32(n))
	return dst, nil
}

func (r *reader) decodeString(dst []byte) ([]byte, error) {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, _, err := r.escaped(dst, true)
	if err != nil {
		return dst, err
	}
	dst = append(dst, 0)
	n := len(dst) - at - 4
	if n > math.MaxInt32 {
		return dst, errTooLarge
	}
	binary.LittleEndian.PutUint32(dst[at:], uint32(n))
	return dst, nil
}

// decodeFields decodes a document's elements, at depth depth, into a BSON
// document appended to dst.
func (r *reader) decodeFields(dst []byte, depth int) ([]byte, error) {
	if depth > bsonx.MaxDepth+1 {
		return dst, errDepth
	}
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for {
		rank, err := r.byte()
		if err != nil {
			return dst, err
		}
		if rank == tagEnd {
			return patchLength(append(dst, 0), at)
		}
		typeAt := len(dst)
		dst = append(dst, 0)
		var hasNUL bool
		if dst, hasNUL, err = r.escaped(dst, true); err != nil {
			return dst, err
		}
		if hasNUL {
			return dst, errKeyNUL
		}
		dst = append(dst, 0)
		valueTag, err := r.peek()
		if err != nil {
			return dst, err
		}
		if rankOfTag(valueTag) != rank {
			return dst, errRank
		}
		var t bsoncore.Type
		if t, dst, err = r.decodeValue(dst, depth); err != nil {
			return dst, err
		}
		dst[typeAt] = byte(t)
	}
}

// decodeItems decodes an array's values, at depth depth, into a BSON array
// appended to dst.
func (r *reader) decodeItems(dst []byte, depth int) ([]byte, error) {
	if depth > bsonx.MaxDepth+1 {
		return dst, errDepth
	}
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for i := 0; ; i++ {
		c, err := r.peek()
		if err != nil {
			return dst, err
		}
		if c == tagEnd {
			r.pos++
			return patchLength(append(dst, 0), at)
		}
		typeAt := len(dst)
		dst = append(strconv.AppendInt(append(dst, 0), int64(i), 10), 0)
		var t bsoncore.Type
		if t, dst, err = r.decodeValue(dst, depth); err != nil {
			return dst, err
		}
		dst[typeAt] = byte(t)
	}
}

// decodeNumber decodes the number whose tag, at start, has been read. The
// chunk stream admits encodings Append never writes (trailing zero bits,
// a tail that disagrees with the chunks); rather than check each rule, the
// decoded number is encoded again and must reproduce the input.
func (r *reader) decodeNumber(dst []byte, tag byte, start int) (bsoncore.Type, []byte, error) {
	var t bsoncore.Type
	at := len(dst)
	switch tag {
	case tagNaN:
		t, dst = bsoncore.TypeDouble, bsoncore.AppendDouble(dst, math.NaN())
	case tagNegInf:
		t, dst = bsoncore.TypeDouble, bsoncore.AppendDouble(dst, math.Inf(-1))
	case tagPosInf:
		t, dst = bsoncore.TypeDouble, bsoncore.AppendDouble(dst, math.Inf(1))
	case tagZero:
		t, dst = bsoncore.TypeInt32, bsoncore.AppendInt32(dst, 0)
	default:
		m, err := r.magnitude(tag)
		if err != nil {
			return 0, dst, err
		}
		if t, dst, err = m.appendBSON(dst); err != nil {
			return 0, dst, err
		}
	}
	var buf [48]byte
	again := appendNumber(buf[:0], t, dst[at:])
	if len(again) != r.pos-start {
		return 0, dst, errNonCanon
	}
	for i, c := range again {
		if c != r.b[start+i]^r.inv {
			return 0, dst, errNonCanon
		}
	}
	return t, dst, nil
}

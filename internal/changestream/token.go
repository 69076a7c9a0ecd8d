package changestream

import (
	"bytes"
	"encoding/hex"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// tokenVersion is MongoDB's resume token version since 4.2 (v2 tokens with
// tokenType, fromInvalidate and an eventIdentifier).
const tokenVersion = 2

// Token types, as MongoDB numbers them.
const (
	highWaterMark = 0
	eventToken    = 128
)

// Token is a resume token's data: MongoDB's ResumeTokenData.
type Token struct {
	ClusterTime hlc.Timestamp
	// HighWater marks a high water mark token (tokenType 0): "every event
	// before ClusterTime was seen"; otherwise an event's (tokenType 128).
	HighWater bool
	// TxnOpIndex is the event's position in its applyOps entry (0 for an
	// entry that is not one).
	TxnOpIndex int32
	// FromInvalidate marks an invalidate event's token (for startAfter).
	FromInvalidate bool
	// UUID is the event's collection UUID (nil for none).
	UUID []byte
	// EventID is the eventIdentifier: {operationType, documentKey} for a
	// document's event, {operationType} for others; nil in a high water
	// mark.
	EventID bsoncore.Document
	// Fragment, when HasFragment, is the index (from 0) of the fragment of
	// a split event ($changeStreamSplitLargeEvent) the token is of.
	Fragment    int32
	HasFragment bool
}

// pos is where the token lies in the stream.
func (t Token) pos() position {
	if t.HighWater {
		// Every event at or after ClusterTime is still to come: resume
		// after the last position before it.
		return position{ts: t.ClusterTime - 1, idx: maxIdx, inv: true}
	}
	return position{ts: t.ClusterTime, idx: t.TxnOpIndex, inv: t.FromInvalidate}
}

// Encode returns the token's _data: the fields in MongoDB's order
// (clusterTime, version, tokenType, txnOpIndex, fromInvalidate, uuid,
// eventIdentifier), each encoded by package keystring, hex in upper case.
func (t Token) Encode() string {
	var buf [128]byte
	return string(appendUpperHex(nil, t.appendKeyString(buf[:0])))
}

// appendKeyString appends the token's fields, keystring-encoded, to dst.
// Every change event encodes its token (Doc): the scalar fields go through
// one small stack buffer rather than a value each.
func (t Token) appendKeyString(dst []byte) []byte {
	var v [32]byte // the largest: a UUID's binary value (21 bytes)
	b := keystring.Append(dst, bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(v[:0], t.ClusterTime.T(), t.ClusterTime.I())})
	tt := int32(eventToken)
	if t.HighWater {
		tt = highWaterMark
	}
	for _, n := range [...]int32{tokenVersion, tt, t.TxnOpIndex} {
		b = keystring.Append(b, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(v[:0], n)})
	}
	b = keystring.Append(b, bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(v[:0], t.FromInvalidate)})
	if t.UUID != nil {
		b = keystring.Append(b, bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(v[:0], 4, t.UUID)})
	}
	if t.EventID != nil {
		b = keystring.Append(b, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: t.EventID})
	}
	if t.HasFragment {
		b = keystring.Append(b, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(v[:0], t.Fragment)})
	}
	return b
}

const upperHex = "0123456789ABCDEF"

func appendUpperHex(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, upperHex[c>>4], upperHex[c&0xf])
	}
	return dst
}

// Doc is the token as an event's _id and a postBatchResumeToken: {_data}.
func (t Token) Doc() bsoncore.Document {
	d, _ := t.docWith(nil)
	return d
}

// docWith is Doc in one allocation, encoding the fields in scratch, which
// it returns (grown) for the next token's.
func (t Token) docWith(scratch []byte) (bsoncore.Document, []byte) {
	ks := t.appendKeyString(scratch[:0])
	const key = "_data"
	// {_data: <string>}: length, type, key, string length, hex, NUL, NUL.
	n := 4 + 1 + len(key) + 1 + 4 + 2*len(ks) + 1 + 1
	d := make([]byte, 0, n)
	d = bsoncore.AppendInt32(d, int32(n))
	d = append(d, byte(bsoncore.TypeString))
	d = append(d, key...)
	d = append(d, 0)
	d = bsoncore.AppendInt32(d, int32(2*len(ks)+1))
	d = appendUpperHex(d, ks)
	return append(d, 0, 0), ks
}

func invalidToken(format string, args ...any) error {
	return mongoerr.New(mongoerr.InvalidResumeToken, format, args...)
}

// ParseToken reads a resumeAfter or startAfter value: {_data: <hex>}
// holding what Encode writes. Anything else is InvalidResumeToken or
// FailedToParse, as MongoDB answers.
func ParseToken(v bsoncore.Value) (Token, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return Token{}, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'resumeAfter' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	els, err := d.Elements()
	if err != nil || len(els) == 0 {
		return Token{}, invalidToken("Bad resume token: _data of missing or of wrong type. Expected string, got %s", d)
	}
	var data string
	for _, e := range els {
		switch e.Key() {
		case "_data":
			s, ok := e.Value().StringValueOK()
			if !ok {
				return Token{}, invalidToken("Bad resume token: _data of missing or of wrong type. Expected string, got %s", d)
			}
			data = s
		case "_typeBits":
		default:
			return Token{}, invalidToken("Bad resume token: unknown field '%s' in %s", e.Key(), d)
		}
	}
	b, err := hex.DecodeString(data)
	if err != nil || data == "" {
		return Token{}, mongoerr.New(mongoerr.FailedToParse, "resume token string was not a valid hex string: %q", data)
	}
	return decodeToken(b, d)
}

func decodeToken(b []byte, raw bsoncore.Document) (Token, error) {
	bad := func() (Token, error) {
		return Token{}, invalidToken("Bad resume token: the token could not be decoded: %s", raw)
	}
	var vals []bsoncore.Value
	for len(b) > 0 {
		v, n, err := keystring.Decode(b)
		if err != nil || n <= 0 {
			return bad()
		}
		vals = append(vals, v)
		b = b[n:]
	}
	if len(vals) < 5 {
		return bad()
	}
	var t Token
	ts, inc, ok := vals[0].TimestampOK()
	if !ok {
		return bad()
	}
	t.ClusterTime = hlc.New(ts, inc)
	if n, ok := vals[1].AsInt64OK(); !ok || n != tokenVersion {
		return Token{}, invalidToken("Invalid Resume Token: only version %d tokens are accepted: %s", tokenVersion, raw)
	}
	switch n, _ := vals[2].AsInt64OK(); n {
	case highWaterMark:
		t.HighWater = true
	case eventToken:
	default:
		return bad()
	}
	n, ok := vals[3].AsInt64OK()
	if !ok || n < 0 {
		return Token{}, invalidToken("Invalid Resume Token: txnOpIndex should be non-negative: %s", raw)
	}
	t.TxnOpIndex = int32(n)
	if t.FromInvalidate, ok = vals[4].BooleanOK(); !ok {
		return Token{}, invalidToken("Resume Token fromInvalidate is not a boolean: %s", raw)
	}
	rest := vals[5:]
	if len(rest) > 0 && rest[0].Type == bsoncore.TypeBinary {
		_, data, _ := rest[0].BinaryOK()
		t.UUID = bytes.Clone(data)
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0].Type == bsoncore.TypeEmbeddedDocument {
		t.EventID, _ = rest[0].DocumentOK()
		rest = rest[1:]
	}
	if len(rest) > 0 && t.EventID != nil && !t.HighWater {
		n, ok := rest[0].AsInt64OK()
		if !ok || n < 0 || n > math.MaxInt32 {
			return bad()
		}
		t.Fragment, t.HasFragment = int32(n), true
		rest = rest[1:]
	}
	if len(rest) > 0 {
		return bad()
	}
	return t, nil
}

func typeName(t bsoncore.Type) string { return bsonx.TypeName(t) }

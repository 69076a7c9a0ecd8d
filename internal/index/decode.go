package index

import (
	"errors"
	"fmt"

	"github.com/cairndb/cairn/internal/keystring"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ErrCorruptKey is wrapped by DecodeKey's errors: the bytes are not a key
// of this index.
var ErrCorruptKey = errors.New("index: corrupt key")

// DecodeKey decodes the values of an index key made by Keys: one per key
// pattern field (the hash, an int64, for a hashed field; the path, then the
// value, for a wildcard index), in key pattern order. rest is what follows
// them (the _id suffix the engine appends to non-unique keys). Descending
// parts come back as values, their bytes un-complemented by
// keystring.Decode; a part whose direction is not the field's is corrupt.
// Numbers come back in the narrowest type that holds them exactly (see
// keystring.Decode), symbols as strings, missing fields as null;
// DecodeKeyTyped gives back the stored values, from the entry's type bits.
func (s *Spec) DecodeKey(key []byte) (vals []bsoncore.Value, rest []byte, err error) {
	n := s.KeyParts()
	vals = make([]bsoncore.Value, 0, n)
	for i := range n {
		if len(key) == 0 {
			return nil, nil, fmt.Errorf("%w: %d of %d parts", ErrCorruptKey, i, n)
		}
		if desc := key[0] >= 0x80; desc != s.partDescending(i) {
			return nil, nil, fmt.Errorf("%w: part %d has the wrong direction", ErrCorruptKey, i)
		}
		v, l, err := keystring.Decode(key)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: part %d: %w", ErrCorruptKey, i, err)
		}
		vals = append(vals, v)
		key = key[l:]
	}
	return vals, key, nil
}

// partDescending reports whether the i-th encoded part of a key is
// descending.
func (s *Spec) partDescending(i int) bool {
	if s.gen == genWildcard {
		return i == 1 && s.valDesc
	}
	return s.KeyPattern[i].Kind == Descending
}

// DecodeKeyTyped is DecodeKey with the values restored exactly from the
// entry's type bits (Spec.KeysAndTypeBits): numbers in their stored types,
// symbols, and a missing field as the zero Value (Type 0) instead of null.
func (s *Spec) DecodeKeyTyped(key, typeBits []byte) (vals []bsoncore.Value, rest []byte, err error) {
	vals, rest, err = s.DecodeKey(key)
	if err != nil || len(typeBits) == 0 { // empty bits change nothing
		return vals, rest, err
	}
	r := keystring.NewTypeBitsReader(typeBits)
	for i, v := range vals {
		if vals[i], err = r.Retype(v); err != nil {
			return nil, nil, fmt.Errorf("%w: part %d: %w", ErrCorruptKey, i, err)
		}
	}
	return vals, rest, nil
}

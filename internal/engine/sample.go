package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/storage"
)

// Sample returns up to n documents of the reader's collection chosen at
// random, reading n documents: a collection of at most sampleKeyWalk keys
// is sampled uniformly by a reservoir over its keys (walking keys only;
// the chosen documents are read at the end); a larger one by seeks to
// random keys between its first and last _id (seekSample), which reads
// O(n) keys but favours documents after gaps in the key space — with
// keystrings, a number's byte length is part of its key, so small integer
// _ids sit in a wide stretch of key space (as a random cursor's bias). ctx
// ends the sampling with its error.
func (r *Reader) Sample(ctx context.Context, n int, rng *rand.Rand) ([]bsoncore.Document, error) {
	if r.coll == nil || n <= 0 {
		return nil, nil
	}
	prefix := storage.Prefix(nil, storage.SpaceDocument, r.coll.ID)
	it, err := r.snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var keys [][]byte
	seen := 0
	for ok := it.First(); ok; ok = it.Next() {
		if seen%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		seen++
		if seen > max(sampleKeyWalk, 4*n) {
			return r.seekSample(ctx, it, prefix, n, rng)
		}
		slot := len(keys)
		if len(keys) >= n {
			slot = rng.IntN(seen)
			if slot >= n {
				continue
			}
		}
		k := bytes.Clone(it.Key())
		if slot == len(keys) {
			keys = append(keys, k)
		} else {
			keys[slot] = k
		}
	}
	out := make([]bsoncore.Document, 0, len(keys))
	for _, k := range keys {
		if !it.SeekGE(k) || !bytes.Equal(it.Key(), k) {
			continue // the snapshot holds every key walked
		}
		v, err := it.Value()
		if err != nil {
			return nil, err
		}
		out = append(out, bytes.Clone(v))
	}
	return out, nil
}

// sampleKeyWalk is how many keys Sample walks for a uniform sample before
// it turns to seeks: about a tenth of a second of key iteration.
var sampleKeyWalk = 1 << 20

// seekSample draws n documents by seeking to random keys between the
// collection's first and last keys, each document taken once.
func (r *Reader) seekSample(ctx context.Context, it *storage.Iter, prefix []byte, n int, rng *rand.Rand) ([]bsoncore.Document, error) {
	if !it.First() {
		return nil, nil
	}
	first := bytes.Clone(it.Key())
	if !it.Last() {
		return nil, nil
	}
	last := bytes.Clone(it.Key())
	common := 0
	for common < len(first) && common < len(last) && first[common] == last[common] {
		common++
	}
	lo, hi := window(first[common:]), window(last[common:])
	taken := map[string]bool{}
	var out []bsoncore.Document
	key := make([]byte, 0, common+8)
	for tries := 0; len(out) < n && tries < 4*n; tries++ {
		if tries%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		pick := lo + rng.Uint64()
		if span := hi - lo; span < math.MaxUint64 {
			pick = lo + rng.Uint64N(span+1)
		}
		key = binary.BigEndian.AppendUint64(append(key[:0], first[:common]...), pick)
		if !it.SeekGE(key) || taken[string(it.Key())] {
			continue
		}
		taken[string(it.Key())] = true
		v, err := it.Value()
		if err != nil {
			return nil, err
		}
		out = append(out, bytes.Clone(v))
	}
	return out, nil
}

// window reads up to 8 bytes of b as a big-endian number, padding with
// zeros: where a key falls between the first and last keys.
func window(b []byte) uint64 {
	var w [8]byte
	copy(w[:], b)
	return binary.BigEndian.Uint64(w[:])
}

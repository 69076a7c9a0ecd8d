package agg

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$sample", parseSample) }

// sampleStage is $sample {size: n}: n documents chosen uniformly at random
// without replacement (all of them, shuffled, when the input has fewer),
// by reservoir sampling. Options.Seed makes the choice reproducible.
type sampleStage struct{ size int64 }

func parseSample(arg bsoncore.Value, _ *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeSampleNotObject, "the $sample stage specification must be an object")
	}
	s := &sampleStage{size: -1}
	for _, f := range fieldsOf(arg) {
		if f.Name != "size" {
			return nil, errorf(codeSampleUnknownOption, "unrecognized option to $sample: %s", f.Name)
		}
		if !isNumber(f.Value) {
			return nil, errorf(codeSampleSizeType, "size argument to $sample must be a number")
		}
		n, _ := bsonx.AsFloat64(f.Value)
		if n < 0 {
			return nil, errorf(codeSampleSizeNegative, "size argument to $sample must not be negative")
		}
		s.size = int64(n)
	}
	if s.size < 0 {
		return nil, errorf(codeSampleNoSize, "$sample stage must specify a size")
	}
	return s, nil
}

func (s *sampleStage) open(rc *runContext, in Source) (Source, error) {
	seed := rc.opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var next func() (bsoncore.Document, error)
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		if next == nil {
			var (
				res  []bsoncore.Document
				mem  int64
				seen int64
			)
			for {
				d, err := in.Next()
				if err != nil {
					return nil, err
				}
				if d == nil {
					break
				}
				seen++
				var slot int64 = -1
				if int64(len(res)) < s.size {
					res = append(res, nil)
					slot = int64(len(res) - 1)
				} else if j := rng.Int64N(seen); j < s.size {
					slot = j
				}
				if slot < 0 {
					continue
				}
				if res[slot] == nil {
					mem += docOverhead
				}
				mem += int64(len(d) - len(res[slot]))
				if mem > rc.opts.MaxMemory {
					return nil, rc.memoryError("$sample")
				}
				res[slot] = append(bsoncore.Document(nil), d...)
			}
			rng.Shuffle(len(res), func(i, j int) { res[i], res[j] = res[j], res[i] })
			next = sliceNext(res)
		}
		return next()
	}}, nil
}

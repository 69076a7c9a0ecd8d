package agg

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"math"
	"sort"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$bucketAuto", parseBucketAuto) }

// bucketAutoStage is $bucketAuto: the documents sorted by groupBy's value
// (missing as null) are cut into at most buckets buckets of about
// round(count/buckets) documents each, MongoDB's algorithm: a bucket takes
// that many documents, then every following document with the same value
// as its last (or, with a granularity, a value below its rounded-up
// maximum), so equal values never straddle two buckets; once buckets-1
// buckets are full the last takes the rest. Each output document is
// {_id: {min, max}, <output>} with max the next bucket's min (the last
// bucket's own maximum, inclusive); output defaults to {count: {$sum: 1}}.
// A granularity rounds the boundaries (granularity.go) and requires
// non-negative numbers.
type bucketAutoStage struct {
	groupBy expr.Expr
	buckets int
	accs    []accSpec
	round   rounder
}

// MongoDB's codes for $bucketAuto's specification and values.
const (
	codeBucketAutoGroupBy      = mongoerr.BucketAutoGroupBy
	codeBucketAutoNotObject    = mongoerr.BucketAutoNotObject
	codeBucketAutoBucketsType  = mongoerr.BucketAutoBucketsType
	codeBucketAutoBucketsInt   = mongoerr.BucketAutoBucketsInt
	codeBucketAutoBucketsPos   = mongoerr.BucketAutoBucketsPos
	codeBucketAutoOutputType   = mongoerr.BucketAutoOutputType
	codeBucketAutoUnknown      = mongoerr.BucketAutoUnknown
	codeBucketAutoMissing      = mongoerr.BucketAutoMissing
	codeGranularityUnknown     = mongoerr.GranularityUnknown
	codeBucketAutoGranType     = mongoerr.BucketAutoGranType
	codeBucketAutoGranNaN      = mongoerr.BucketAutoGranNaN
	codeBucketAutoGranNegative = mongoerr.BucketAutoGranNegative
	codeBucketAutoGranString   = mongoerr.BucketAutoGranString
)

func parseBucketAuto(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeBucketAutoNotObject, "The argument to $bucketAuto must be an object, but found type: %s.", typeName(arg))
	}
	b := &bucketAutoStage{}
	var groupBy, buckets, output bsoncore.Value
	for _, f := range fieldsOf(arg) {
		switch f.Name {
		case "groupBy":
			groupBy = f.Value
		case "buckets":
			buckets = f.Value
		case "output":
			output = f.Value
		case "granularity":
			if f.Value.Type != bsoncore.TypeString {
				return nil, errorf(codeBucketAutoGranString, "The $bucketAuto 'granularity' field must be a string, but found type: %s.", typeName(f.Value))
			}
			if b.round = newRounder(f.Value.StringValue()); b.round == nil {
				return nil, errorf(codeGranularityUnknown, "Unknown rounding granularity '%s'", f.Value.StringValue())
			}
		default:
			return nil, errorf(codeBucketAutoUnknown, "Unrecognized option to $bucketAuto: %s.", f.Name)
		}
	}
	if groupBy.Type == 0 || buckets.Type == 0 {
		return nil, errorf(codeBucketAutoMissing, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
	}
	isPath := groupBy.Type == bsoncore.TypeString && strings.HasPrefix(groupBy.StringValue(), "$")
	if !isPath && groupBy.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeBucketAutoGroupBy, "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: %s.", printValue(groupBy))
	}
	if !isNumber(buckets) {
		return nil, errorf(codeBucketAutoBucketsType, "The $bucketAuto 'buckets' field must be a numeric value, but found type: %s.", typeName(buckets))
	}
	f, _ := bsonx.AsFloat64(buckets)
	if f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
		return nil, errorf(codeBucketAutoBucketsInt, "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found %s.", printValue(buckets))
	}
	if f <= 0 {
		return nil, errorf(codeBucketAutoBucketsPos, "The $bucketAuto 'buckets' field must be greater than 0, but found: %d.", int64(f))
	}
	b.buckets = int(f)
	var err error
	if b.groupBy, err = expr.ParseIn(groupBy, pc.scope); err != nil {
		return nil, err
	}
	if output.Type != 0 {
		if output.Type != bsoncore.TypeEmbeddedDocument {
			return nil, errorf(codeBucketAutoOutputType, "The $bucketAuto 'output' field must be an object, but found type: %s.", typeName(output))
		}
		for _, f := range fieldsOf(output) {
			a, err := parseAccumulator(f.Name, f.Value, pc)
			if err != nil {
				return nil, err
			}
			b.accs = append(b.accs, a)
		}
	} else {
		b.accs = []accSpec{{name: "count", op: "$sum", kind: accumulators["$sum"], arg: constExpr(expr.Int32(1))}}
	}
	return b, nil
}

// keyed is a buffered document with its groupBy value.
type keyed struct {
	key bsoncore.Value
	doc bsoncore.Document
}

// autoBucket is one bucket being filled.
type autoBucket struct {
	min, max bsoncore.Value
	accs     []accumulator
}

func (b *bucketAutoStage) open(rc *runContext, in Source) (Source, error) {
	return blockingSource(in, func() ([]bsoncore.Document, error) { return b.run(rc, in) }), nil
}

func (b *bucketAutoStage) run(rc *runContext, in Source) ([]bsoncore.Document, error) {
	if rc.opts.AllowDiskUse {
		return b.runSpilling(rc, in)
	}
	var (
		entries []keyed
		mem     int64
	)
	err := b.readKeys(rc, in, func(k bsoncore.Value, d bsoncore.Document) error {
		doc := append(bsoncore.Document(nil), d...)
		k = copyValue(k)
		mem += int64(len(doc)+len(k.Data)) + docOverhead
		if mem > rc.opts.MaxMemory {
			return rc.memoryError("$bucketAuto")
		}
		entries = append(entries, keyed{key: k, doc: doc})
		return nil
	})
	if err != nil {
		return nil, err
	}
	coll := rc.opts.collator()
	sort.SliceStable(entries, func(i, j int) bool { return expr.CompareWith(entries[i].key, entries[j].key, coll) < 0 })
	i := 0
	return b.bucketize(rc, len(entries), func() (bsoncore.Value, bsoncore.Document, bool, error) {
		if i == len(entries) {
			return bsoncore.Value{}, nil, false, nil
		}
		i++
		return entries[i-1].key, entries[i-1].doc, true, nil
	})
}

// runSpilling is run with allowDiskUse: the input goes through a
// keyedSorter (spill_sort.go), which spills past the memory budget.
func (b *bucketAutoStage) runSpilling(rc *runContext, in Source) ([]bsoncore.Document, error) {
	ks, err := newKeyedSorter(rc, nil)
	if err != nil {
		return nil, err
	}
	defer ks.close()
	n := 0
	err = b.readKeys(rc, in, func(k bsoncore.Value, d bsoncore.Document) error {
		n++
		return ks.add(k, d)
	})
	if err != nil {
		return nil, err
	}
	// The sorter's documents, which buckets may refer to, stay valid until
	// close, after bucketize has built the output.
	return b.bucketize(rc, n, ks.iter())
}

// bucketize fills the buckets from the n entries next yields in key order.
func (b *bucketAutoStage) bucketize(rc *runContext, n int, next func() (bsoncore.Value, bsoncore.Document, bool, error)) ([]bsoncore.Document, error) {
	var cur keyed
	more := false
	advance := func() error {
		var err error
		cur.key, cur.doc, more, err = next()
		return err
	}
	if err := advance(); err != nil {
		return nil, err
	}
	size := int(math.Round(float64(n) / float64(b.buckets)))
	if size < 1 {
		size = 1
	}
	ctx := rc.exprContext()
	nctx := rc.exprContext()
	var buckets []*autoBucket
	add := func(bk *autoBucket, e keyed) error {
		if bk.min.Type == 0 {
			bk.min = e.key
		}
		bk.max = e.key
		ctx.Reset(e.doc)
		for i := range b.accs {
			a := &b.accs[i] // per document: no copy of the accSpec
			v := expr.Missing
			if a.arg != nil {
				var err error
				if v, err = a.arg.Eval(ctx); err != nil {
					return err
				}
			}
			if _, err := bk.accs[i].add(v); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	for more {
		if len(buckets) == b.buckets {
			// The last bucket takes every remaining document.
			for more {
				if err := add(buckets[len(buckets)-1], cur); err != nil {
					return nil, err
				}
				if err := advance(); err != nil {
					return nil, err
				}
			}
			break
		}
		bk := &autoBucket{accs: make([]accumulator, len(b.accs))}
		for j := range b.accs {
			if bk.accs[j], err = b.accs[j].newAcc(expr.Null, nctx); err != nil {
				return nil, err
			}
		}
		for taken := 0; more && taken < size; taken++ {
			if err := add(bk, cur); err != nil {
				return nil, err
			}
			if err := advance(); err != nil {
				return nil, err
			}
		}
		// Values equal to the bucket's last (below its rounded-up maximum
		// with a granularity) join it.
		bound := bk.max
		if b.round != nil {
			if bound, err = b.round.roundUp(bk.max); err != nil {
				return nil, err
			}
		}
		for more {
			c := expr.CompareWith(cur.key, bound, rc.opts.collator())
			if b.round == nil && c != 0 || b.round != nil && c >= 0 {
				break
			}
			if err := add(bk, cur); err != nil {
				return nil, err
			}
			if err := advance(); err != nil {
				return nil, err
			}
		}
		if len(buckets) > 0 {
			prev := buckets[len(buckets)-1]
			if b.round != nil {
				up, err := b.round.roundUp(prev.max)
				if err != nil {
					return nil, err
				}
				prev.max, bk.min = up, up
			} else {
				prev.max = bk.min
			}
		}
		buckets = append(buckets, bk)
	}
	if len(buckets) > 0 && b.round != nil {
		first, last := buckets[0], buckets[len(buckets)-1]
		if first.min, err = b.round.roundDown(first.min); err != nil {
			return nil, err
		}
		if last.max, err = b.round.roundUp(last.max); err != nil {
			return nil, err
		}
	}
	out := make([]bsoncore.Document, 0, len(buckets))
	for _, bk := range buckets {
		id := buildDoc([]field{{"min", bk.min}, {"max", bk.max}})
		fs := []field{{"_id", docValue(id)}}
		for i, a := range b.accs {
			v, err := bk.accs[i].result()
			if err != nil {
				return nil, err
			}
			fs = append(fs, field{a.name, v})
		}
		out = append(out, buildDoc(fs))
	}
	return out, nil
}

// readKeys hands keep each input document with its groupBy value (null
// when missing), checking values against the granularity. The document
// and value are valid only during the call.
func (b *bucketAutoStage) readKeys(rc *runContext, in Source, keep func(bsoncore.Value, bsoncore.Document) error) error {
	ctx := rc.exprContext()
	for {
		d, err := in.Next()
		if err != nil {
			return err
		}
		if d == nil {
			return nil
		}
		ctx.Reset(d)
		k, err := b.groupBy.Eval(ctx)
		if err != nil {
			return err
		}
		if k.Type == 0 {
			k = expr.Null
		}
		if b.round != nil {
			if !isNumber(k) {
				return errorf(codeBucketAutoGranType, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: %s", typeName(k))
			}
			f, _ := bsonx.AsFloat64(k)
			if math.IsNaN(f) {
				return errorf(codeBucketAutoGranNaN, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN value")
			}
			if f < 0 {
				return errorf(codeBucketAutoGranNegative, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a negative value: %s", printValue(k))
			}
		}
		if err := keep(k, d); err != nil {
			return err
		}
	}
}

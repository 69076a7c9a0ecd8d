package agg

import (
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$bucket", parseBucket) }

// bucketStage is $bucket: MongoDB's expansion into a $group whose _id is
// the lower boundary of the bucket holding groupBy's value (boundaries[i]
// <= v < boundaries[i+1]), or default for values outside every bucket,
// followed by {$sort: {_id: 1}}. Without default, a value outside every
// bucket fails with 40066 (the $switch of the expansion). Without output,
// each bucket counts its documents: {count: {$sum: 1}}.
type bucketStage struct {
	group *groupStage
}

var idAsc = func() *query.Sort {
	s, _ := query.ParseSort(bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build())
	return s
}()

func parseBucket(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeBucketNotObject, "Argument to $bucket stage must be an object, but found type: %s.", typeName(arg))
	}
	var (
		groupBy, boundaries, def, output bsoncore.Value
	)
	for _, f := range fieldsOf(arg) {
		switch f.Name {
		case "groupBy":
			groupBy = f.Value
		case "boundaries":
			boundaries = f.Value
		case "default":
			def = f.Value
		case "output":
			output = f.Value
		default:
			return nil, errorf(codeBucketUnknownOption, "Unrecognized option to $bucket: %s.", f.Name)
		}
	}
	if groupBy.Type == 0 || boundaries.Type == 0 {
		return nil, errorf(codeBucketMissing, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
	}
	isPath := groupBy.Type == bsoncore.TypeString && strings.HasPrefix(groupBy.StringValue(), "$")
	isExpr := groupBy.Type == bsoncore.TypeEmbeddedDocument
	if !isPath && !isExpr {
		return nil, errorf(codeBucketGroupByType, "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: %s.", printValue(groupBy))
	}
	if boundaries.Type != bsoncore.TypeArray {
		return nil, errorf(codeBucketBoundariesType, "The $bucket 'boundaries' field must be an array, but found type: %s.", typeName(boundaries))
	}
	bounds := arrayValues(boundaries)
	if len(bounds) < 2 {
		return nil, errorf(codeBucketBoundaryCount, "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).", len(bounds))
	}
	coll := pc.opts.collator() // bounds order strings by the pipeline's collation
	for i := 1; i < len(bounds); i++ {
		if bsonx.CanonicalType(bounds[i].Type) != bsonx.CanonicalType(bounds[0].Type) {
			return nil, errorf(codeBucketBoundaryTypes, "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.", typeName(bounds[0]), typeName(bounds[i]))
		}
		if expr.CompareWith(bounds[i-1], bounds[i], coll) >= 0 {
			return nil, errorf(codeBucketNotSorted, "The 'boundaries' option to $bucket must be sorted, but elements %d and %d are not in ascending order (%s is not less than %s).", i-1, i, bounds[i-1], bounds[i])
		}
	}
	if def.Type != 0 {
		if expr.CompareWith(def, bounds[0], coll) >= 0 && expr.CompareWith(def, bounds[len(bounds)-1], coll) < 0 {
			return nil, errorf(codeBucketDefaultRange, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
		}
	}
	id, err := expr.ParseIn(groupBy, pc.scope)
	if err != nil {
		return nil, err
	}
	g := &groupStage{id: id, name: "$bucket"}
	if output.Type != 0 {
		if output.Type != bsoncore.TypeEmbeddedDocument {
			return nil, errorf(codeBucketOutputType, "The $bucket 'output' field must be an object, but found type: %s.", typeName(output))
		}
		for _, f := range fieldsOf(output) {
			a, err := parseAccumulator(f.Name, f.Value, pc)
			if err != nil {
				return nil, err
			}
			g.accs = append(g.accs, a)
		}
	} else {
		g.accs = []accSpec{{name: "count", op: "$sum", kind: accumulators["$sum"], arg: constExpr(expr.Int32(1))}}
	}
	g.mapID = func(v bsoncore.Value) (bsoncore.Value, error) {
		// The $switch of the expansion: the first bucket whose bounds
		// hold v; values of another type than the boundaries fall outside.
		if bsonx.CanonicalType(v.Type) == bsonx.CanonicalType(bounds[0].Type) {
			for i := 0; i+1 < len(bounds); i++ {
				if expr.CompareWith(v, bounds[i], coll) >= 0 && expr.CompareWith(v, bounds[i+1], coll) < 0 {
					return bounds[i], nil
				}
			}
		}
		if def.Type != 0 {
			return def, nil
		}
		return expr.Missing, errorf(codeBucketNoMatch, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return &bucketStage{group: g}, nil
}

func (b *bucketStage) open(rc *runContext, in Source) (Source, error) {
	g, err := b.group.open(rc, in)
	if err != nil {
		return nil, err
	}
	return sortSource(rc, idAsc, 0, g), nil
}

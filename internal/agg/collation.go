package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// A pipeline's collation (Options.Collation) reaches the stages that
// compare strings through the filter, the sort and the group key: $match
// (not its $expr), $sort (and $sort before $limit), $group's _id and
// $sortByCount's. Every other comparison of strings in a pipeline
// (expression operators such as $eq or $in, accumulators such as $min or
// $addToSet, $lookup's match, window functions, …) would still be simple,
// so checkCollation refuses a pipeline holding one when the collation is
// not simple, rather than answer as if it had been honoured.

// collationStages are the stages a non-simple collation may run through,
// their contents still checked for operators below.
var collationStages = map[string]bool{
	"$match": true, "$sort": true, "$limit": true, "$skip": true, "$count": true,
	"$group": true, "$project": true, "$addFields": true, "$set": true, "$unset": true,
	"$unwind": true, "$replaceRoot": true, "$replaceWith": true, "$sortByCount": true,
}

// collationSensitive are the expression operators and accumulators whose
// string comparisons Cairn does not collate yet.
var collationSensitive = map[string]bool{
	"$expr": true, "$where": true, "$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true,
	"$cmp": true, "$in": true, "$indexOfArray": true, "$setEquals": true, "$setIntersection": true, "$setUnion": true,
	"$setDifference": true, "$setIsSubset": true, "$max": true, "$min": true, "$maxN": true, "$minN": true,
	"$sortArray": true, "$top": true, "$topN": true, "$bottom": true, "$bottomN": true, "$addToSet": true,
}

// checkCollation refuses a pipeline that compares strings where Cairn does
// not apply the collation (see above); nil for the simple collation.
func checkCollation(pipeline []bsoncore.Document, opts *Options) error {
	if opts.Collation == nil {
		return nil
	}
	for _, st := range pipeline {
		name, arg, err := stageNameArg(st)
		if err != nil {
			return nil // Parse reports it
		}
		if !collationStages[name] {
			return collationRefused(name)
		}
		if op := sensitiveIn(arg, name == "$match", 0); op != "" {
			return collationRefused(op)
		}
	}
	return nil
}

// sensitiveIn returns the first operator of v that a collation would
// change and Cairn does not collate. In a $match filter the comparison
// operators are collated (package query): only $expr and $where count.
func sensitiveIn(v bsoncore.Value, filter bool, depth int) string {
	if depth > bsonx.MaxDepth {
		return ""
	}
	var elems []bsoncore.Element
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		elems, _ = v.Document().Elements()
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for _, x := range vals {
			if op := sensitiveIn(x, filter, depth+1); op != "" {
				return op
			}
		}
		return ""
	default:
		return ""
	}
	for _, el := range elems {
		k := el.Key()
		if collationSensitive[k] && (!filter || k == "$expr" || k == "$where") {
			return k
		}
		if op := sensitiveIn(el.Value(), filter, depth+1); op != "" {
			return op
		}
	}
	return ""
}

func collationRefused(what string) error {
	return mongoerr.New(mongoerr.InvalidOptions, "a non-simple collation with %s is not supported yet: Cairn would compare its strings without the collation", what)
}

// keyCollator is the collation group keys are made with (nil: simple).
func (o *Options) keyCollator() keystring.Collator {
	if o.Collation == nil {
		return nil
	}
	return o.Collation
}

package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/timeseries"
)

// A pipeline's collation (Options.Collation) reaches every comparison of
// strings in it, as MongoDB's expression context carries one collator:
// $match (its $expr too, through package query), $sort and the sorts of
// $setWindowFields' sortBy, $bucketAuto and $top/$bottom, the keys of
// $group, $sortByCount and $bucket, the partitions of $setWindowFields
// and $densify, $addToSet's dedupe and $min/$max/$minN/$maxN as
// accumulators and window functions, $lookup's and $graphLookup's matches
// (and restrictSearchWithMatch), the sub-pipelines of $lookup, $unionWith
// and $facet, and the expression operators that compare (package expr:
// the comparisons, $in, $indexOfArray, the set operators, $min, $max,
// $minN, $maxN, $sortArray) through expr.Context.SetCollator. What tells
// documents apart rather than compares values stays binary: $graphLookup's
// de-duplication of the documents it found by _id.
//
// collationRefusedStages lists the stages whose execution outside this package
// does not take the collation yet; checkCollation refuses them under a
// non-simple collation rather than answer as if it had been honoured.
var collationRefusedStages = map[string]string{
	"$merge":                   "its on-field matching and whenMatched pipeline",
	"$versions":                "its read of a versioned collection's history",
	timeseries.UnpackStageName: "a time series collection's bucket filter",
	"$changeStream":            "a change stream's filter",
}

// checkCollation refuses a pipeline holding a stage of
// collationRefusedStages when the collation is not simple.
func checkCollation(pipeline []bsoncore.Document, opts *Options) error {
	if opts.Collation == nil {
		return nil
	}
	for _, st := range pipeline {
		name, _, err := stageNameArg(st)
		if err != nil {
			return nil // Parse reports it
		}
		if why, ok := collationRefusedStages[name]; ok {
			return collationRefused(name + " (" + why + ")")
		}
	}
	return nil
}

func collationRefused(what string) error {
	return mongoerr.New(mongoerr.InvalidOptions, "a non-simple collation with %s is not supported yet: Cairn would compare its strings without the collation", what)
}

// collator is the collation expressions and accumulators compare with
// (an untyped nil: simple).
func (o *Options) collator() expr.Collator {
	if o.Collation == nil {
		return nil
	}
	return o.Collation
}

// filterOptions parse a filter the pipeline builds or holds ($lookup's
// and $graphLookup's matches, restrictSearchWithMatch) under its collation.
func (o *Options) filterOptions() query.Options {
	if o.Collation == nil {
		return query.Options{}
	}
	return query.Options{Collation: o.Collation}
}

// keyCollator is the collation group keys are made with (nil: simple).
func (o *Options) keyCollator() keystring.Collator {
	if o.Collation == nil {
		return nil
	}
	return o.Collation
}

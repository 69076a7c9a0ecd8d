package planner

import (
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/query"
)

// KeyBounds returns the bounds filter f puts on each field of the key
// pattern of spec, exactly as an index scan over that pattern would read
// them: a hashed field is bounded by equality and $in only, and a field
// the filter leaves open is nil ([MinKey, MaxKey]). Routers target shards
// with it (package shard): what no index scan over the shard key would
// read, no shard owning those keys needs to see. Parts of the filter the
// bounds cannot express ($or, $nor, $expr) leave fields open, which only
// widens the answer.
func KeyBounds(f *query.Filter, spec *index.Spec) []OIL {
	bounds, _ := boundsFrom(analyze(f.Tree()), &indexRef{name: spec.Name, spec: spec})
	return bounds
}

// Intervals returns the list's intervals, the full one for an open field.
func (o OIL) Intervals() []Interval { return o.intervals() }

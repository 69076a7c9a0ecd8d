package planner

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/query"
)

// orCandidate plans a top-level $or as one index scan per branch under an
// OR stage, which returns each document once, then FETCH with the whole
// filter. Each branch's bounds come from the branch and the conditions
// ANDed with the $or (a matching document satisfies both). If a branch has
// no useful index, the $or needs a collection scan and nil is returned.
//
// With tp (a $text under the $or), the $or holding it is planned, and its
// $text branch is the text plan's TEXT_MATCH subtree (text.go).
func (pl *planning) orCandidate(tp *textPlan) *candidate {
	if len(pl.a.ors) == 0 {
		return nil
	}
	ors := pl.a.ors[0]
	if tp != nil {
		ors = nil
		for _, or := range pl.a.ors {
			if slices.ContainsFunc(or, hasTextClause) {
				ors = or
			}
		}
		if ors == nil {
			return nil
		}
	}
	var scans []stage
	var names []string
	for _, br := range ors {
		ba := analyze(br)
		ba.coll = pl.a.coll
		for path, cs := range pl.a.conds {
			ba.conds[path] = append(ba.conds[path], cs...)
		}
		if tp != nil && hasTextClause(br) {
			sub, err := tp.subplan(ba, false)
			if err != nil {
				return nil
			}
			scans = append(scans, sub)
			names = append(names, tp.ix.name)
			continue
		}
		var best *indexRef
		var bestBounds []OIL
		bestScore := -1
		for _, ix := range append([]*indexRef{{name: "_id_", spec: idSpec, isID: true}}, concrete(ba, pl.ixs)...) {
			if ix.spec.IsText() {
				continue // it holds only documents with terms: no scan of it is a whole branch
			}
			bounds, _ := boundsFrom(ba, ix)
			if bounds[0].IsFull() || ix.wildPath != "" && bounds[1].IsFull() {
				continue
			}
			if ix.spec.Sparse && !sparseSafe(ix.keyFields(), bounds) {
				continue
			}
			if ix.spec.PartialFilterExpression != nil && !implies(ba, ix.spec.PartialFilter().Tree()) {
				continue
			}
			if sc := boundsScore(ix, bounds); sc > bestScore {
				best, bestBounds, bestScore = ix, bounds, sc
			}
		}
		if best == nil {
			return nil
		}
		scans = append(scans, newIXScan(best, bestBounds, false))
		names = append(names, best.name)
	}
	c := pl.finish(&fetch{oneInput: input(&orStage{in: scans}), filter: pl.q.Filter, rawFilter: pl.q.RawFilter}, false)
	c.index = "$or:" + strings.Join(names, ",")
	return c
}

// boundsScore ranks an index for one $or branch, without a trial: more
// leading fields bound to points, then a bounded field after them, then a
// unique index.
func boundsScore(ix *indexRef, bounds []OIL) int {
	sc := 0
	for _, o := range bounds {
		if o.allPoints() {
			sc += 4
			continue
		}
		if !o.IsFull() {
			sc += 2
		}
		break
	}
	if ix.spec.Unique {
		sc++
	}
	return sc
}

// implies reports whether every document the analysed filter matches also
// matches the partial filter expression pfe, so that a partial index
// holds all of them. It is sound and conservative: each condition of pfe
// (its top-level fields and $and) must be implied by one ANDed condition
// of the filter on the same path, whose values are a subset of the pfe
// condition's ({a: {$gt: 6}} implies {a: {$gt: 5}}; {a: 3} implies {a:
// {$exists: true}}). Anything else ($or, $type, null, a path with a
// numeric component, which analyze leaves out) is not implied.
func implies(a *analysis, pfe query.Conjunction) bool {
	pa := analyze(pfe)
	if len(pa.ors) > 0 || numericPaths(pfe) {
		return false
	}
	for _, c := range pfe {
		if c.Kind != query.PathClause && c.Kind != query.AndClause {
			return false
		}
	}
	for path, pconds := range pa.conds {
		for _, pc := range pconds {
			if !condImplied(a.conds[path], pc) {
				return false
			}
		}
	}
	return true
}

// numericPaths reports a condition, at the top level or under $and, on a
// path with a numeric component.
func numericPaths(c query.Conjunction) bool {
	for _, cl := range c {
		switch cl.Kind {
		case query.PathClause:
			if hasNumericPart(cl.Key) {
				return true
			}
		case query.AndClause:
			if slices.ContainsFunc(cl.Branches, numericPaths) {
				return true
			}
		}
	}
	return false
}

// condImplied reports whether one of conds alone implies pc.
func condImplied(conds []cond, pc cond) bool {
	if pc.op == "$exists" {
		if on, ok := truthy(pc.v); !ok || !on {
			return false
		}
		for _, c := range conds {
			if excludesMissing(c) {
				return true
			}
		}
		return false
	}
	if pc.op == "$eq" && pc.v.Type == bsoncore.TypeNull {
		return false
	}
	want, ok := condOIL(pc)
	if !ok {
		return false
	}
	for _, c := range conds {
		if c.op == "$eq" && c.v.Type == bsoncore.TypeNull {
			continue
		}
		got, ok := condOIL(c)
		if ok && subset(got, want) {
			return true
		}
	}
	return false
}

// excludesMissing reports whether a condition never matches a document
// missing the field.
func excludesMissing(c cond) bool {
	switch c.op {
	case "$exists":
		on, ok := truthy(c.v)
		return ok && on
	case "$eq", "$in", "$gt", "$gte", "$lt", "$lte":
		o, ok := condOIL(c)
		return ok && !o.IsFull() && !o.hasNull()
	}
	return false
}

// subset reports whether every interval of o lies inside one of p.
func subset(o, p OIL) bool {
	for _, iv := range o.intervals() {
		inside := false
		for _, pv := range p.intervals() {
			if within(iv, pv) {
				inside = true
				break
			}
		}
		if !inside {
			return false
		}
	}
	return true
}

func within(iv, pv Interval) bool {
	c := bsonx.Compare(iv.Lo, pv.Lo)
	if c < 0 || c == 0 && iv.LoIncl && !pv.LoIncl {
		return false
	}
	c = bsonx.Compare(iv.Hi, pv.Hi)
	return !(c > 0 || c == 0 && iv.HiIncl && !pv.HiIncl)
}

// hasTextClause reports whether a branch of a $or has $text at its top.
func hasTextClause(c query.Conjunction) bool {
	return slices.ContainsFunc(c, func(cl query.Clause) bool { return cl.Kind == query.OpaqueClause && cl.Key == "$text" })
}

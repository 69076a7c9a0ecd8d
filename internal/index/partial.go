package index

import (
	"strings"

	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// parsePartialFilter parses a partialFilterExpression as MongoDB does when
// it reads the specification: with every special query feature banned
// ($expr, $text, $jsonSchema: QueryFeatureNotAllowed; $where: BadValue),
// then as an ordinary filter.
func parsePartialFilter(filter bsoncore.Document) (*query.Filter, error) {
	return query.ParseWith(filter, query.Options{NoSpecialFeatures: true})
}

// checkPartialFilter applies MongoDB 7.0's restrictions on partial filter
// expressions (IndexCatalogImpl's _checkValidFilterExpressions with the
// TimeseriesMetricIndexes feature, on since 6.0): the match expression tree
// may only hold $and, $or, equality, $lt, $lte, $gt, $gte, $exists: true,
// $type and $in (and $geoWithin/$geoIntersects, which Cairn's query
// language refuses anyway), and be at most internalPartialFilterExpression-
// MaxDepth (4) levels deep. Everything else — $ne, $nin, $not, $nor,
// $exists: false, $regex, $elemMatch, $size, $mod, $all: [] … — is
// CannotCreateIndex. The filter has already parsed.
//
// The tree is MongoDB's parse tree: a document with one condition is that
// condition, a document with several is an $and of them, each operator of a
// field is its own condition, and {a: {$all: [x, y]}} is an $and of
// equalities.
func checkPartialFilter(filter *query.Filter) error {
	return checkFilterDoc(filter.Tree(), 0)
}

type condition struct {
	kind  string // "and", "or", "leaf", "all", or the unsupported operator
	path  string
	and   []query.Conjunction // and, or: the branches
	items []query.Op          // all: the items of $all
}

func checkFilterDoc(doc query.Conjunction, level int) error {
	conds := filterConditions(doc)
	if len(conds) == 1 {
		return checkCondition(conds[0], level)
	}
	if err := checkDepth(level); err != nil {
		return err
	}
	for _, c := range conds {
		if err := checkCondition(c, level+1); err != nil {
			return err
		}
	}
	return nil
}

func checkDepth(level int) error {
	if level+1 > maxPartialFilterDepth {
		return cannotCreate("partialFilterExpression depth may not exceed %d", maxPartialFilterDepth)
	}
	return nil
}

func checkCondition(c condition, level int) error {
	if err := checkDepth(level); err != nil {
		return err
	}
	switch c.kind {
	case "leaf":
		return nil
	case "and", "or":
		for _, b := range c.and {
			if err := checkFilterDoc(b, level+1); err != nil {
				return err
			}
		}
		return nil
	case "all":
		if len(c.items) == 0 {
			return unsupportedInPartial("$alwaysFalse", c.path)
		}
		for _, it := range c.items {
			switch it.Name {
			case "$regex":
				return unsupportedInPartial("regex", c.path)
			case "$elemMatch":
				return unsupportedInPartial("$elemMatch", c.path)
			}
			if err := checkDepth(level + 1); err != nil {
				return err
			}
		}
		return nil
	}
	return unsupportedInPartial(c.kind, c.path)
}

func unsupportedInPartial(op, path string) error {
	if path != "" {
		return cannotCreate("Expression not supported in partial index: %s %s", path, op)
	}
	return cannotCreate("Expression not supported in partial index: %s", op)
}

// filterConditions lists the conditions of one filter document, as
// MongoDB's parser adds them to the document's implicit $and.
func filterConditions(doc query.Conjunction) []condition {
	var out []condition
	for _, c := range doc {
		switch c.Kind {
		case query.AndClause:
			out = append(out, condition{kind: "and", and: c.Branches})
		case query.OrClause:
			out = append(out, condition{kind: "or", and: c.Branches})
		case query.PathClause:
			out = append(out, fieldConditions(c.Key, c.Ops)...)
		default:
			if c.Key != "$comment" {
				out = append(out, condition{kind: c.Key}) // $nor, $alwaysTrue, …
			}
		}
	}
	return out
}

// fieldConditions lists the conditions of one field of a filter.
func fieldConditions(path string, ops []query.Op) []condition {
	var out []condition
	for _, op := range ops {
		switch op.Name {
		case "$eq", "$gt", "$gte", "$lt", "$lte", "$in", "$type", "$geoWithin", "$geoIntersects":
			out = append(out, condition{kind: "leaf", path: path})
		case "$exists":
			if trueValue(op.Value) {
				out = append(out, condition{kind: "leaf", path: path})
			} else {
				out = append(out, condition{kind: "$not exists", path: path})
			}
		case "$all":
			out = append(out, condition{kind: "all", items: op.Sub, path: path})
		case "$options":
			// part of $regex
		case "$ne", "$nin", "$not":
			out = append(out, condition{kind: "$not " + strings.TrimPrefix(op.Name, "$"), path: path})
		case "$regex":
			if op.Implicit {
				out = append(out, condition{kind: "regex", path: path})
				continue
			}
			out = append(out, condition{kind: op.Name, path: path})
		default:
			out = append(out, condition{kind: op.Name, path: path})
		}
	}
	return out
}

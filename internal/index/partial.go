package index

import (
	"strings"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// parsePartialFilter parses a partialFilterExpression as MongoDB does when
// it reads the specification: with every special query feature banned
// ($expr, $text, $jsonSchema: QueryFeatureNotAllowed; $where: BadValue),
// then as an ordinary filter.
func parsePartialFilter(filter bsoncore.Document) (*query.Filter, error) {
	if err := banSpecialFeatures(filter); err != nil {
		return nil, err
	}
	return query.Parse(filter)
}

func banSpecialFeatures(filter bsoncore.Document) error {
	elems, _ := filter.Elements()
	for _, e := range elems {
		switch k := e.Key(); k {
		case "$expr", "$text", "$jsonSchema":
			return mongoerr.New(CodeQueryFeatureNotAllowed, "%s is not allowed in this context", k)
		case "$where":
			return mongoerr.New(mongoerr.BadValue, "$where is not allowed in this context")
		case "$and", "$or", "$nor":
			arr, ok := e.Value().ArrayOK()
			if !ok {
				continue // query.Parse reports it
			}
			vals, _ := arr.Values()
			for _, v := range vals {
				if d, ok := v.DocumentOK(); ok {
					if err := banSpecialFeatures(d); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
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
func checkPartialFilter(filter bsoncore.Document) error {
	return checkFilterDoc(filter, 0)
}

type condition struct {
	kind  string // "and", "or", "leaf", "all", or the unsupported operator
	value bsoncore.Value
	path  string
}

func checkFilterDoc(doc bsoncore.Document, level int) error {
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
		arr, _ := c.value.ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			d, _ := v.DocumentOK()
			if err := checkFilterDoc(d, level+1); err != nil {
				return err
			}
		}
		return nil
	case "all":
		arr, _ := c.value.ArrayOK()
		vals, _ := arr.Values()
		if len(vals) == 0 {
			return unsupportedInPartial("$alwaysFalse", c.path)
		}
		for _, v := range vals {
			if v.Type == bsoncore.TypeRegex {
				return unsupportedInPartial("regex", c.path)
			}
			if d, ok := v.DocumentOK(); ok && firstKey(d) == "$elemMatch" {
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
func filterConditions(doc bsoncore.Document) []condition {
	var out []condition
	elems, _ := doc.Elements()
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		switch k {
		case "$and":
			out = append(out, condition{kind: "and", value: v})
			continue
		case "$or":
			out = append(out, condition{kind: "or", value: v})
			continue
		case "$comment":
			continue
		}
		if strings.HasPrefix(k, "$") {
			out = append(out, condition{kind: k}) // $nor, $alwaysTrue, …
			continue
		}
		out = append(out, fieldConditions(k, v)...)
	}
	return out
}

// fieldConditions lists the conditions of one field of a filter.
func fieldConditions(path string, v bsoncore.Value) []condition {
	if v.Type == bsoncore.TypeRegex {
		return []condition{{kind: "regex", path: path}}
	}
	d, ok := v.DocumentOK()
	if !ok || !isOperatorDoc(d) {
		return []condition{{kind: "leaf", path: path}}
	}
	var out []condition
	elems, _ := d.Elements()
	for _, e := range elems {
		switch op := e.Key(); op {
		case "$eq", "$gt", "$gte", "$lt", "$lte", "$in", "$type", "$geoWithin", "$geoIntersects":
			out = append(out, condition{kind: "leaf", path: path})
		case "$exists":
			if trueValue(e.Value()) {
				out = append(out, condition{kind: "leaf", path: path})
			} else {
				out = append(out, condition{kind: "$not exists", path: path})
			}
		case "$all":
			out = append(out, condition{kind: "all", value: e.Value(), path: path})
		case "$options":
			// part of $regex
		case "$ne", "$nin", "$not":
			out = append(out, condition{kind: "$not " + strings.TrimPrefix(op, "$"), path: path})
		default:
			out = append(out, condition{kind: op, path: path})
		}
	}
	return out
}

// isOperatorDoc reports whether a filter value is an operator document
// ({$gt: 1}) rather than a document to compare with: its first field starts
// with '$' and is not part of a DBRef.
func isOperatorDoc(d bsoncore.Document) bool {
	k := firstKey(d)
	return strings.HasPrefix(k, "$") && k != "$ref" && k != "$id" && k != "$db"
}

func firstKey(d bsoncore.Document) string {
	elems, _ := d.Elements()
	if len(elems) == 0 {
		return ""
	}
	return elems[0].Key()
}

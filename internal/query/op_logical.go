package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Logical operators: $and $or $nor over filter documents, and $not over an
// operator document or a regex.

func parseLogical(op string, v bsoncore.Value, lvl level) (matcher, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, badValue("%s must be an array", op)
	}
	var children []matcher
	it := elemsOf(v)
	for {
		_, e, ok := it.next()
		if !ok {
			break
		}
		if e.Type != bsoncore.TypeEmbeddedDocument {
			return nil, badValue("$or/$and/$nor entries need to be full objects")
		}
		m, err := parseDoc(e.Data, lvl)
		if err != nil {
			return nil, err
		}
		children = append(children, m)
	}
	if len(children) == 0 {
		return nil, badValue("$and/$or/$nor must be a nonempty array")
	}
	switch op {
	case "$and":
		return andMatcher(children), nil
	case "$or":
		return orMatcher(children), nil
	}
	return notMatcher{orMatcher(children)}, nil
}

// parseNot parses {$not: /re/} or {$not: {operators}}. The negation applies
// to the whole path: {a: {$not: {$gt: 5}}} matches when no value of a is
// greater than 5, including when a is missing.
func parseNot(name string, v bsoncore.Value) (pred, error) {
	switch v.Type {
	case bsoncore.TypeRegex:
		re, err := regexFromValue(v)
		if err != nil {
			return nil, err
		}
		return notPred{re}, nil
	case bsoncore.TypeEmbeddedDocument:
		if len(arrayValues(v)) == 0 {
			return nil, badValue("$not cannot be empty")
		}
		p, err := parseOperators(name, v)
		if err != nil {
			return nil, err
		}
		return notPred{p}, nil
	}
	return nil, badValue("$not needs a regex or a document")
}

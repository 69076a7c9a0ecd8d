package update

import (
	"regexp"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// arrayFilter is one parsed arrayFilters document: the condition an array
// element must meet for "$[ident]" to select it.
type arrayFilter struct {
	ident  string
	filter *query.Filter
}

var identifierRE = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// parseArrayFilters parses a statement's arrayFilters with MongoDB's rules:
// every filter names exactly one identifier (the first component of all its
// paths, $and/$or/$nor included), an identifier is a lower-case letter then
// letters and digits, and no two filters share one.
func parseArrayFilters(docs []bsoncore.Document) (map[string]*arrayFilter, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	out := make(map[string]*arrayFilter, len(docs))
	for _, d := range docs {
		f, err := query.Parse(d)
		if err != nil {
			return nil, wrapContext(err, "Error parsing array filter")
		}
		ident, err := filterIdentifier(d)
		if err != nil {
			return nil, wrapContext(err, "Error parsing array filter")
		}
		if ident == "" {
			return nil, failedToParse("Cannot use an expression without a top-level field name in arrayFilters")
		}
		if _, dup := out[ident]; dup {
			return nil, failedToParse("Found multiple array filters with the same top-level field name %s", ident)
		}
		out[ident] = &arrayFilter{ident: ident, filter: f}
	}
	return out, nil
}

// filterIdentifier finds the one identifier a filter document uses, or ""
// when it uses none (an empty filter, or only $expr and the like).
func filterIdentifier(d bsoncore.Document) (string, error) {
	ident := ""
	var walk func(d []byte) error
	walk = func(d []byte) error {
		if len(d) < 5 {
			return nil
		}
		elems := d[4 : len(d)-1]
		for len(elems) > 0 {
			t, key, val, rest, ok := bsonx.NextElement(elems)
			if !ok {
				return nil
			}
			elems = rest
			k := string(key)
			if strings.HasPrefix(k, "$") {
				if (k == "$and" || k == "$or" || k == "$nor") && t == bsoncore.TypeArray {
					arr := val[4 : len(val)-1]
					for len(arr) > 0 {
						at, _, av, ar, ok := bsonx.NextElement(arr)
						if !ok {
							break
						}
						arr = ar
						if at == bsoncore.TypeEmbeddedDocument {
							if err := walk(av); err != nil {
								return err
							}
						}
					}
				}
				continue
			}
			top, _, _ := strings.Cut(k, ".")
			if !identifierRE.MatchString(top) {
				return badValue("The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '%s'", top)
			}
			if ident != "" && ident != top {
				return failedToParse("Expected a single top-level field name, found '%s' and '%s'", ident, top)
			}
			ident = top
		}
		return nil
	}
	return ident, walk(d)
}

// matches tests an array element against the filter, as MongoDB's
// ExpressionWithPlaceholder does: the element plays the value of a field
// named by the identifier.
func (f *arrayFilter) matches(s *applyState, v bsoncore.Value) (bool, error) {
	s.scratch = wrap(s.scratch, f.ident, v)
	r, err := f.filter.Exec(s.scratch)
	return r.Matched, err
}

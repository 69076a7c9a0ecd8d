package agg

import (
	"strings"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$unwind", parseUnwind) }

// unwindStage is $unwind: one output document per element of the array at
// path, the path set to the element. The path follows documents only (an
// array on the way makes the value missing). A non-array, non-null value
// acts as a one-element array; null, missing and [] produce nothing unless
// preserveNullAndEmptyArrays, which outputs the document unchanged except
// that an empty array is removed. includeArrayIndex names a field set to
// the element's index as an int64 (null for a preserved document or a
// non-array value).
type unwindStage struct {
	path     []string
	index    []string // nil when not requested
	preserve bool
}

func parseUnwind(arg bsoncore.Value, _ *parseContext) (stage, error) {
	u := &unwindStage{}
	var path string
	switch arg.Type {
	case bsoncore.TypeString:
		path = arg.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		for _, f := range fieldsOf(arg) {
			switch f.Name {
			case "path":
				s, ok := f.Value.StringValueOK()
				if !ok {
					return nil, errorf(codeUnwindPathType, "expected a string as the path for $unwind stage, got %s", typeName(f.Value))
				}
				path = s
			case "preserveNullAndEmptyArrays":
				b, ok := f.Value.BooleanOK()
				if !ok {
					return nil, errorf(codeUnwindPreserveType, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got %s", typeName(f.Value))
				}
				u.preserve = b
			case "includeArrayIndex":
				s, ok := f.Value.StringValueOK()
				if !ok || s == "" {
					return nil, errorf(codeUnwindIndexType, "expected a non-empty string for the includeArrayIndex option to $unwind stage, got %s", typeName(f.Value))
				}
				if s[0] == '$' {
					return nil, errorf(codeUnwindIndexDollar, "includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s", s)
				}
				p, err := splitPath(s)
				if err != nil {
					return nil, err
				}
				u.index = p
			default:
				return nil, errorf(codeUnwindUnknownOption, "unrecognized option to $unwind stage: %s", f.Name)
			}
		}
	default:
		return nil, errorf(codeUnwindSpecType, "expected either a string or an object as specification for $unwind stage, got %s", typeName(arg))
	}
	if path == "" {
		return nil, errorf(codeUnwindNoPath, "no path specified to $unwind stage")
	}
	if path[0] != '$' {
		return nil, errorf(codeUnwindPathDollar, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	p, err := splitPath(strings.TrimPrefix(path, "$"))
	if err != nil {
		return nil, err
	}
	u.path = p
	return u, nil
}

func (u *unwindStage) open(_ *runContext, in Source) (Source, error) {
	var (
		doc   bsoncore.Value   // the document being unwound
		elems []bsoncore.Value // its remaining elements
		next  int64            // index of elems[0]
	)
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		for {
			if len(elems) > 0 {
				e := elems[0]
				elems = elems[1:]
				out := setPath(doc, u.path, e)
				if u.index != nil {
					out = setPath(out, u.index, expr.Int64(next))
				}
				next++
				return bsoncore.Document(out.Data), nil
			}
			d, err := in.Next()
			if d == nil || err != nil {
				return nil, err
			}
			doc = docValue(d)
			v := lookupPath(doc, u.path)
			switch {
			case v.Type == bsoncore.TypeArray:
				elems, next = arrayValues(v), 0
				if len(elems) > 0 {
					continue
				}
				if u.preserve {
					return u.preserved(setPath(doc, u.path, expr.Missing)), nil
				}
			case expr.IsNullish(v):
				if u.preserve {
					return u.preserved(doc), nil
				}
			default:
				out := doc
				if u.index != nil {
					out = setPath(out, u.index, expr.Null)
				}
				return bsoncore.Document(out.Data), nil
			}
		}
	}}, nil
}

// preserved is a document kept by preserveNullAndEmptyArrays.
func (u *unwindStage) preserved(doc bsoncore.Value) bsoncore.Document {
	if u.index != nil {
		doc = setPath(doc, u.index, expr.Null)
	}
	return bsoncore.Document(doc.Data)
}

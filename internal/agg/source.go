package agg

import (
	"context"
	"errors"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/opctx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// emptyDoc is {}.
var emptyDoc = bsoncore.Document{5, 0, 0, 0, 0}

// emptySource yields nothing.
type emptySource struct{}

func (emptySource) Next() (bsoncore.Document, error) { return nil, nil }
func (emptySource) Close() error                     { return nil }

// SliceSource returns a Source over docs, in order. Tests and the command
// layer use it for in-memory inputs.
func SliceSource(docs []bsoncore.Document) Source { return &sliceSource{docs: docs} }

type sliceSource struct {
	docs []bsoncore.Document
	i    int
}

func (s *sliceSource) Next() (bsoncore.Document, error) {
	if s.i >= len(s.docs) {
		return nil, nil
	}
	s.i++
	return s.docs[s.i-1], nil
}

func (s *sliceSource) Close() error { return nil }

// ReadAll drains src into a slice of copies and closes it.
func ReadAll(src Source) ([]bsoncore.Document, error) {
	var out []bsoncore.Document
	for {
		d, err := src.Next()
		if err != nil {
			return out, errors.Join(err, src.Close())
		}
		if d == nil {
			return out, src.Close()
		}
		out = append(out, append(bsoncore.Document(nil), d...))
	}
}

// funcSource adapts a next function and the input it reads from.
type funcSource struct {
	in   Source
	next func() (bsoncore.Document, error)
	done func() error // optional cleanup before in is closed
}

func (s *funcSource) Next() (bsoncore.Document, error) { return s.next() }

func (s *funcSource) Close() error {
	var err error
	if s.done != nil {
		err = s.done()
	}
	if s.in != nil {
		err = errors.Join(err, s.in.Close())
	}
	return err
}

// docValue wraps a document as a value.
func docValue(d bsoncore.Document) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

// copyValue returns v with its own bytes, for values kept across Next calls.
func copyValue(v bsoncore.Value) bsoncore.Value {
	return bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)}
}

// field is one name/value pair of a document being rebuilt (bsonx.Field,
// which also gives the helpers below).
type field = bsonx.Field

var (
	fieldsOf   = bsonx.FieldsOf
	getField   = bsonx.GetField
	setField   = bsonx.SetField
	buildDoc   = bsonx.BuildDoc
	buildArray = bsonx.BuildArray
)

// docElems returns the element bytes of a framed document or array.
func docElems(d []byte) ([]byte, bool) {
	l, _, ok := bsoncore.ReadLength(d)
	if !ok || l < 5 || int(l) > len(d) {
		return nil, false
	}
	return d[4 : l-1], true
}

// arrayValues lists an array value's elements.
func arrayValues(v bsoncore.Value) []bsoncore.Value {
	fs := fieldsOf(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: v.Data})
	out := make([]bsoncore.Value, len(fs))
	for i, f := range fs {
		out[i] = f.Value
	}
	return out
}

// lookupPath follows a dotted path through documents only (MongoDB's
// Document::getNestedField): an array on the way yields Missing.
func lookupPath(doc bsoncore.Value, parts []string) bsoncore.Value {
	v := doc
	for _, p := range parts {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return expr.Missing
		}
		v = getField(fieldsOf(v), p)
	}
	return v
}

// setPath returns doc with the dotted path set to v (Missing removes it),
// creating documents on the way and replacing non-documents in the way.
func setPath(doc bsoncore.Value, parts []string, v bsoncore.Value) bsoncore.Value {
	fs := fieldsOf(doc)
	if len(parts) == 1 {
		return docValue(buildDoc(setField(fs, parts[0], v)))
	}
	cur := getField(fs, parts[0])
	if cur.Type != bsoncore.TypeEmbeddedDocument {
		if v.Type == 0 {
			return docValue(buildDoc(fs))
		}
		cur = docValue(emptyDoc)
	}
	return docValue(buildDoc(setField(fs, parts[0], setPath(cur, parts[1:], v))))
}

// splitPath splits a dotted field path and checks its components as
// MongoDB's FieldPath does.
func splitPath(p string) ([]string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return nil, errorf(codeFieldPathNull, "field path must not contain embedded null characters")
	}
	parts := strings.Split(p, ".")
	for _, c := range parts {
		if c == "" {
			return nil, errorf(codeFieldPathEmpty, "FieldPath field names may not be empty strings.")
		}
		if c[0] == '$' {
			return nil, errorf(codeFieldPathDollar, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return parts, nil
}

// checkedSource is a stage's input that ends once the run's context does
// (checked every few hundred documents; see opctx "Checks are cheap"), so
// that every stage's work — a $group or $sort consuming its input, a
// sub-pipeline per $lookup document — stops at maxTimeMS, killOp or a
// client gone.
type checkedSource struct {
	Source
	ctx  context.Context
	poll opctx.Poll
}

func checked(rc *runContext, in Source) Source {
	if rc.ctx == nil || in == nil {
		return in
	}
	return &checkedSource{Source: in, ctx: rc.ctx}
}

func (s *checkedSource) Next() (bsoncore.Document, error) {
	if err := s.poll.Err(s.ctx); err != nil {
		return nil, err
	}
	return s.Source.Next()
}

package commands

import (
	"context"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdDistinct returns the distinct values of a field among the documents the
// query selects. Array values count element by element, as in MongoDB.
func cmdDistinct(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	kv, ok := req.Arg("key")
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "BSON field 'distinct.key' is missing but a required field")
	}
	key, ok := kv.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'distinct.key' is the wrong type '%s', expected type 'string'", typeName(kv.Type))
	}
	if key == "" || strings.HasPrefix(key, "$") {
		return nil, mongoerr.New(mongoerr.BadValue, "'%s' is not a valid distinct key", key)
	}
	sp, err := selectionFor(req, "query")
	if err != nil {
		return nil, err
	}
	src, err := sp.open(ctx, s.Env.Engine)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var values []bsoncore.Value
	size := 0
	add := func(v bsoncore.Value) error {
		for _, have := range values {
			if bsonx.Equal(have, v) {
				return nil
			}
		}
		size += len(v.Data)
		if size > MaxBSONObjectSize {
			return mongoerr.New(mongoerr.BSONObjectTooLarge, "distinct too big, 16mb cap")
		}
		values = append(values, bsoncore.Value{Type: v.Type, Data: append([]byte(nil), v.Data...)})
		return nil
	}
	parts := strings.Split(key, ".")
	for {
		d, err := src.Next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		if err := pathValues(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, parts, add); err != nil {
			return nil, err
		}
	}
	r := NewReply(dst)
	buf := r.Raw()
	var aidx int32
	aidx, *buf = bsoncore.AppendArrayElementStart(*buf, "values")
	for i, v := range values {
		*buf = bsoncore.AppendValueElement(*buf, strconv.Itoa(i), v)
	}
	*buf, _ = bsoncore.AppendArrayEnd(*buf, aidx)
	return r.Finish(), nil
}

// pathValues calls emit for each value at the dotted path, traversing arrays
// of subdocuments and unwinding a final array one level, as distinct does.
func pathValues(v bsoncore.Value, parts []string, emit func(bsoncore.Value) error) error {
	if len(parts) == 0 {
		if arr, ok := v.ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, el := range vals {
				if err := emit(el); err != nil {
					return err
				}
			}
			return nil
		}
		return emit(v)
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		next, err := v.Document().LookupErr(parts[0])
		if err != nil {
			return nil
		}
		return pathValues(next, parts[1:], emit)
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		if i, err := strconv.Atoi(parts[0]); err == nil && i >= 0 {
			if i < len(vals) {
				return pathValues(vals[i], parts[1:], emit)
			}
			return nil
		}
		for _, el := range vals {
			if el.Type == bsoncore.TypeEmbeddedDocument {
				if err := pathValues(el, parts, emit); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

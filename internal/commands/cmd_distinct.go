package commands

import (
	"context"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/exec"
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
	var err error
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'distinct.key' is the wrong type '%s', expected type 'string'", typeName(kv.Type))
	}
	if key == "" || strings.HasPrefix(key, "$") {
		return nil, mongoerr.New(mongoerr.BadValue, "'%s' is not a valid distinct key", key)
	}
	at, err := readAtClusterTime(s, req)
	if err != nil {
		return nil, err
	}
	var values []bsoncore.Value
	if name, ok := req.First().StringValueOK(); ok && isView(s, req.DB, name) {
		if at != 0 {
			return nil, errAsOfView
		}
		values, err = distinctOnView(ctx, s, req, name, key)
	} else {
		var sp exec.Selection
		if sp, err = selectionFor(s, req, "query"); err != nil {
			return nil, err
		}
		sp.AsOf = at
		values, err = s.x().Distinct(ctx, sp, key, MaxBSONObjectSize)
	}
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	buf := r.Raw()
	var aidx int32
	aidx, *buf = bsoncore.AppendArrayElementStart(*buf, "values")
	for i, v := range values {
		*buf = bsoncore.AppendValueElement(*buf, strconv.Itoa(i), v)
	}
	*buf, _ = bsoncore.AppendArrayEnd(*buf, aidx)
	if at != 0 {
		*buf = bsoncore.AppendTimestampElement(*buf, "atClusterTime", at.T(), at.I()) // as mongod's distinct at a snapshot
	}
	return r.Finish(), nil
}

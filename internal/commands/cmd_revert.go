package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdRevertDocument is Cairn's revertDocument: {revertDocument: <coll>,
// _id: <id>, version: <n>} makes version n of a versioned collection's
// document its latest version again in one write (issue #23), and replies
// with the new version's number, {ok: 1, version: <n'>}. It has no MongoDB
// counterpart.
func cmdRevertDocument(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	id, ok := req.Arg("_id")
	if !ok {
		return nil, mongoerr.New(mongoerr.IDLMissingField, "BSON field 'revertDocument._id' is missing but a required field")
	}
	vv, ok := req.Arg("version")
	if !ok {
		return nil, mongoerr.New(mongoerr.IDLMissingField, "BSON field 'revertDocument.version' is missing but a required field")
	}
	switch vv.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble:
	default:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'revertDocument.version' is the wrong type '%s', expected type 'long'", typeName(vv.Type))
	}
	n, ok := numberAsInt(vv)
	if !ok || n < 1 {
		return nil, mongoerr.New(mongoerr.BadValue, "revertDocument.version must be a whole number of at least 1, got %s", vv)
	}
	id = bsoncore.Value{Type: id.Type, Data: append([]byte(nil), id.Data...)}
	next, err := s.Env.Exec.RevertDocument(engine.Namespace{DB: req.DB, Coll: coll}, id, uint64(n))
	if err != nil {
		return nil, err
	}
	return NewReply(dst).Int64("version", int64(next)).Finish(), nil
}

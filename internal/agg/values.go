package agg

import (
	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// typeName is MongoDB's name of v's type ("missing" for Missing).
func typeName(v bsoncore.Value) string { return bsonx.TypeName(v.Type) }

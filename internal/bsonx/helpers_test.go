package bsonx_test

import "github.com/cairndb/cairn/internal/bsonx/bsonxtest"

// Short names for the value constructors, so that tables stay readable.
var (
	i32       = bsonxtest.Int32
	i64       = bsonxtest.Int64
	dbl       = bsonxtest.Double
	dec       = bsonxtest.Decimal
	decBits   = bsonxtest.DecimalBits
	str       = bsonxtest.String
	sym       = bsonxtest.Symbol
	code      = bsonxtest.Code
	bin       = bsonxtest.Binary
	oid       = bsonxtest.ObjectID
	boolean   = bsonxtest.Bool
	date      = bsonxtest.Date
	ts        = bsonxtest.Timestamp
	regex     = bsonxtest.Regex
	dbptr     = bsonxtest.DBPointer
	cws       = bsonxtest.CodeWithScope
	doc       = bsonxtest.Doc
	arr       = bsonxtest.Array
	nested    = bsonxtest.Nested
	raw       = bsonxtest.Raw
	rawDoc    = bsonxtest.RawDoc
	show      = bsonxtest.Show
	minKey    = bsonxtest.MinKey
	maxKey    = bsonxtest.MaxKey
	null      = bsonxtest.Null
	undefined = bsonxtest.Undefined
)

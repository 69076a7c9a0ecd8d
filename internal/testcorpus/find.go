package testcorpus

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Find is a find's selection as the corpora write it, under the keys
// filter, projection, sort, skip, limit and collation.
type Find struct {
	Filter     bsoncore.Document // {} when absent (a Template sets it)
	Projection bsoncore.Document // nil when absent
	Sort       bsoncore.Document // nil when absent
	Skip       int64
	Limit      int64
	Collation  bsoncore.Document // nil when absent (the simple collation)
}

// Set reads e into f when its key is one of Find's; ok is false for any
// other key.
func (f *Find) Set(e Entry) (ok bool, err error) {
	switch e.Key {
	case "filter":
		f.Filter, err = ParseDoc(e.Value)
	case "projection":
		f.Projection, err = ParseDoc(e.Value)
	case "sort":
		f.Sort, err = ParseDoc(e.Value)
	case "skip":
		f.Skip, err = strconv.ParseInt(e.Value, 10, 64)
	case "limit":
		f.Limit, err = strconv.ParseInt(e.Value, 10, 64)
	case "collation":
		f.Collation, err = ParseDoc(e.Value)
	default:
		return false, nil
	}
	return true, err
}

package commands

import (
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// createIDIndex checks create's options about the _id index, which
// mongorestore sends from a dump's metadata: idIndex, validated as MongoDB
// 7.0 validates it (index.ParseIDIndexSpec), and autoIndexId. Every Cairn
// collection is clustered by _id, its _id index {v: 2, key: {_id: 1},
// name: "_id_"} (listIndexes shows it): an idIndex that asks for that,
// whatever its name (MongoDB names the _id index "_id_" too), is what
// create makes; a v: 1 _id index, or none (autoIndexId: false), is refused
// as an option Cairn cannot honour (InvalidOptions). Neither is kept among
// the collection's options: listCollections shows the _id index as idIndex.
func createIDIndex(req *Request) error {
	spec, err := req.Document("idIndex")
	if err != nil {
		return err
	}
	if spec != nil {
		s, err := index.ParseIDIndexSpec(spec)
		if err != nil {
			return err
		}
		if s.Version != 2 {
			return mongoerr.New(mongoerr.InvalidOptions, "idIndex with v: %d is not supported: Cairn's _id index is v: 2", s.Version)
		}
	}
	auto, err := req.Bool("autoIndexId", true)
	if err != nil {
		return err
	}
	if !auto {
		return mongoerr.New(mongoerr.InvalidOptions, "autoIndexId: false is not supported: every Cairn collection is clustered by its _id index")
	}
	// flags (MMAPv1's allocation flags) is deprecated: MongoDB 7.0 checks
	// it is a number and keeps it among the options without effect
	// (WiredTiger has no such flags), and so does Cairn.
	if v, ok := req.Arg("flags"); ok {
		if _, err := safeInt64("create.flags", v); err != nil {
			return err
		}
	}
	return nil
}

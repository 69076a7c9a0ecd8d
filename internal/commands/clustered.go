package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds create's clusteredIndex option. Cairn stores every
// collection by _id already (engine/clustered.go), so a clustered
// collection is one that says so: the option is validated as MongoDB 7.0
// validates it, kept normalized ({v: 2, key: {_id: 1}, name, unique:
// true}) among the collection's options, and shown by listCollections,
// listIndexes and explain; expireAfterSeconds goes with it (the TTL
// monitor expires documents by their _id).

// parseClusteredIndex reads create's clusteredIndex into its normalized
// form.
func parseClusteredIndex(v bsoncore.Value) (bsoncore.Document, error) {
	d, ok := v.DocumentOK()
	if !ok {
		if v.Type == bsoncore.TypeBoolean {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "the legacy clusteredIndex: %v form is for time-series buckets only; give {key: {_id: 1}, unique: true}", v.Boolean())
		}
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'create.clusteredIndex' is the wrong type '%s', expected types '[bool, object]'", typeName(v.Type))
	}
	name := catalog.IDIndexName
	var key bsoncore.Document
	var unique, hasUnique bool
	version := int64(2)
	elems, _ := d.Elements()
	for _, el := range elems {
		x := el.Value()
		switch el.Key() {
		case "key":
			if key, ok = x.DocumentOK(); !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'create.clusteredIndex.key' is the wrong type '%s', expected type 'object'", typeName(x.Type))
			}
		case "unique":
			if unique, ok = x.BooleanOK(); !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'create.clusteredIndex.unique' is the wrong type '%s', expected type 'bool'", typeName(x.Type))
			}
			hasUnique = true
		case "name":
			if name, ok = x.StringValueOK(); !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'create.clusteredIndex.name' is the wrong type '%s', expected type 'string'", typeName(x.Type))
			}
		case "v":
			if version, ok = numberAsInt(x); !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'create.clusteredIndex.v' is the wrong type '%s', expected type 'int'", typeName(x.Type))
			}
		default:
			return nil, mongoerr.New(mongoerr.UnknownField, "BSON field 'create.clusteredIndex.%s' is an unknown field.", el.Key())
		}
	}
	switch {
	case key == nil:
		return nil, mongoerr.New(mongoerr.IDLMissingField, "BSON field 'create.clusteredIndex.key' is missing but a required field")
	case !hasUnique:
		return nil, mongoerr.New(mongoerr.IDLMissingField, "BSON field 'create.clusteredIndex.unique' is missing but a required field")
	case !unique:
		return nil, mongoerr.New(mongoerr.ClusteredIndexNotUnique, "The clusteredIndex option requires unique: true to be specified")
	case !bsonx.Equal(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}, idIndexSpec().Lookup("key")):
		return nil, mongoerr.New(mongoerr.InvalidIndexSpecOption, "The clusteredIndex option is only supported for key: {_id: 1}")
	case version != 2:
		return nil, mongoerr.New(mongoerr.ClusteredIndexVersion, "Invalid clusteredIndex specification %s; cannot create a clusteredIndex with v=%d", d, version)
	}
	return doc("v", int32(2), "key", bson.D{{Key: "_id", Value: int32(1)}}, "name", name, "unique", true), nil
}

// clusteredIDIndex is the _id index of a clustered collection as
// listIndexes shows it; ok false for a collection that is not clustered.
func clusteredIDIndex(c *catalog.Collection) (bsoncore.Document, bool) {
	spec, ok := engine.ClusteredOf(c)
	if !ok {
		return nil, false
	}
	b := bsoncore.NewDocumentBuilder()
	elems, _ := spec.Elements()
	for _, el := range elems {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.AppendBoolean("clustered", true).Build(), true
}

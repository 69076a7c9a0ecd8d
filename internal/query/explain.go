package query

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// Explain describes why doc fails the filter, as MongoDB 7.0's document
// validation errors do (errInfo.details).
func (f *Filter) Explain(doc bsoncore.Document) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().Build()
}

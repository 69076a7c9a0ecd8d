package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/query"
)

// matcher reports whether a document satisfies a filter.
type matcher func(doc bsoncore.Document) bool

// compileFilter parses a filter for the listing commands (listCollections,
// listDatabases), which match small in-memory documents.
func compileFilter(filter bsoncore.Document) (matcher, error) {
	if len(filter) == 0 {
		return func(bsoncore.Document) bool { return true }, nil
	}
	f, err := query.Parse(filter)
	if err != nil {
		return nil, err
	}
	return f.Match, nil
}

func isOperatorDoc(v bsoncore.Value) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	el, err := d.IndexErr(0)
	return err == nil && strings.HasPrefix(el.Key(), "$")
}

package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/update"
)

// modifier turns a matched document into its updated form, with the update
// language: operators ($set, $inc, $push with positional paths…) or a
// replacement document.
type modifier struct {
	u *update.Update
}

// parseModifier reads an update statement's u.
func parseModifier(u bsoncore.Value, arrayFilters []bsoncore.Document, multi bool) (modifier, error) {
	parsed, err := update.Parse(u, update.Options{ArrayFilters: arrayFilters, Multi: multi})
	if err != nil {
		return modifier{}, err
	}
	return modifier{u: parsed}, nil
}

// apply returns the new document for cur, or nil when the update changes
// nothing (a no-op writes nothing and does not count as modified). pos is
// the array position the filter's match bound (for the positional $), or -1.
func (m modifier) apply(cur bsoncore.Document, pos int) (bsoncore.Document, error) {
	next, modified, err := m.u.Apply(cur, update.ApplyContext{ArrayPos: pos, Now: time.Now()})
	if err != nil || !modified {
		return nil, err
	}
	return next, nil
}

// upsertDoc builds the document an upsert inserts when nothing matched: the
// filter's equality fields, then the update with $setOnInsert active. The
// engine makes the _id when neither gives one.
func (m modifier) upsertDoc(filter bsoncore.Document) (bsoncore.Document, error) {
	return m.u.Upsert(filter, update.ApplyContext{ArrayPos: -1, IsUpsertInsert: true, Now: time.Now()})
}

func (m modifier) isReplacement() bool { return m.u.IsReplacement() }

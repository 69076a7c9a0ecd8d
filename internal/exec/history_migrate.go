package exec

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
)

// A chunk migration's moves of versioned histories (engine/history_migrate.go).

// ReadHistories reads the versions of documents ids from times from on.
func (e *Env) ReadHistories(ns engine.Namespace, ids []bsoncore.Value, from []uint64) ([]engine.DocHistory, hlc.Timestamp, error) {
	return e.eng.ReadHistories(ns, ids, from)
}

// DeletedHistories lists the deleted documents of ns with their last live
// versions.
func (e *Env) DeletedHistories(ns engine.Namespace, startAfter bsoncore.Value, maxBytes int) ([]bsoncore.Value, []bsoncore.Document, bool, error) {
	return e.eng.DeletedHistories(ns, startAfter, maxBytes)
}

// InstallHistories writes migrated histories and their documents.
func (e *Env) InstallHistories(ns engine.Namespace, hs []engine.DocHistory, horizon hlc.Timestamp) error {
	return e.eng.InstallHistories(ns, hs, horizon)
}

// PurgeHistories removes documents with their whole histories.
func (e *Env) PurgeHistories(ns engine.Namespace, ids []bsoncore.Value) (int, error) {
	return e.eng.PurgeHistories(ns, ids)
}

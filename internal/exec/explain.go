package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/planner"
)

// Explain runs what the command would run, planned in Explain mode (see
// ExplainRun), and writes nothing: an explained delete or update counts
// what it would do. The command layer renders the returned plan.

// ExplainCount plans sel for explain and, when execute, counts its results
// (count's nCounted, delete's nWouldDelete).
func (e *Env) ExplainCount(ctx context.Context, sel Selection, execute bool) (*planner.Exec, int64, error) {
	var n int64
	ex, err := e.ExplainRun(ctx, sel, execute, func(bsoncore.Document) error { n++; return nil })
	return ex, n, err
}

// WouldUpdate is what an explained update would do.
type WouldUpdate struct {
	Matched, Modified int64
	Upsert            bool // nothing matched and the update upserts
}

// ExplainUpdate plans u's selection for explain and, when execute, runs it
// and applies the update to each document in memory, counting what would
// change.
func (e *Env) ExplainUpdate(ctx context.Context, u Update, execute bool) (*planner.Exec, WouldUpdate, error) {
	var w WouldUpdate
	if !u.Multi {
		u.Sel.Limit = 1
	}
	ex, err := e.ExplainRun(ctx, u.Sel, execute, func(d bsoncore.Document) error {
		w.Matched++
		_, pos := u.Sel.Filter.MatchDetails(d)
		next, err := apply(nil, u.Mod, d, pos, false)
		if err != nil {
			return err
		}
		if next != nil {
			w.Modified++
		}
		return nil
	})
	w.Upsert = execute && w.Matched == 0 && u.Upsert
	return ex, w, err
}

package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdPlanCacheClear forgets the cached plans of one collection. (The cache
// also drops an entry by itself when the collection's indexes change; see
// planner.Cache.) MongoDB's query option, to clear one shape only, is
// accepted and clears the whole collection's entries, which is a superset.
func cmdPlanCacheClear(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	s.Env.Exec.PlanCache().Clear(req.DB + "." + coll)
	return OK(dst), nil
}

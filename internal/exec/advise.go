package exec

import (
	"bytes"
	"context"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/advise"
	"github.com/cairndb/cairn/internal/engine"
)

// AdviseInput reads what the data-model advisor analyses of ns, from one
// snapshot and without blocking writers: a random sample of up to n
// documents (engine.Reader.Sample) and the ready indexes with their use
// since the server started ($indexStats' accesses.ops).
func (e *Env) AdviseInput(ctx context.Context, ns engine.Namespace, n int, rng *rand.Rand) (advise.Input, error) {
	r, err := e.eng.NewReader(ns)
	if err != nil {
		return advise.Input{}, err
	}
	defer r.Close()
	sample, err := r.Sample(ctx, n, rng)
	if err != nil {
		return advise.Input{}, err
	}
	in := advise.Input{NS: ns.String(), Sample: sample}
	for _, ix := range r.Indexes() {
		if ix.Building {
			continue
		}
		use := e.eng.IndexAccesses(ns, ix.Name)
		in.Indexes = append(in.Indexes, advise.Index{Name: ix.Name, Key: ix.Spec.Key, Unique: ix.Spec.Unique,
			Sparse: ix.Spec.Sparse, Partial: ix.Spec.PartialFilterExpression != nil, Ops: use.Ops, UsageKnown: true})
	}
	return in, nil
}

// Documents returns up to limit documents of ns in _id order from one
// snapshot (copies), checking ctx as it reads: for small system
// collections such as system.profile.
func (e *Env) Documents(ctx context.Context, ns engine.Namespace, limit int) ([]bsoncore.Document, error) {
	r, err := e.eng.NewReader(ns)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cur, err := r.Docs(engine.KeyRange{}, false)
	if err != nil {
		return nil, err
	}
	defer cur.Close()
	var out []bsoncore.Document
	for len(out) < limit && cur.Next() {
		if len(out)%256 == 255 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		d, err := cur.Value()
		if err != nil {
			return nil, err
		}
		out = append(out, bytes.Clone(d))
	}
	return out, nil
}

package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/idgen"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// defineIDParams exposes the engine's persisted id parameters
// (documentIdUniquePrefix, autoIncrementOffset, autoIncrementIncrement) to
// getParameter and setParameter.
func defineIDParams(p *Params, eng *engine.Engine) {
	field := func(name string, read func(idgen.Config) int64, write func(*idgen.Config, uint64), limit int64, min int64) {
		p.DefineLive(name,
			func() any { return read(eng.IDConfig()) },
			func(v bsoncore.Value) (any, error) {
				n, ok := numberAsInt(v)
				if !ok || n < min || n > limit {
					return nil, mongoerr.New(mongoerr.BadValue, "%s must be an integer from %d to %d, got %s", name, min, limit, v)
				}
				cfg := eng.IDConfig()
				write(&cfg, uint64(n))
				return nil, eng.SetIDConfig(cfg)
			})
	}
	field("documentIdUniquePrefix", func(c idgen.Config) int64 { return int64(c.Prefix) },
		func(c *idgen.Config, n uint64) { c.Prefix = uint16(n) }, idgen.MaxPrefix, 0)
	field("autoIncrementOffset", func(c idgen.Config) int64 { return int64(c.Offset) },
		func(c *idgen.Config, n uint64) { c.Offset = n }, idgen.MaxIncrement, 1)
	field("autoIncrementIncrement", func(c idgen.Config) int64 { return int64(c.Increment) },
		func(c *idgen.Config, n uint64) { c.Increment = n }, idgen.MaxIncrement, 1)
}

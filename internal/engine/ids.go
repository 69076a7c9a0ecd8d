package engine

import (
	"encoding/binary"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/idgen"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// Persisted server parameters of document id generation (DESIGN.md §5).
var (
	keyIDPrefix    = storage.SystemKey("param/documentIdUniquePrefix")
	keyIDOffset    = storage.SystemKey("param/autoIncrementOffset")
	keyIDIncrement = storage.SystemKey("param/autoIncrementIncrement")
	keyIDStartTS   = storage.SystemKey("idgen/startTimestamp")
)

// The values of the create option idGenerator.
const (
	IDGeneratorObjectID   = "objectId"
	IDGeneratorSequential = "sequential"
)

func (e *Engine) readUint(key []byte, def uint64) (uint64, error) {
	v, ok, err := e.db.Get(nil, key)
	if err != nil || !ok {
		return def, err
	}
	n, k := binary.Uvarint(v)
	if k <= 0 {
		return 0, fmt.Errorf("engine: damaged record %q", key)
	}
	return n, nil
}

// openIDGen loads the id parameters, takes and persists a new start
// timestamp (idgen's "Strictly increasing"), and builds the generator.
func (e *Engine) openIDGen() error {
	prefix, err := e.readUint(keyIDPrefix, 0)
	if err != nil {
		return err
	}
	offset, err := e.readUint(keyIDOffset, 1)
	if err != nil {
		return err
	}
	incr, err := e.readUint(keyIDIncrement, 1)
	if err != nil {
		return err
	}
	ts, err := e.nextStartTS()
	if err != nil {
		return err
	}
	cfg := idgen.Config{Prefix: uint16(prefix), Offset: offset, Increment: incr}
	e.seq, err = idgen.NewSequential(cfg, ts, e.persistStartTS)
	return err
}

// nextStartTS persists and returns the start timestamp a new run (or a
// new primary) issues sequential ids on: above every one persisted.
func (e *Engine) nextStartTS() (uint32, error) {
	last, err := e.readUint(keyIDStartTS, 0)
	if err != nil {
		return 0, err
	}
	ts := idgen.StartTimestamp(e.now().Unix(), uint32(last))
	return ts, e.persistStartTS(ts)
}

func (e *Engine) persistStartTS(ts uint32) error {
	return e.db.Write(func(tx *storage.Txn) error {
		tx.Set(keyIDStartTS, binary.AppendUvarint(nil, uint64(ts)))
		return nil
	})
}

// IDConfig is the current sequential id configuration.
func (e *Engine) IDConfig() idgen.Config { return e.seq.Config() }

// SetIDConfig validates, persists and applies new id parameters. Range
// errors are BadValue, as MongoDB answers setParameter.
func (e *Engine) SetIDConfig(cfg idgen.Config) error {
	if err := cfg.Validate(); err != nil {
		return mongoerr.New(mongoerr.BadValue, "%v", err)
	}
	err := e.db.Write(func(tx *storage.Txn) error {
		tx.Set(keyIDPrefix, binary.AppendUvarint(nil, uint64(cfg.Prefix)))
		tx.Set(keyIDOffset, binary.AppendUvarint(nil, cfg.Offset))
		tx.Set(keyIDIncrement, binary.AppendUvarint(nil, cfg.Increment))
		return nil
	})
	if err != nil {
		return err
	}
	return e.seq.SetConfig(cfg)
}

// idGeneratorOf reads a collection's idGenerator option.
func idGeneratorOf(c *catalog.Collection) string {
	if c == nil || len(c.Options) == 0 {
		return IDGeneratorObjectID
	}
	if s, ok := c.Options.Lookup("idGenerator").StringValueOK(); ok {
		return s
	}
	return IDGeneratorObjectID
}

// validateCreateOptions checks the options the engine itself interprets.
func validateCreateOptions(opts bson.Raw) error {
	if len(opts) == 0 {
		return nil
	}
	v, err := opts.LookupErr("idGenerator")
	if err != nil {
		return nil
	}
	s, ok := v.StringValueOK()
	if !ok || (s != IDGeneratorObjectID && s != IDGeneratorSequential) {
		return mongoerr.New(mongoerr.BadValue, "idGenerator must be \"objectId\" or \"sequential\", got %s", v)
	}
	return nil
}

// idMaker returns the function that makes _ids for documents inserted into
// ns without one.
func (e *Engine) idMaker(ns Namespace) func() (bsoncore.Value, error) {
	if idGeneratorOf(e.cat.Current().Collection(ns.DB, ns.Coll)) != IDGeneratorSequential {
		return func() (bsoncore.Value, error) {
			oid := bson.NewObjectID()
			return bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}, nil
		}
	}
	return func() (bsoncore.Value, error) {
		var buf [28]byte
		id, err := e.seq.AppendNext(buf[:0])
		if err != nil {
			return bsoncore.Value{}, err
		}
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, string(id))}, nil
	}
}

package commands

import (
	"context"
	"os"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds collStats and the aggregation stages that report on a
// collection instead of reading it ($collStats, $indexStats), through
// aggStats, the command layer's agg.Stats.

func cmdCollStats(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, err := req.Collection()
	if err != nil {
		return nil, err
	}
	scale, err := parseScale(req)
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: name}
	ts, isTS := timeseriesOf(s.Env.Engine, ns.DB, ns.Coll)
	statsNS := ns
	if isTS {
		statsNS = ts.Buckets // the figures are its buckets', as in MongoDB
	}
	st, err := s.Env.Engine.CollectionStats(ctx, statsNS)
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	r.String("ns", ns.String())
	if isTS {
		r.Doc("timeseries", timeseriesStats(ts, st))
	}
	appendStorageStats(r, s, statsNS, st, scale)
	return r.Finish(), nil
}

// appendStorageStats appends collStats' figures (the same fields
// $collStats shows as storageStats), sizes divided by scale.
func appendStorageStats(r *Reply, s *Session, ns engine.Namespace, st engine.CollectionStats, scale int64) {
	r.Count("size", st.DataSize/scale)
	r.Count("count", st.Count)
	if st.Count > 0 {
		r.Count("avgObjSize", st.DataSize/st.Count)
	}
	r.Count("numOrphanDocs", 0)
	r.Count("storageSize", st.StorageSize/scale)
	r.Count("freeStorageSize", 0)
	lim, capped := engine.CappedOf(s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll))
	appendCappedStats(r, lim, capped, scale)
	r.Int32("nindexes", int32(len(st.IndexSizes)))
	var building []string
	if coll := s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll); coll != nil {
		for _, ix := range coll.Indexes {
			if ix.Building {
				building = append(building, ix.Name)
			}
		}
	}
	r.StringArray("indexBuilds", building)
	r.Count("totalIndexSize", st.TotalIndexSize()/scale)
	r.Count("totalSize", (st.StorageSize+st.TotalIndexSize())/scale)
	sizes := NewReply(nil)
	for _, ix := range st.IndexSizes {
		sizes.Count(ix.Name, ix.Bytes/scale)
	}
	r.Doc("indexSizes", sizes.End())
	r.Int32("scaleFactor", int32(scale))
}

// hostPort is how $indexStats and $collStats name this server.
func hostPort(s *Session) string {
	host, _ := os.Hostname()
	if s.Env.Config.Port != 0 {
		return host + ":" + strconv.Itoa(s.Env.Config.Port)
	}
	return host
}

// aggStats serves the reporting stages for the namespace an aggregate
// runs against.
type aggStats struct {
	s              *Session
	ns             engine.Namespace
	collectionless bool
}

var _ agg.Stats = aggStats{}

// CollStats builds $collStats' document: ns, host, localTime, then the
// sections spec asks for; latencyStats and queryExecStats come from the
// usage counters Run keeps for every command (usage.go).
func (a aggStats) CollStats(ctx context.Context, spec bsoncore.Document) (bsoncore.Document, error) {
	if a.collectionless {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$collStats must be run against a collection namespace")
	}
	r := NewReply(nil)
	r.String("ns", a.ns.String())
	r.String("host", hostPort(a.s))
	r.Any("localTime", bson.DateTime(time.Now().UnixMilli()))
	statsNS := a.ns
	ts, isTS := timeseriesOf(a.s.Env.Engine, a.ns.DB, a.ns.Coll)
	if isTS {
		statsNS = ts.Buckets // the figures are its buckets', as in MongoDB
	}
	exists := a.s.Env.Engine.Catalog().Collection(statsNS.DB, statsNS.Coll) != nil
	var st *engine.CollectionStats
	stats := func(section string) (engine.CollectionStats, error) {
		if !exists {
			return engine.CollectionStats{}, mongoerr.New(mongoerr.NamespaceNotFound, "Unable to retrieve %s in $collStats stage :: caused by :: Collection [%s] not found.", section, a.ns)
		}
		if st == nil {
			got, err := a.s.Env.Engine.CollectionStats(ctx, statsNS)
			if err != nil {
				return got, err
			}
			st = &got
		}
		return *st, nil
	}
	elems, _ := spec.Elements()
	for _, e := range elems {
		opts, _ := e.Value().DocumentOK()
		switch e.Key() {
		case "latencyStats":
			hist := false
			if v, err := opts.LookupErr("histograms"); err == nil {
				hist, _ = v.BooleanOK()
			}
			r.Doc("latencyStats", a.latencyStats(hist))
		case "storageStats":
			got, err := stats("storageStats")
			if err != nil {
				return nil, err
			}
			scale := int64(1)
			if v, err := opts.LookupErr("scale"); err == nil {
				n, ok := numberAsInt(v)
				if !ok || n < 1 {
					return nil, mongoerr.New(mongoerr.BadValue, "BSON field 'scale' value must be >= 1, actual value '%s'", v)
				}
				scale = n
			}
			sr := NewReply(nil)
			if isTS {
				sr.Doc("timeseries", timeseriesStats(ts, got))
			}
			appendStorageStats(sr, a.s, statsNS, got, scale)
			r.Doc("storageStats", sr.End())
		case "count":
			got, err := stats("count")
			if err != nil {
				return nil, err
			}
			r.Int64("count", got.Count)
		case "queryExecStats":
			var scans int64
			if c := a.s.Env.Usage.lookup(a.ns.String()); c != nil {
				scans = c.collScans.Load()
			}
			r.Doc("queryExecStats", doc("collectionScans", doc("total", scans, "nonTailable", scans)))
		}
	}
	return r.End(), nil
}

// latencyStats is the collection's latencyStats section: its commands'
// latencies by class since the server started (usage.go).
func (a aggStats) latencyStats(histograms bool) bsoncore.Document {
	c := a.s.Env.Usage.lookup(a.ns.String())
	if c == nil {
		c = &collUsage{}
	}
	return latencies(&c.lat, histograms, true)
}

// IndexStats builds one $indexStats document per index, the _id index
// first: name, key, host, accesses {ops, since}, spec, and building: true
// for an index still being built.
func (a aggStats) IndexStats() ([]bsoncore.Document, error) {
	if a.collectionless {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$indexStats must be run against a collection namespace")
	}
	eng := a.s.Env.Engine
	coll := eng.Catalog().Collection(a.ns.DB, a.ns.Coll)
	if coll == nil {
		return nil, nil
	}
	host := hostPort(a.s)
	one := func(name string, key bson.Raw, spec bsoncore.Document, building bool) bsoncore.Document {
		acc := eng.IndexAccesses(a.ns, name)
		r := NewReply(nil)
		r.String("name", name)
		r.Doc("key", bsoncore.Document(key))
		r.String("host", host)
		r.Doc("accesses", doc("ops", acc.Ops, "since", bson.DateTime(acc.Since.UnixMilli())))
		r.Doc("spec", spec)
		if building {
			r.Bool("building", true)
		}
		return r.End()
	}
	idSpec := idIndexSpec()
	out := []bsoncore.Document{one(catalog.IDIndexName, bson.Raw(idSpec.Lookup("key").Document()), idSpec, false)}
	specs, err := eng.IndexSpecs(a.ns)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]bsoncore.Document, len(specs))
	for _, sp := range specs {
		byName[sp.Lookup("name").StringValue()] = sp
	}
	for _, ix := range coll.Indexes {
		if sp, ok := byName[ix.Name]; ok {
			out = append(out, one(ix.Name, ix.Key, sp, ix.Building))
		}
	}
	return out, nil
}

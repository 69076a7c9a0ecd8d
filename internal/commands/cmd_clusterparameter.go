package commands

import (
	"context"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/periodic"
)

// Cluster parameters: setClusterParameter and getClusterParameter, for the
// one MongoDB 7.0 cluster parameter Cairn honours, changeStreamOptions
// ({preAndPostImages: {expireAfterSeconds: "off" | <seconds>}}). As in
// MongoDB it is a document of config.clusterParameters ({_id: name,
// clusterParameterTime, ...value}), so it replicates with the set's other
// writes; every other name is NoSuchKey, as MongoDB answers a parameter it
// does not have. The expired pre-images remover (preImageRemover) reads it
// on each pass.

// clusterParametersNS keeps the cluster parameters, where MongoDB does.
var clusterParametersNS = engine.Namespace{DB: "config", Coll: "clusterParameters"}

const changeStreamOptions = "changeStreamOptions"

func unknownClusterParameter(name string) error {
	return mongoerr.New(mongoerr.NoSuchKey, "Unknown server parameter: %s", name)
}

// cmdSetClusterParameter sets changeStreamOptions.
func cmdSetClusterParameter(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	arg, ok := req.First().DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'setClusterParameter.setClusterParameter' is the wrong type '%s', expected type 'object'", typeName(req.First().Type))
	}
	els, err := arg.Elements()
	if err != nil || len(els) != 1 {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Parameter document must contain exactly one field")
	}
	if els[0].Key() != changeStreamOptions {
		return nil, unknownClusterParameter(els[0].Key())
	}
	expire, err := parseChangeStreamOptions(els[0].Value())
	if err != nil {
		return nil, err
	}
	ts := s.Env.Engine.Storage().Clock().Now()
	b := bsoncore.NewDocumentBuilder().AppendString("_id", changeStreamOptions).
		AppendTimestamp("clusterParameterTime", ts.T(), ts.I())
	img := bsoncore.NewDocumentBuilder()
	if expire > 0 {
		img.AppendInt64("expireAfterSeconds", expire)
	} else {
		img.AppendString("expireAfterSeconds", "off")
	}
	doc := b.AppendDocument("preAndPostImages", img.Build()).Build()
	id := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, changeStreamOptions)}
	// Replace it, or insert it the first time (a concurrent first set
	// that inserted first is replaced).
	for range 2 {
		matched, err := s.Env.Engine.Replace(clusterParametersNS, id, doc)
		if err != nil || matched {
			if err != nil {
				return nil, err
			}
			return NewReply(dst).Finish(), nil
		}
		res, err := s.Env.Engine.Insert(clusterParametersNS, []bsoncore.Document{doc}, true)
		if err == nil && len(res.WriteErrors) > 0 {
			err = res.WriteErrors[0].Err
		}
		if mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
			if err != nil {
				return nil, err
			}
			return NewReply(dst).Finish(), nil
		}
	}
	return nil, mongoerr.New(mongoerr.ConflictingOperationInProgress, "setClusterParameter: another setClusterParameter of %s is in progress", changeStreamOptions)
}

// parseChangeStreamOptions reads changeStreamOptions' value: the seconds
// of expireAfterSeconds, 0 for "off" (or none given).
func parseChangeStreamOptions(v bsoncore.Value) (int64, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'changeStreamOptions' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	els, _ := d.Elements()
	var expire int64
	for _, e := range els {
		if e.Key() != "preAndPostImages" {
			return 0, mongoerr.New(mongoerr.UnknownField, "BSON field 'changeStreamOptions.%s' is an unknown field.", e.Key())
		}
		img, ok := e.Value().DocumentOK()
		if !ok {
			return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'changeStreamOptions.preAndPostImages' is the wrong type '%s', expected type 'object'", typeName(e.Value().Type))
		}
		fields, _ := img.Elements()
		for _, f := range fields {
			if f.Key() != "expireAfterSeconds" {
				return 0, mongoerr.New(mongoerr.UnknownField, "BSON field 'changeStreamOptions.preAndPostImages.%s' is an unknown field.", f.Key())
			}
			switch v := f.Value(); v.Type {
			case bsoncore.TypeString:
				if v.StringValue() != "off" {
					return 0, mongoerr.New(mongoerr.BadValue, "Invalid value for parameter expireAfterSeconds: '%s'. Must be 'off' or a number of seconds greater than 0", v.StringValue())
				}
				expire = 0
			default:
				n, ok := v.AsInt64OK()
				if !ok {
					return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'changeStreamOptions.preAndPostImages.expireAfterSeconds' is the wrong type '%s', expected types '[string, long]'", typeName(v.Type))
				}
				if n <= 0 {
					return 0, mongoerr.New(mongoerr.BadValue, "Invalid value for parameter expireAfterSeconds: %d. Must be 'off' or a number of seconds greater than 0", n)
				}
				expire = n
			}
		}
	}
	return expire, nil
}

// cmdGetClusterParameter answers for changeStreamOptions ("*", its name,
// or a list of names): the stored document, or the default ("off") with
// clusterParameterTime 0 when never set. A standalone leaves
// clusterParameterTime out, as MongoDB 7.0's does.
func cmdGetClusterParameter(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	var names []string
	switch v := req.First(); v.Type {
	case bsoncore.TypeString:
		if n := v.StringValue(); n != "*" {
			names = append(names, n)
		}
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		if len(vals) == 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "Must supply at least one cluster server parameter name to getClusterParameter")
		}
		for _, e := range vals {
			n, ok := e.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'getClusterParameter.getClusterParameter' is the wrong type '%s', expected type 'string'", typeName(e.Type))
			}
			names = append(names, n)
		}
	default:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'getClusterParameter.getClusterParameter' is the wrong type '%s', expected types '[string, array]'", typeName(v.Type))
	}
	for _, n := range names {
		if n != changeStreamOptions {
			return nil, unknownClusterParameter(n)
		}
	}
	doc, err := changeStreamOptionsDoc(s.Env.Engine)
	if err != nil {
		return nil, err
	}
	if s.Env.Repl == nil {
		b := bsoncore.NewDocumentBuilder()
		els, _ := doc.Elements()
		for _, e := range els {
			if e.Key() != "clusterParameterTime" {
				b.AppendValue(e.Key(), e.Value())
			}
		}
		doc = b.Build()
	}
	params := bsoncore.NewArrayBuilder().AppendDocument(doc).Build()
	r := NewReply(dst)
	*r.Raw() = bsoncore.AppendArrayElement(*r.Raw(), "clusterParameters", params)
	return r.Finish(), nil
}

// changeStreamOptionsDoc is changeStreamOptions as stored, or its default.
func changeStreamOptionsDoc(eng *engine.Engine) (bsoncore.Document, error) {
	id := bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, changeStreamOptions)}
	doc, found, err := eng.Get(nil, clusterParametersNS, id)
	if err != nil || found {
		return doc, err
	}
	return bsoncore.NewDocumentBuilder().AppendString("_id", changeStreamOptions).
		AppendTimestamp("clusterParameterTime", 0, 0).
		AppendDocument("preAndPostImages", bsoncore.NewDocumentBuilder().AppendString("expireAfterSeconds", "off").Build()).Build(), nil
}

// preImagesExpireAfter is changeStreamOptions.preAndPostImages.
// expireAfterSeconds (0: off).
func preImagesExpireAfter(eng *engine.Engine) time.Duration {
	doc, err := changeStreamOptionsDoc(eng)
	if err != nil {
		return 0
	}
	n, ok := doc.Lookup("preAndPostImages", "expireAfterSeconds").AsInt64OK()
	if !ok || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// preImageRemovalSleepParam is the remover's period in seconds (MongoDB's
// startup parameter; Cairn's setParameter changes it at runtime too).
const preImageRemovalSleepParam = "expiredChangeStreamPreImageRemovalJobSleepSecs"

// startPreImageRemover removes expired pre-images (engine's
// RemoveExpiredPreImages) every expiredChangeStreamPreImageRemovalJobSleepSecs
// seconds, on the primary only, as MongoDB's
// ChangeStreamExpiredPreImagesRemover does.
func startPreImageRemover(eng *engine.Engine, p *Params, log *slog.Logger, active func() bool) *periodic.Loop {
	period := func() time.Duration {
		v, _ := p.Get(preImageRemovalSleepParam)
		switch n := v.(type) {
		case int32:
			return time.Duration(n) * time.Second
		case int64:
			return time.Duration(n) * time.Second
		}
		return 10 * time.Second
	}
	return periodic.Start(period, 10*time.Second, active, func() {
		if n, err := eng.RemoveExpiredPreImages(time.Now(), preImagesExpireAfter(eng)); err != nil {
			log.Warn("cannot remove expired change stream pre-images", "err", err)
		} else if n > 0 {
			log.Info("removed expired change stream pre-images", "numDeleted", n)
		}
	})
}

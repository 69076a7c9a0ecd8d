package commands

import (
	"context"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// profileNote is what MongoDB's reply says while a filter is set.
const profileNote = "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines."

// cmdProfile serves profile: {profile: level, slowms, sampleRate, filter}.
// Level -1 only reads; 0 turns the database's profiler off, 1 profiles
// slow commands, 2 all of them. slowms and sampleRate are the server's,
// the level and filter the database's. The reply is the previous setting.
func cmdProfile(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	p := s.Env.Profiler
	lv, ok := bsonx.AsFloat64(req.First())
	if !ok || lv != math.Trunc(lv) {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'profile' is the wrong type '%s', expected types '[long, int, decimal, double']", typeName(req.First().Type))
	}
	level := int(lv)
	if lv < -1 || lv > 2 {
		return nil, mongoerr.New(mongoerr.BadValue, "Invalid profiling level: %d", int64(lv))
	}
	slowMS, hasSlow := int64(0), false
	if v, ok := req.Arg("slowms"); ok {
		n, _, isNum := wholeNumber(v)
		if !isNum {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'profile.slowms' is the wrong type '%s', expected types '[long, int, decimal, double']", typeName(v.Type))
		}
		slowMS, hasSlow = n, true
	}
	rate, hasRate := 0.0, false
	if v, ok := req.Arg("sampleRate"); ok {
		f, isNum := bsonx.AsFloat64(v)
		if !isNum {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'profile.sampleRate' is the wrong type '%s', expected types '[long, int, decimal, double']", typeName(v.Type))
		}
		if !(f >= 0 && f <= 1) {
			return nil, mongoerr.New(mongoerr.BadValue, "'sampleRate' must be between 0.0 and 1.0 inclusive")
		}
		rate, hasRate = f, true
	}
	var filter bsoncore.Document
	setFilter := false
	if v, ok := req.Arg("filter"); ok {
		setFilter = true
		switch {
		case v.Type == bsoncore.TypeString && v.StringValue() == "unset":
		case v.Type == bsoncore.TypeEmbeddedDocument:
			filter = v.Document()
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "Expected an object, or the string 'unset'.")
		}
	}
	wasLevel, wasFilter := p.Setting(req.DB)
	r := NewReply(dst)
	r.Int32("was", int32(wasLevel))
	r.Int32("slowms", int32(p.SlowMS()))
	r.Double("sampleRate", p.SampleRate())
	if wasFilter != nil {
		r.Doc("filter", wasFilter)
		r.String("note", profileNote)
	}
	if level == -1 && !hasSlow && !hasRate && !setFilter {
		return r.Finish(), nil
	}
	if err := p.Set(req.DB, level, setFilter, filter); err != nil {
		return nil, err
	}
	if hasSlow {
		p.SetSlowMS(slowMS)
	}
	if hasRate {
		p.SetSampleRate(rate)
	}
	newLevel, newFilter := p.Setting(req.DB)
	s.Env.Log.Info("Profiler settings changed", "c", "COMMAND", "id", 48742, "attr", map[string]any{
		"from": map[string]any{"level": wasLevel, "filter": filterText(wasFilter)},
		"to":   map[string]any{"level": newLevel, "slowms": p.SlowMS(), "sampleRate": p.SampleRate(), "filter": filterText(newFilter)},
	})
	return r.Finish(), nil
}

func filterText(d bsoncore.Document) any {
	if d == nil {
		return nil
	}
	return extJSON(d)
}

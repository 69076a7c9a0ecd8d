package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds what the command layer does for capped collections:
// create's capped, size and max, convertToCapped and
// cloneCollectionAsCapped. The engine enforces the limits (engine's
// capped.go); tailable cursors are in tailable.go.

// maxCappedSize is MongoDB's ceiling on a capped collection's size: 1 PB.
const maxCappedSize = 1 << 50

// cappedSpec is create's capped options as MongoDB 7.0 reads them.
type cappedSpec struct {
	capped    bool
	size, max int64
	hasMax    bool
}

// parseCapped reads capped, size and max from a create command (or its
// options document), with MongoDB 7.0's rules: capped is a boolean or a
// number (its truth); size is required when capped is true and refused
// without it, as is max; size is at least 1 and at most 1 PB, kept as
// given (MongoDB rounded it up to a multiple of 256 before 6.2); max at or
// below 0 is no limit, stored as 2^31-1, and 2^31 or more is refused.
func parseCapped(get func(string) (bsoncore.Value, bool), cmd string) (cappedSpec, error) {
	var c cappedSpec
	v, ok := get("capped")
	if ok && v.Type != bsoncore.TypeNull {
		switch v.Type {
		case bsoncore.TypeBoolean:
			c.capped = v.Boolean()
		case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
			n, err := safeInt64(cmd+".capped", v)
			if err != nil {
				return c, err
			}
			f, _ := v.DoubleOK()
			c.capped = n != 0 || f != 0
		default:
			return c, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.capped' is the wrong type '%s', expected types '[bool, long, int, decimal, double]'", cmd, typeName(v.Type))
		}
	}
	sizeV, hasSize := get("size")
	hasSize = hasSize && sizeV.Type != bsoncore.TypeNull
	maxV, hasMax := get("max")
	hasMax = hasMax && maxV.Type != bsoncore.TypeNull
	if hasSize {
		n, err := safeInt64(cmd+".size", sizeV)
		if err != nil {
			return c, err
		}
		if err := checkCappedSize("size", n); err != nil {
			return c, err
		}
		c.size = n
	}
	if hasMax {
		n, err := safeInt64(cmd+".max", maxV)
		if err != nil {
			return c, err
		}
		if c.max, err = checkCappedMax("max", n); err != nil {
			return c, err
		}
		c.hasMax = true
	}
	if c.capped && !hasSize {
		return c, mongoerr.New(mongoerr.InvalidOptions, "the 'size' field is required when 'capped' is true")
	}
	if (hasSize || hasMax) && !c.capped {
		return c, mongoerr.New(mongoerr.InvalidOptions, "the 'capped' field needs to be true when either the 'size' or 'max' fields are present")
	}
	return c, nil
}

// checkCappedSize applies the IDL's range to a capped size (create's
// size, collMod's cappedSize): 1 to 1 PB.
func checkCappedSize(field string, n int64) error {
	if n < 1 {
		return mongoerr.New(mongoerr.ValueOutOfRange, "BSON field '%s' value must be >= 1, actual value '%d'", field, n)
	}
	if n > maxCappedSize {
		return mongoerr.New(mongoerr.ValueOutOfRange, "BSON field '%s' value must be <= %d, actual value '%d'", field, int64(maxCappedSize), n)
	}
	return nil
}

// checkCappedMax applies the IDL's range to a capped max (create's max,
// collMod's cappedMax): below 2^31; 0 or less is no limit, kept as 2^31-1.
func checkCappedMax(field string, n int64) (int64, error) {
	if n >= 1<<31 {
		return 0, mongoerr.New(mongoerr.ValueOutOfRange, "BSON field '%s' value must be < 2147483648, actual value '%d'", field, n)
	}
	if n <= 0 {
		n = engine.MaxCappedDocs
	}
	return n, nil
}

// cappedResize reads collMod's cappedSize or cappedMax (el) as the
// options field it replaces (size, max). MongoDB checks the range first,
// then that the collection is capped.
func cappedResize(s *Session, ns engine.Namespace, el bsoncore.Element) (bsoncore.Element, error) {
	n, err := safeInt64("collMod."+el.Key(), el.Value())
	if err != nil {
		return nil, err
	}
	r := NewReply(nil)
	if el.Key() == "cappedSize" {
		if err := checkCappedSize("cappedSize", n); err != nil {
			return nil, err
		}
		r.Count("size", n)
	} else {
		if n, err = checkCappedMax("cappedMax", n); err != nil {
			return nil, err
		}
		r.Count("max", n)
	}
	if _, capped := engine.CappedOf(s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll)); !capped {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Collection must be capped.")
	}
	d := r.End()
	return bsoncore.Element(d[4 : len(d)-1]), nil
}

// appendOptions writes the capped options as MongoDB keeps them (capped,
// size, max first in listCollections' options).
func (c cappedSpec) appendOptions(r *Reply) {
	if !c.capped {
		return
	}
	r.Bool("capped", true)
	r.Count("size", c.size)
	if c.hasMax {
		r.Count("max", c.max)
	}
}

// appendCappedStats appends collStats' capped fields: capped, and for a
// capped collection max (0 when unlimited, as MongoDB reports it) and
// maxSize (scaled).
func appendCappedStats(r *Reply, lim engine.CappedLimits, capped bool, scale int64) {
	r.Bool("capped", capped)
	if !capped {
		return
	}
	r.Count("max", lim.Max)
	r.Count("maxSize", lim.Size/scale)
}

// cappedOptionsDoc is the options document of a collection made capped
// with size bytes (convertToCapped, cloneCollectionAsCapped).
func cappedOptionsDoc(size int64) bson.Raw {
	r := NewReply(nil)
	cappedSpec{capped: true, size: size}.appendOptions(r)
	return bson.Raw(r.End())
}

// parseCappedSize reads the size of convertToCapped and
// cloneCollectionAsCapped as MongoDB does (safeNumberLong: a missing or
// non-numeric size is 0): it must be above zero, else InvalidOptions.
func parseCappedSize(req *Request) (int64, error) {
	var n int64
	if v, ok := req.Arg("size"); ok {
		n, _ = safeInt64(req.Name+".size", v) // a non-number reads as 0
	}
	if n <= 0 {
		return 0, mongoerr.New(mongoerr.InvalidOptions, "Capped collection size must be greater than zero")
	}
	return n, checkCappedSize("size", n)
}

// cmdConvertToCapped makes a collection capped in place, keeping its
// newest documents that fit size, in _id order as their insertion order
// (MongoDB copies in natural order; Cairn's natural order of a collection
// that is not capped is _id order).
func cmdConvertToCapped(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, err := req.Collection()
	if err != nil {
		return nil, err
	}
	size, err := parseCappedSize(req)
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: name}
	if err := s.Env.Engine.ConvertToCapped(ns, cappedOptionsDoc(size)); err != nil {
		return nil, err
	}
	return OK(dst), nil
}

// cmdCloneCollectionAsCapped copies a collection into a new capped one of
// the same database.
func cmdCloneCollectionAsCapped(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	from, err := req.Collection()
	if err != nil {
		return nil, err
	}
	v, _ := req.Arg("toCollection")
	to, ok := v.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'toCollection' must be of type String")
	}
	size, err := parseCappedSize(req)
	if err != nil {
		return nil, err
	}
	err = s.Env.Engine.CloneCollectionAsCapped(engine.Namespace{DB: req.DB, Coll: from},
		engine.Namespace{DB: req.DB, Coll: to}, cappedOptionsDoc(size))
	if err != nil {
		return nil, err
	}
	return OK(dst), nil
}

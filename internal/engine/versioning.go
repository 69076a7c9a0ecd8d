package engine

import (
	"encoding/binary"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Versioned collections: the options (create and collMod's versioning and
// create's versionField) and the server-maintained version field. The
// history itself is history.go.

// DefaultVersionField is the name of the version field unless create's
// versionField names another.
const DefaultVersionField = "_v"

// Versioning is a collection's versioning option, parsed.
type Versioning struct {
	Enabled bool
	// MinVersions and MinSeconds are the retention bounds (0: not given).
	// A version is pruned only when it is beyond both; with neither given
	// every version is kept.
	MinVersions, MinSeconds int64
	// Field is the version field's name.
	Field string
}

// KeepsAll reports whether retention never prunes.
func (v Versioning) KeepsAll() bool { return v.MinVersions == 0 && v.MinSeconds == 0 }

// VersioningOf returns c's versioning; ok is false for an unversioned
// collection (or none).
func VersioningOf(c *catalog.Collection) (Versioning, bool) {
	if c == nil || len(c.Options) == 0 {
		return Versioning{}, false
	}
	v, err := parseVersioning("create", c.Options)
	if err != nil || !v.Enabled {
		return Versioning{}, false
	}
	return v, true
}

// parseVersioning reads versioning and versionField from a collection's
// options (cmd names the command in messages), with MongoDB's IDL codes:
// a wrong type is TypeMismatch, an unknown field 40415, a bad value
// BadValue, a versionField without versioning InvalidOptions.
func parseVersioning(cmd string, opts bson.Raw) (Versioning, error) {
	v := Versioning{Field: DefaultVersionField}
	field, hasField := bsoncore.Document(opts).Lookup("versionField"), false
	if field.Type != 0 {
		s, ok := field.StringValueOK()
		if !ok {
			return v, wrongType(cmd+".versionField", field.Type, "string")
		}
		if err := checkVersionField(s); err != nil {
			return v, err
		}
		v.Field, hasField = s, true
	}
	val := bsoncore.Document(opts).Lookup("versioning")
	if val.Type == 0 {
		if hasField {
			return v, mongoerr.New(mongoerr.InvalidOptions, "versionField requires versioning: {enabled: true}")
		}
		return v, nil
	}
	d, ok := val.DocumentOK()
	if !ok {
		return v, wrongType(cmd+".versioning", val.Type, "object")
	}
	elems, err := d.Elements()
	if err != nil {
		return v, mongoerr.New(mongoerr.BadValue, "invalid versioning document: %v", err)
	}
	seenEnabled := false
	for _, el := range elems {
		x := el.Value()
		switch el.Key() {
		case "enabled":
			b, ok := x.BooleanOK()
			if !ok {
				return v, wrongType(cmd+".versioning.enabled", x.Type, "bool")
			}
			v.Enabled, seenEnabled = b, true
		case "minVersionsToKeep", "minSecondsToKeep":
			n, err := retentionBound(cmd, el.Key(), x)
			if err != nil {
				return v, err
			}
			if el.Key() == "minVersionsToKeep" {
				v.MinVersions = n
			} else {
				v.MinSeconds = n
			}
		default:
			return v, mongoerr.New(mongoerr.UnknownField, "BSON field '%s.versioning.%s' is an unknown field.", cmd, el.Key())
		}
	}
	if !seenEnabled {
		return v, mongoerr.New(mongoerr.IDLMissingField, "BSON field '%s.versioning.enabled' is missing but a required field", cmd)
	}
	if hasField && !v.Enabled {
		return v, mongoerr.New(mongoerr.InvalidOptions, "versionField requires versioning: {enabled: true}")
	}
	return v, nil
}

// retentionBound reads minVersionsToKeep or minSecondsToKeep: a whole
// number ≥ 1 (a version count of 0 would keep no version at all).
func retentionBound(cmd, name string, x bsoncore.Value) (int64, error) {
	switch x.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
	default:
		return 0, wrongType(cmd+".versioning."+name, x.Type, "long")
	}
	n, ok := bsonx.AsInt64(x)
	if !ok {
		return 0, mongoerr.New(mongoerr.BadValue, "versioning.%s must be a whole number, got %s", name, x)
	}
	if n < 1 {
		return 0, mongoerr.New(mongoerr.BadValue, "versioning.%s must be at least 1, got %d", name, n)
	}
	return n, nil
}

// checkVersionField refuses names that could not be a top-level field the
// server owns: empty, _id, dotted or $-prefixed.
func checkVersionField(s string) error {
	switch {
	case s == "" || s == "_id" || strings.ContainsAny(s, ".\x00") || s[0] == '$':
		return mongoerr.New(mongoerr.BadValue, "versionField must be a top-level field name other than _id, without '.' or a leading '$', got %q", s)
	}
	return nil
}

func wrongType(field string, t bsoncore.Type, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected type '%s'", field, bsonx.TypeName(t), want)
}

// checkVersioningChange validates the versioning of a collection's options
// next against its options before (cur; nil for create): the version field
// cannot change once chosen, versioning cannot be switched off (the history
// would be silently thrown away: drop the collection instead), and a capped
// collection cannot be versioned (its evictions are not versions).
func checkVersioningChange(cmd string, cur, next bson.Raw, capped bool) error {
	nv, err := parseVersioning(cmd, next)
	if err != nil {
		return err
	}
	if nv.Enabled && capped {
		return mongoerr.New(mongoerr.InvalidOptions, "a capped collection cannot be versioned")
	}
	if cur == nil {
		return nil
	}
	cv, _ := parseVersioning(cmd, cur)
	if cv.Enabled && !nv.Enabled {
		return mongoerr.New(mongoerr.InvalidOptions, "versioning cannot be turned off; drop the collection to discard its history")
	}
	if cv.Enabled && cv.Field != nv.Field {
		return mongoerr.New(mongoerr.InvalidOptions, "versionField cannot be changed")
	}
	return nil
}

// versionOf reads the version field of a stored document (0 when absent,
// which only a document stored before versioning was on can be).
func versionOf(doc bsoncore.Document, field string) uint64 {
	v := doc.Lookup(field)
	if n, ok := v.Int64OK(); ok && n > 0 {
		return uint64(n)
	}
	return 0
}

// withVersion returns doc with its version field set to v (an int64): in
// place when doc has the field, else appended. Every other field keeps its
// position and bytes.
func withVersion(dst []byte, doc bsoncore.Document, field string, v uint64) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	elems, _ := doc.Elements()
	set := false
	for _, el := range elems {
		if el.Key() == field {
			if !set {
				dst = bsoncore.AppendInt64Element(dst, field, int64(v))
				set = true
			}
			continue
		}
		dst = append(dst, el...)
	}
	if !set {
		dst = bsoncore.AppendInt64Element(dst, field, int64(v))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// versioningOfNS looks ns up in the working catalog (pipeline goroutine),
// parsing its options once per options record (versionings).
func (e *Engine) versioningOfNS(ns Namespace) (Versioning, bool) {
	c := e.writeCollection(ns)
	if c == nil || len(c.Options) == 0 {
		return Versioning{}, false
	}
	if cv, ok := e.versionings.m[c.ID]; ok && sameBytes(cv.opts, c.Options) {
		return cv.v, cv.ok
	}
	v, ok := VersioningOf(c)
	if e.versionings.m == nil {
		e.versionings.m = make(map[uint64]cachedVersioning)
	}
	e.versionings.m[c.ID] = cachedVersioning{opts: c.Options, v: v, ok: ok}
	return v, ok
}

// versionings caches each collection's parsed versioning on the pipeline
// goroutine, like the validators ("Serial apply"); a collMod replaces the
// options slice, so an entry is current while its opts are the
// collection's. Entries of dropped collections go with forgetDropped.
type versionings struct{ m map[uint64]cachedVersioning }

type cachedVersioning struct {
	opts []byte
	v    Versioning
	ok   bool
}

// setVersion overwrites, in place, the value of doc's top-level int64
// field named field with v; it reports false (doc unchanged) when doc has
// no such int64 field.
func setVersion(doc []byte, field string, v uint64) bool {
	if len(doc) < 5 {
		return false
	}
	rest := doc[4 : len(doc)-1]
	off := 4
	for len(rest) > 0 {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return false
		}
		if el.Key() == field {
			if el.Value().Type != bsoncore.TypeInt64 {
				return false
			}
			at := off + len(el) - 8
			binary.LittleEndian.PutUint64(doc[at:], v)
			return true
		}
		off += len(el)
		rest = next
	}
	return false
}

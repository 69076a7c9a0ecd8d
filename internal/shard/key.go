package shard

import (
	"bytes"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Field is one field of a shard key pattern.
type Field struct {
	Path   string
	Hashed bool
}

// Pattern is a shard key pattern: ranged fields ({a: 1}) and at most one
// hashed field ({b: "hashed"}), as MongoDB 7.0 allows.
type Pattern struct {
	Fields []Field
	Doc    bsoncore.Document
	spec   *index.Spec // the pattern as an index, for bounds
}

// ParsePattern reads a shard key pattern, with MongoDB's refusals.
func ParsePattern(key bsoncore.Document) (*Pattern, error) {
	els, err := key.Elements()
	if err != nil || len(els) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Shard key pattern must be a non-empty document")
	}
	p := &Pattern{Doc: bytes.Clone(key)}
	hashed := 0
	for _, el := range els {
		name, v := el.Key(), el.Value()
		if name == "" || strings.HasPrefix(name, "$") || strings.Contains(name, "..") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
			return nil, mongoerr.New(mongoerr.BadValue, "Unsupported shard key pattern %s: field %q is not a valid path", key, name)
		}
		f := Field{Path: name}
		if s, ok := v.StringValueOK(); ok && s == "hashed" {
			f.Hashed = true
			hashed++
		} else if n, ok := v.AsFloat64OK(); !ok || n != 1 {
			return nil, mongoerr.New(mongoerr.BadValue, "Unsupported shard key pattern %s. Pattern must either be a single hashed field, or a list of ascending fields", key)
		}
		for _, prev := range p.Fields {
			if prev.Path == name || strings.HasPrefix(name, prev.Path+".") || strings.HasPrefix(prev.Path, name+".") {
				return nil, mongoerr.New(mongoerr.BadValue, "Unsupported shard key pattern %s: paths %q and %q overlap", key, prev.Path, name)
			}
		}
		p.Fields = append(p.Fields, f)
	}
	if hashed > 1 {
		return nil, mongoerr.New(mongoerr.BadValue, "Unsupported shard key pattern %s: at most one field may be hashed", key)
	}
	spec := bsoncore.NewDocumentBuilder().AppendDocument("key", key).AppendString("name", "shardKey").Build()
	if p.spec, err = index.ParseSpec(spec); err != nil {
		return nil, err
	}
	return p, nil
}

// String is the pattern as extended JSON.
func (p *Pattern) String() string { return p.Doc.String() }

// Extract returns doc's shard key document ({path: value, ...} in pattern
// order, a hashed field as its NumberLong hash). A missing field is null,
// as MongoDB stores it; an array on a key path is refused with
// ShardKeyNotFound (61), as MongoDB does.
func (p *Pattern) Extract(doc bsoncore.Document) (bsoncore.Document, error) {
	b := bsoncore.NewDocumentBuilder()
	for _, f := range p.Fields {
		v, err := pathValue(doc, f.Path)
		if err != nil {
			return nil, err
		}
		if f.Hashed {
			v = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, index.Hash(v))}
		}
		b.AppendValue(f.Path, v)
	}
	return b.Build(), nil
}

// pathValue follows a dotted path; arrays anywhere on it are refused.
func pathValue(doc bsoncore.Document, path string) (bsoncore.Value, error) {
	cur := doc
	parts := strings.Split(path, ".")
	for i, part := range parts {
		v, err := cur.LookupErr(part)
		if err != nil {
			return bsoncore.Value{Type: bsoncore.TypeNull}, nil
		}
		if v.Type == bsoncore.TypeArray {
			return bsoncore.Value{}, mongoerr.New(mongoerr.ShardKeyNotFound, "Shard key cannot contain array values or array descendants.")
		}
		if i == len(parts)-1 {
			return v, nil
		}
		d, ok := v.DocumentOK()
		if !ok {
			return bsoncore.Value{Type: bsoncore.TypeNull}, nil
		}
		cur = d
	}
	return bsoncore.Value{Type: bsoncore.TypeNull}, nil
}

// Encode returns the KeyString of a shard key document's values in
// pattern order: shard keys sort as their encodings do.
func (p *Pattern) Encode(key bsoncore.Document) ([]byte, error) {
	var out []byte
	for _, f := range p.Fields {
		v, err := key.LookupErr(f.Path)
		if err != nil {
			return nil, mongoerr.New(mongoerr.ShardKeyNotFound, "shard key %s lacks field %q of pattern %s", key, f.Path, p)
		}
		out = keystring.Append(out, v)
	}
	return out, nil
}

// fill returns the key document whose every field holds v (MinKey,
// MaxKey).
func (p *Pattern) fill(t bsoncore.Type) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, f := range p.Fields {
		b.AppendValue(f.Path, bsoncore.Value{Type: t})
	}
	return b.Build()
}

// MinKey and MaxKey are the ends of the key space.
func (p *Pattern) MinKey() bsoncore.Document { return p.fill(bsoncore.TypeMinKey) }
func (p *Pattern) MaxKey() bsoncore.Document { return p.fill(bsoncore.TypeMaxKey) }

func mustEncode(p *Pattern, key bsoncore.Document) []byte {
	b, err := p.Encode(key)
	if err != nil {
		panic(fmt.Sprintf("shard: encoding a key of the pattern's own shape: %v", err))
	}
	return b
}

// AllowsUniqueIndex reports, with MongoDB's refusal (CannotCreateIndex,
// 67), whether a unique index on key can be enforced on a collection
// sharded on p: each shard checks uniqueness only among its own documents,
// so the index must start with the shard key's fields (a hashed shard key
// field counts by its path) — the _id index excepted, whose uniqueness
// MongoDB leaves to the application and Cairn keeps by unique id prefixes.
func (p *Pattern) AllowsUniqueIndex(key bsoncore.Document) error {
	els, err := key.Elements()
	if err != nil {
		return err
	}
	if len(els) == 1 && els[0].Key() == "_id" {
		return nil
	}
	prefixed := len(els) >= len(p.Fields)
	for i := 0; prefixed && i < len(p.Fields); i++ {
		prefixed = els[i].Key() == p.Fields[i].Path
	}
	if !prefixed {
		return mongoerr.New(mongoerr.CannotCreateIndex, "cannot create unique index over %s with shard key pattern %s", key, p)
	}
	return nil
}

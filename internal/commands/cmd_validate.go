package commands

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/validation"
)

// cmdValidate runs the engine's consistency check (engine.ValidateWith:
// BSON of every document — with checkBSONConformance, bsonx's deeper
// checks —, every document against the collection's validator, every index
// against its documents) and answers in MongoDB 7.0's shape. Every
// validation Cairn runs is full and reads one snapshot without blocking
// writes, so full and background are honoured as given; metadata: true
// checks the index specifications and the validator without reading
// documents; repair is refused until it exists.
func cmdValidate(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, err := req.Collection()
	if err != nil {
		return nil, err
	}
	opts := map[string]bool{}
	for _, opt := range []string{"full", "background", "enforceFastCount", "metadata", "checkBSONConformance"} { // repair is notYet (registry.go)
		if opts[opt], err = req.Bool(opt, false); err != nil {
			return nil, err
		}
	}
	if opts["metadata"] && (opts["full"] || opts["background"] || opts["enforceFastCount"] || opts["checkBSONConformance"]) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Running the validate command with { metadata: true } is not supported with any other options")
	}
	ns := engine.Namespace{DB: req.DB, Coll: name}
	coll := s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Collection '%s' does not exist to validate.", ns)
	}
	if opts["metadata"] {
		return validateMetadata(coll, ns, dst), nil
	}
	v, err := s.Env.Engine.ValidateWith(ctx, ns, engine.ValidateOptions{BSONConformance: opts["checkBSONConformance"]})
	if err != nil {
		return nil, err
	}
	errs := []string{}
	if v.History != "" {
		errs = append(errs, v.History)
	}
	if v.InvalidDocuments > 0 {
		errs = append(errs, fmt.Sprintf("Detected %d invalid documents. See logs for more details.", v.InvalidDocuments))
	}
	keys, details := NewReply(nil), NewReply(nil)
	var extra, missing []bsoncore.Document
	for _, ix := range v.Indexes {
		keys.Count(ix.Name, ix.Keys)
		details.Doc(ix.Name, doc("valid", ix.Valid()))
		if ix.Extra > 0 {
			errs = append(errs, fmt.Sprintf("Index with name '%s' has %d index entries that no document produces.", ix.Name, ix.Extra))
		}
		if ix.Missing > 0 {
			errs = append(errs, fmt.Sprintf("Index with name '%s' lacks %d index entries its documents produce.", ix.Name, ix.Missing))
		}
		if !ix.Valid() {
			s.Env.Log.Error("validate found an inconsistent index", "ns", ns.String(), "index", ix.Name,
				"extra", ix.Extra, "missing", ix.Missing, "firstDifference", ix.FirstDifference)
		}
	}
	// One document per differing entry, as MongoDB's: indexName, the
	// document's _id (Cairn's record id) and the decoded key.
	for _, in := range v.Inconsistencies {
		d := NewReply(nil).String("indexName", in.Index)
		if in.ID.Type != 0 {
			d.Doc("idKey", bsoncore.NewDocumentBuilder().AppendValue("_id", in.ID).Build())
		}
		if in.Key != nil {
			d.Doc("indexKey", in.Key)
		}
		if in.Missing {
			missing = append(missing, d.End())
		} else {
			extra = append(extra, d.End())
		}
	}
	r := NewReply(dst)
	r.String("ns", ns.String())
	r.Any("uuid", coll.UUID)
	r.Int32("nInvalidDocuments", int32(v.InvalidDocuments))
	r.Int32("nNonCompliantDocuments", int32(v.NonCompliant))
	r.Count("nrecords", v.Records)
	r.Int32("nIndexes", int32(len(v.Indexes)))
	r.Doc("keysPerIndex", keys.End())
	r.Doc("indexDetails", details.End())
	r.Bool("valid", v.Valid())
	r.Bool("repaired", false)
	warnings := []string{}
	if v.NonCompliant > 0 {
		warnings = append(warnings, fmt.Sprintf("Detected %d non-compliant documents: they do not satisfy the collection's validator.", v.NonCompliant))
	}
	r.StringArray("warnings", warnings)
	r.StringArray("errors", errs)
	r.DocArray("extraIndexEntries", extra)
	r.DocArray("missingIndexEntries", missing)
	r.Any("corruptRecords", bson.A{})
	if !v.Valid() {
		r.String("advice", "A corrupt namespace has been detected. See http://dochub.mongodb.org/core/data-recovery for recovery steps.")
	}
	return r.Finish(), nil
}

// validateMetadata is validate with metadata: true: the collection's
// metadata only, without reading a document — each index specification
// parses as createIndexes would accept it today, and the collection's
// validator compiles.
func validateMetadata(coll *catalog.Collection, ns engine.Namespace, dst []byte) bsoncore.Document {
	errs := []string{}
	details := NewReply(nil)
	for _, ix := range coll.Indexes {
		_, err := index.ParseSpec(bsoncore.Document(ix.Spec))
		details.Doc(ix.Name, doc("valid", err == nil))
		if err != nil {
			errs = append(errs, fmt.Sprintf("The index specification of '%s' is not valid: %v", ix.Name, err))
		}
	}
	if _, err := validation.FromOptions(coll.Options); err != nil {
		errs = append(errs, fmt.Sprintf("The collection's validator does not compile: %v", err))
	}
	r := NewReply(dst)
	r.String("ns", ns.String())
	r.Any("uuid", coll.UUID)
	r.Int32("nIndexes", int32(len(coll.Indexes)+1))
	r.Doc("indexDetails", details.End())
	r.Bool("valid", len(errs) == 0)
	r.Bool("repaired", false)
	r.StringArray("warnings", []string{})
	r.StringArray("errors", errs)
	return r.Finish()
}

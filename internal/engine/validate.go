package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/storage"
	"github.com/cairndb/cairn/internal/validation"
)

// Validation is what Validate found in one collection: the figures of
// MongoDB's validate command and every inconsistency between the documents
// and their indexes.
type Validation struct {
	// Records counts the stored documents.
	Records int64
	// InvalidDocuments counts documents whose stored BSON is malformed
	// (or, with ValidateOptions.BSONConformance, does not conform).
	InvalidDocuments int64
	// NonCompliant counts documents that fail the collection's validator
	// (MongoDB's nNonCompliantDocuments): written before the validator,
	// with validationAction warn or validationLevel moderate, or bypassing
	// it. They are not errors.
	NonCompliant int64
	// Indexes has one entry per index, the _id index first, then the
	// secondary indexes in creation order.
	Indexes []IndexValidation
	// Inconsistencies lists differing index entries, at most
	// MaxReportedInconsistencies of them.
	Inconsistencies []IndexInconsistency
	// History is what CheckHistory found wrong with a versioned
	// collection's history ("" when nothing, or unversioned).
	History string
}

// MaxReportedInconsistencies bounds Validation.Inconsistencies, so a badly
// damaged index does not make validate's reply exceed the BSON size limit.
const MaxReportedInconsistencies = 100

// IndexInconsistency is one index entry that is missing (the documents
// produce it, the index lacks it) or extra (stored, produced by no
// document).
type IndexInconsistency struct {
	Index   string
	Missing bool
	// Key is the entry's key as {field: value, …} in key-pattern order;
	// nil when the stored bytes do not decode.
	Key bsoncore.Document
	// ID is the _id of the entry's document (for an extra entry, the _id
	// it names); zero when the bytes do not decode.
	ID bsoncore.Value
}

// IndexValidation compares one index with the entries its collection's
// documents produce.
type IndexValidation struct {
	Name string
	// Keys counts the index's stored entries.
	Keys int64
	// Missing counts entries the documents produce that the index lacks;
	// Extra counts stored entries no document produces.
	Missing, Extra int64
	// FirstDifference describes the first differing entry, for messages.
	FirstDifference string
}

// Valid reports whether the index holds exactly its documents' entries.
func (iv IndexValidation) Valid() bool { return iv.Missing == 0 && iv.Extra == 0 }

// Valid reports whether the collection has no inconsistency.
func (v Validation) Valid() bool {
	if v.InvalidDocuments > 0 || v.History != "" {
		return false
	}
	for _, ix := range v.Indexes {
		if !ix.Valid() {
			return false
		}
	}
	return true
}

// Validate checks ns on one snapshot: every document is well-formed BSON
// and every secondary index holds exactly the entries its documents produce
// ("Indexes follow documents"). The _id index is the document keyspace
// itself ("Clustered by _id"), so it is consistent by construction and its
// key count is the record count. A collection that does not exist
// validates as empty. The walk stops with ctx's cause once ctx ends
// (maxTimeMS, killOp, a client gone; package opctx).
func (e *Engine) Validate(ctx context.Context, ns Namespace) (Validation, error) {
	return e.ValidateWith(ctx, ns, ValidateOptions{})
}

// ValidateOptions select validate's optional checks.
type ValidateOptions struct {
	// BSONConformance checks each document with bsonx.CheckConformance
	// (UTF-8, regular expression options, booleans, UUID lengths) instead
	// of well-formedness only (checkBSONConformance).
	BSONConformance bool
}

// ValidateWith is Validate with opts.
func (e *Engine) ValidateWith(ctx context.Context, ns Namespace, opts ValidateOptions) (Validation, error) {
	var v Validation
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return v, nil
	}
	check := func(d bsoncore.Document) error { return d.Validate() }
	if opts.BSONConformance {
		check = bsonx.CheckConformance
	}
	rules, err := validation.FromOptions(coll.Options)
	if err != nil {
		return v, err
	}
	snap := e.db.NewSnapshot()
	defer snap.Close()
	want := map[uint64][]entryString{}
	docPrefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	it, err := snap.NewIter(docPrefix, storage.PrefixEnd(docPrefix))
	if err != nil {
		return v, err
	}
	var poll opctx.Poll
	for ok := it.First(); ok; ok = it.Next() {
		if err := poll.Err(ctx); err != nil {
			it.Close()
			return v, err
		}
		doc, err := it.Value()
		if err != nil {
			it.Close()
			return v, err
		}
		v.Records++
		if check(doc) != nil {
			v.InvalidDocuments++
			continue
		}
		if rules != nil && !rules.Complies(doc) {
			v.NonCompliant++
		}
		if len(coll.Indexes) == 0 {
			continue
		}
		idKey := it.Key()[len(docPrefix):]
		entries, _, err := e.entriesOf(coll, doc, idKey)
		if err != nil {
			it.Close()
			return v, err
		}
		for _, en := range entries {
			want[en.ix.ID] = append(want[en.ix.ID], newEntryString(en.key, valueOf(en, idKey)))
		}
	}
	if err := it.Close(); err != nil {
		return v, err
	}
	v.Indexes = append(v.Indexes, IndexValidation{Name: catalog.IDIndexName, Keys: v.Records})
	for _, ix := range coll.Indexes {
		got, err := indexEntries(ctx, snap, ix.ID)
		if err != nil {
			return v, err
		}
		w := want[ix.ID]
		slices.SortFunc(w, func(a, b entryString) int { return strings.Compare(a.s, b.s) })
		iv := IndexValidation{Name: ix.Name, Keys: int64(len(got))}
		report := func(en entryString, missing bool) {
			if missing {
				iv.Missing++
			} else {
				iv.Extra++
			}
			if len(v.Inconsistencies) < MaxReportedInconsistencies {
				v.Inconsistencies = append(v.Inconsistencies, e.describeEntry(ix, en, missing))
			}
		}
		mergeDifferences(got, w, report)
		if !iv.Valid() {
			iv.FirstDifference = firstDifference(strs(got), strs(w))
		}
		v.Indexes = append(v.Indexes, iv)
	}
	// "History follows documents", on a snapshot of its own.
	if err := e.CheckHistory(ns); err != nil {
		if !errors.Is(err, ErrHistoryBroken) {
			return v, err
		}
		v.History = err.Error()
	}
	return v, nil
}

// entryString is an index entry as one sortable string, its key bytes then
// a separator and its value bytes; keyLen splits it again.
type entryString struct {
	s      string
	keyLen int
}

func newEntryString(key []byte, value string) entryString {
	return entryString{s: string(key) + "\x00value=" + value, keyLen: len(key)}
}

func (en entryString) key() []byte   { return []byte(en.s[:en.keyLen]) }
func (en entryString) value() []byte { return []byte(en.s[en.keyLen+len("\x00value="):]) }

func strs(ens []entryString) []string {
	out := make([]string, len(ens))
	for i, en := range ens {
		out[i] = en.s
	}
	return out
}

// describeEntry decodes an index entry into its key and document _id.
func (e *Engine) describeEntry(ix catalog.Index, en entryString, missing bool) IndexInconsistency {
	out := IndexInconsistency{Index: ix.Name, Missing: missing}
	spec, err := e.specs.get(ix)
	if err != nil {
		return out
	}
	prefix := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
	key := en.key()
	if len(key) < len(prefix) {
		return out
	}
	vals, rest, err := spec.DecodeKey(key[len(prefix):])
	if err != nil {
		return out
	}
	kb := bsoncore.NewDocumentBuilder()
	for i, f := range spec.KeyPattern {
		if i < len(vals) {
			kb.AppendValue(f.Path, vals[i])
		}
	}
	out.Key = kb.Build()
	idKey := rest
	if spec.Unique {
		idKey, _, _ = splitUniqueValue(en.value())
	}
	if id, _, err := keystring.Decode(idKey); err == nil {
		out.ID = id
	}
	return out
}

// indexEntries reads an index's entries, in key order.
func indexEntries(ctx context.Context, snap *storage.Snapshot, indexID uint64) ([]entryString, error) {
	prefix := storage.Prefix(nil, storage.SpaceIndex, indexID)
	it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	var got []entryString
	var poll opctx.Poll
	for ok := it.First(); ok; ok = it.Next() {
		if err := poll.Err(ctx); err != nil {
			it.Close()
			return nil, err
		}
		val, err := it.Value()
		if err != nil {
			it.Close()
			return nil, err
		}
		got = append(got, newEntryString(it.Key(), string(val)))
	}
	return got, it.Close()
}

// mergeDifferences merges two sorted lists and reports each entry found in
// only one: missing (want only) or extra (got only).
func mergeDifferences(got, want []entryString, report func(en entryString, missing bool)) {
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j >= len(want) || i < len(got) && got[i].s < want[j].s:
			report(got[i], false)
			i++
		case i >= len(got) || want[j].s < got[i].s:
			report(want[j], true)
			j++
		default:
			i++
			j++
		}
	}
}

// CheckIndexes verifies that every secondary index of ns holds exactly the
// entries its documents produce ("Indexes follow documents"), reading one
// consistent snapshot. Tests use it after every kind of write; the validate
// command reports the same check in full (Validate).
func (e *Engine) CheckIndexes(ns Namespace) error {
	v, err := e.Validate(context.Background(), ns)
	if err != nil {
		return err
	}
	for _, ix := range v.Indexes {
		if !ix.Valid() {
			return fmt.Errorf("engine: index %s of %s holds %d entries, its documents produce %d (first difference: %s)",
				ix.Name, ns, ix.Keys, ix.Keys-ix.Extra+ix.Missing, ix.FirstDifference)
		}
	}
	if v.InvalidDocuments > 0 {
		return fmt.Errorf("engine: %s holds %d malformed documents", ns, v.InvalidDocuments)
	}
	return nil
}

func valueOf(en indexEntry, idKey []byte) string { return string(en.value(idKey)) }

func firstDifference(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("missing %x", want[i])
		case i >= len(want):
			return fmt.Sprintf("extra %x", got[i])
		case !bytes.Equal([]byte(got[i]), []byte(want[i])):
			return fmt.Sprintf("stored %x, expected %x", got[i], want[i])
		}
	}
	return "none"
}

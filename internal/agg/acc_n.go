package agg

import (
	"sort"
	"strconv"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The n-accumulators: $firstN and $lastN (the first or last n values in
// input order, missing counting as null), $minN and $maxN (the n smallest
// values ascending, or the n largest descending, ignoring null and
// missing), and $topN, $bottomN, $top and $bottom (the output of the first
// or last n documents in sortBy order; ties keep the documents seen
// first). In $group, n is an expression evaluated once per group with the
// group's _id as $$ROOT when the _id is a document (so n may depend on the
// group key), and must be a positive integral number.

func init() {
	for _, op := range []string{"$firstN", "$lastN", "$minN", "$maxN"} {
		registerAcc(op, accKind{parse: parseNAcc})
	}
	for _, op := range []string{"$topN", "$bottomN", "$top", "$bottom"} {
		registerAcc(op, accKind{parse: parseTopBottom})
	}
}

// MongoDB's codes for the n-accumulators' arguments.
const (
	codeNFirstLastSpec = mongoerr.NFirstLastSpec // $firstN/$lastN: "specification must be an object"
	codeNMinMaxSpec    = mongoerr.NMinMaxSpec    // $minN/$maxN: "specification must be an object"
	codeNUnknownArg    = mongoerr.NUnknownArg
	codeNMissingN      = mongoerr.NMissingN
	codeNMissingInput  = mongoerr.NMissingInput
	codeTopSpec        = mongoerr.TopSpec
	codeTopUnknownArg  = mongoerr.TopUnknownArg
	codeTopMissingN    = mongoerr.TopMissingN
	codeTopMissingOut  = mongoerr.TopMissingOut
	codeTopMissingSort = mongoerr.TopMissingSort
	codeTopSortNotObj  = mongoerr.ExpectedObject // BSONElement::Obj on a non-object
	codeTopSortEmpty   = mongoerr.TopSortEmpty
)

// nAccArgs is what parsing an n-accumulator yields.
type nAccArgs struct {
	arg  expr.Expr                 // the per-document input
	n    expr.Expr                 // nil for $top and $bottom (n is 1)
	make func(n int64) accumulator // the accumulator for an evaluated n
}

func parseNAcc(op string, arg bsoncore.Value, pc *parseContext) (nAccArgs, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		code := codeNMinMaxSpec
		if op == "$firstN" || op == "$lastN" {
			code = codeNFirstLastSpec
		}
		return nAccArgs{}, errorf(code, "specification must be an object; found %s: %s", op, printValue(arg))
	}
	var nv, input bsoncore.Value
	for _, f := range fieldsOf(arg) {
		switch f.Name {
		case "n":
			nv = f.Value
		case "input":
			input = f.Value
		default:
			return nAccArgs{}, errorf(codeNUnknownArg, "Unknown argument for 'n' operator: %s", f.Name)
		}
	}
	if nv.Type == 0 {
		return nAccArgs{}, errorf(codeNMissingN, "Missing value for 'n'")
	}
	if input.Type == 0 {
		return nAccArgs{}, errorf(codeNMissingInput, "Missing value for 'input'")
	}
	a := nAccArgs{}
	var err error
	if a.n, err = expr.ParseIn(nv, pc.scope); err != nil {
		return nAccArgs{}, err
	}
	if a.arg, err = expr.ParseIn(input, pc.scope); err != nil {
		return nAccArgs{}, err
	}
	switch op {
	case "$firstN":
		a.make = func(n int64) accumulator { return &firstLastNAcc{accBudget: newAccBudget(op), n: n} }
	case "$lastN":
		a.make = func(n int64) accumulator { return &firstLastNAcc{accBudget: newAccBudget(op), n: n, last: true} }
	case "$minN":
		a.make = func(n int64) accumulator {
			return &minMaxNAcc{accBudget: newAccBudget(op), n: n, sign: 1, coll: pc.opts.collator()}
		}
	default:
		a.make = func(n int64) accumulator {
			return &minMaxNAcc{accBudget: newAccBudget(op), n: n, sign: -1, coll: pc.opts.collator()}
		}
	}
	return a, nil
}

func parseTopBottom(op string, arg bsoncore.Value, pc *parseContext) (nAccArgs, error) {
	single := op == "$top" || op == "$bottom"
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nAccArgs{}, errorf(codeTopSpec, "specification must be an object; found %s: %s", op, printValue(arg))
	}
	var nv, output, sortBy bsoncore.Value
	for _, f := range fieldsOf(arg) {
		switch {
		case f.Name == "n" && !single:
			nv = f.Value
		case f.Name == "output":
			output = f.Value
		case f.Name == "sortBy":
			if f.Value.Type != bsoncore.TypeEmbeddedDocument {
				return nAccArgs{}, errorf(codeTopSortNotObj, "sortBy must be an object, found %s", typeName(f.Value))
			}
			sortBy = f.Value
		default:
			return nAccArgs{}, errorf(codeTopUnknownArg, "Unknown argument to %s '%s'", op, f.Name)
		}
	}
	if !single && nv.Type == 0 {
		return nAccArgs{}, errorf(codeTopMissingN, "Missing value for 'n'")
	}
	if output.Type == 0 {
		return nAccArgs{}, errorf(codeTopMissingOut, "Missing value for 'output'")
	}
	if sortBy.Type == 0 {
		return nAccArgs{}, errorf(codeTopMissingSort, "Missing value for 'sortBy'")
	}
	sf := fieldsOf(sortBy)
	if len(sf) == 0 {
		return nAccArgs{}, errorf(codeTopSortEmpty, "Value for 'sortBy' must be a non-empty object")
	}
	// The input of each document is {output: <output>, k0: "$<sort path 0>",
	// …}; a sort {k0: dir, …} over it orders documents as sortBy orders
	// the originals, with MongoDB's array rules for sort keys.
	argDoc := bsoncore.NewDocumentBuilder().AppendValue("output", output)
	sortDoc := bsoncore.NewDocumentBuilder()
	for i, f := range sf {
		if _, err := splitPath(f.Name); err != nil {
			return nAccArgs{}, err
		}
		k := sortFieldName(i)
		argDoc.AppendString(k, "$"+f.Name)
		sortDoc.AppendValue(k, f.Value)
	}
	if _, err := query.ParseSort(bsoncore.Document(sortBy.Data)); err != nil {
		return nAccArgs{}, err
	}
	spec, err := query.ParseSort(sortDoc.Build())
	if err != nil {
		return nAccArgs{}, err
	}
	if pc.opts.Collation != nil {
		spec = spec.WithCollation(pc.opts.Collation) // sortBy orders strings by the pipeline's collation
	}
	a := nAccArgs{}
	if a.arg, err = expr.ParseIn(docValue(argDoc.Build()), pc.scope); err != nil {
		return nAccArgs{}, err
	}
	if !single {
		if a.n, err = expr.ParseIn(nv, pc.scope); err != nil {
			return nAccArgs{}, err
		}
	}
	bottom := op == "$bottom" || op == "$bottomN"
	a.make = func(n int64) accumulator {
		return &topBottomAcc{accBudget: newAccBudget(op), n: n, single: single, bottom: bottom, sort: spec}
	}
	return a, nil
}

func sortFieldName(i int) string { return "k" + strconv.Itoa(i) }

// evalN evaluates and validates n (expr.ValidN).
func evalN(e expr.Expr, ctx *expr.Context) (int64, error) {
	v, err := e.Eval(ctx)
	if err != nil {
		return 0, err
	}
	return expr.ValidN(v)
}

// firstLastNAcc keeps the first n values, or a ring of the last n: once
// full, $lastN overwrites its oldest value at head, so each add is O(1)
// however large n is.
type firstLastNAcc struct {
	accBudget
	n    int64
	last bool
	vals []bsoncore.Value
	head int // with last and vals full, the index of the oldest value
}

func (a *firstLastNAcc) add(v bsoncore.Value) (int64, error) {
	if v.Type == 0 {
		v = expr.Null
	}
	if int64(len(a.vals)) < a.n {
		grew := int64(len(v.Data) + 24)
		if err := a.charge(grew); err != nil {
			return 0, err
		}
		a.vals = append(a.vals, copyValue(v))
		return grew, nil
	}
	if !a.last {
		return 0, nil
	}
	grew := int64(len(v.Data) - len(a.vals[a.head].Data))
	if err := a.charge(grew); err != nil {
		return 0, err
	}
	a.vals[a.head] = copyValue(v)
	if a.head++; a.head == len(a.vals) {
		a.head = 0
	}
	return grew, nil
}

func (a *firstLastNAcc) result() (bsoncore.Value, error) {
	if a.head == 0 {
		return buildArray(a.vals), nil
	}
	ordered := make([]bsoncore.Value, 0, len(a.vals))
	ordered = append(append(ordered, a.vals[a.head:]...), a.vals[:a.head]...)
	return buildArray(ordered), nil
}

func (a *firstLastNAcc) partial() (bsoncore.Value, error) { return a.result() }

func (a *firstLastNAcc) merge(p bsoncore.Value) error { return addAll(a, p) }

// addAll adds the elements of an array partial: the states of the
// n-accumulators are values they would keep again.
func addAll(a accumulator, p bsoncore.Value) error {
	for _, v := range arrayValues(p) {
		if _, err := a.add(v); err != nil {
			return err
		}
	}
	return nil
}

// minMaxNAcc keeps the n best values sorted best first; sign 1 keeps the
// smallest, -1 the largest.
type minMaxNAcc struct {
	accBudget
	n    int64
	sign int
	coll expr.Collator
	vals []bsoncore.Value
}

func (a *minMaxNAcc) add(v bsoncore.Value) (int64, error) {
	if expr.IsNullish(v) {
		return 0, nil
	}
	// Insert after equal values: the first seen of equals stays first.
	i := sort.Search(len(a.vals), func(i int) bool { return expr.CompareWith(a.vals[i], v, a.coll)*a.sign > 0 })
	if int64(i) >= a.n {
		return 0, nil
	}
	grew := int64(len(v.Data) + 24)
	a.vals = append(a.vals, bsoncore.Value{})
	copy(a.vals[i+1:], a.vals[i:])
	a.vals[i] = copyValue(v)
	if int64(len(a.vals)) > a.n {
		grew -= int64(len(a.vals[len(a.vals)-1].Data) + 24)
		a.vals = a.vals[:len(a.vals)-1]
	}
	return grew, a.charge(grew)
}

func (a *minMaxNAcc) result() (bsoncore.Value, error) { return buildArray(a.vals), nil }

func (a *minMaxNAcc) partial() (bsoncore.Value, error) { return a.result() }

func (a *minMaxNAcc) merge(p bsoncore.Value) error { return addAll(a, p) }

// topBottomAcc keeps up to n (output, sort key) entries in sort order.
type topBottomAcc struct {
	accBudget
	n              int64
	single, bottom bool
	sort           *query.Sort
	entries        []topEntry
}

type topEntry struct {
	key []bsoncore.Value
	out bsoncore.Value
	doc bsoncore.Document // owns the bytes key and out point into
}

func (a *topBottomAcc) add(v bsoncore.Value) (int64, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return 0, nil
	}
	doc := bsoncore.Document(v.Data)
	key := a.sort.Key(doc)
	// Equal keys go after those already kept, so ties favour the first
	// documents seen.
	i := sort.Search(len(a.entries), func(i int) bool { return a.sort.CompareKeys(a.entries[i].key, key) > 0 })
	full := int64(len(a.entries)) >= a.n
	switch {
	case full && !a.bottom && int64(i) >= a.n:
		return 0, nil
	case full && a.bottom && a.sort.CompareKeys(key, a.entries[0].key) <= 0:
		return 0, nil
	}
	doc = append(bsoncore.Document(nil), doc...)
	e := topEntry{key: a.sort.Key(doc), doc: doc}
	e.out = lookupPath(docValue(doc), []string{"output"})
	if e.out.Type == 0 {
		e.out = expr.Null
	}
	grew := int64(len(doc) + 64)
	a.entries = append(a.entries, topEntry{})
	copy(a.entries[i+1:], a.entries[i:])
	a.entries[i] = e
	if int64(len(a.entries)) > a.n {
		var dropped topEntry
		if a.bottom {
			dropped = a.entries[0]
			a.entries = a.entries[1:]
		} else {
			dropped = a.entries[len(a.entries)-1]
			a.entries = a.entries[:len(a.entries)-1]
		}
		grew -= int64(len(dropped.doc) + 64)
	}
	return grew, a.charge(grew)
}

// partial is the kept inputs ({output, k0, …} documents) in sort order.
func (a *topBottomAcc) partial() (bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(a.entries))
	for i, e := range a.entries {
		vals[i] = docValue(e.doc)
	}
	return buildArray(vals), nil
}

func (a *topBottomAcc) merge(p bsoncore.Value) error { return addAll(a, p) }

func (a *topBottomAcc) result() (bsoncore.Value, error) {
	if a.single {
		if len(a.entries) == 0 {
			return expr.Null, nil
		}
		return a.entries[0].out, nil
	}
	vals := make([]bsoncore.Value, len(a.entries))
	for i, e := range a.entries {
		vals[i] = e.out
	}
	return buildArray(vals), nil
}

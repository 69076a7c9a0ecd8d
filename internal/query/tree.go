package query

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The filter tree is the read-only shape of a parsed filter, for the code
// that reasons about a filter instead of matching it: the planner (bounds,
// residual filters, covered plans, $or plans, partial-index implication)
// and index specifications (what a partial filter may hold). It is the
// one reading of a filter's BSON outside the matcher, so that every reader
// agrees with the matcher on what a field means: an operator document or
// a value ({a: {$ref: …, $id: …}} is a DBRef, compared whole), a regex or
// an equality, the object or value form of $elemMatch. Its slices and
// values are the filter's and must not be modified.

// Conjunction is a filter document, or a branch of $and/$or/$nor, or the
// object form of $elemMatch: clauses that must all hold, in written order.
type Conjunction []Clause

// ClauseKind says what a clause of a filter document is.
type ClauseKind uint8

const (
	// PathClause is {path: value} or {path: {operators}}: Ops hold.
	PathClause ClauseKind = iota
	// AndClause, OrClause and NorClause are $and, $or and $nor: Branches.
	AndClause
	OrClause
	NorClause
	// OpaqueClause is a top-level operator the tree does not look into:
	// $expr and $jsonSchema (which read the whole document), $comment,
	// $alwaysTrue and $alwaysFalse, and the DBRef fields $ref, $id and $db
	// (literal equalities). Key names it; Value is its operand.
	OpaqueClause
)

// Clause is one field of a filter document.
type Clause struct {
	Kind ClauseKind
	// Key is the field as written: the path of a PathClause, the operator
	// ("$or", "$expr", …) otherwise.
	Key string
	// Value is the field's value as written: what a residual filter
	// rebuilds from, and what explain shows.
	Value bsoncore.Value
	// Ops are a PathClause's conditions, in written order.
	Ops []Op
	// Branches are the documents of $and/$or/$nor.
	Branches []Conjunction
}

// Op is one condition on a path: an operator and its operand.
type Op struct {
	// Name is the operator: "$eq", "$gt", "$in", "$elemMatch", … A plain
	// value is an Implicit "$eq" ({a: 5}), a plain regex an Implicit
	// "$regex" ({a: /x/}); "$options" appears as written, beside $regex.
	Name     string
	Implicit bool
	// Value is the operand as written.
	Value bsoncore.Value
	// List holds the elements of the operand of $in and $nin.
	List []bsoncore.Value
	// Sub holds the conditions under the operator: $not's operator
	// document (or its regex, an Implicit $regex); $elemMatch's value form
	// ({$elemMatch: {$gt: 1}}); $all's items, each an Implicit $eq, an
	// Implicit $regex or an $elemMatch.
	Sub []Op
	// Elem is the object form of $elemMatch ({$elemMatch: {b: 1}}), nil
	// otherwise.
	Elem Conjunction
}

// PathConditions are the conditions that must all hold on one path.
type PathConditions struct {
	Path string
	Ops  []Op
}

// Conjuncts reads a conjunction as conditions per path: the path clauses
// at this level and under $and (at any depth), grouped by path in the
// order the paths first appear, each path's operators in written order;
// and the $or clauses met on the way, in order. $nor and opaque clauses
// are left out: they constrain no single path.
func (c Conjunction) Conjuncts() (paths []PathConditions, ors []*Clause) {
	at := map[string]int{}
	var walk func(Conjunction)
	walk = func(c Conjunction) {
		for i := range c {
			cl := &c[i]
			switch cl.Kind {
			case AndClause:
				for _, b := range cl.Branches {
					walk(b)
				}
			case OrClause:
				ors = append(ors, cl)
			case PathClause:
				k, ok := at[cl.Key]
				if !ok {
					k = len(paths)
					at[cl.Key] = k
					paths = append(paths, PathConditions{Path: cl.Key})
				}
				paths[k].Ops = append(paths[k].Ops, cl.Ops...)
			}
		}
	}
	walk(c)
	return paths, ors
}

// IsOpaque reports a clause whose meaning the tree does not describe.
func (c *Clause) IsOpaque() bool { return c.Kind == OpaqueClause }

// Tree returns the filter's clauses. The tree is built on first use and
// shared by every caller; it must not be modified.
func (f *Filter) Tree() Conjunction {
	if t := f.tree.Load(); t != nil {
		return *t
	}
	t := conjunction(f.raw)
	f.tree.Store(&t)
	return t
}

// TreeOf reads the tree of a filter document without parsing it, for a
// caller that holds the document of a filter parsed elsewhere (an upsert
// builds its seed from the filter the command parsed). Fields are
// classified as Parse classifies them; on a filter that does not parse the
// tree is still a reading of the structure, not a verdict on it.
func TreeOf(filter bsoncore.Document) Conjunction { return conjunction(filter) }

// conjunction reads a filter document that has parsed, so every shape
// below is known valid.
func conjunction(doc []byte) Conjunction {
	var out Conjunction
	it := elemsOfBytes(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return out
		}
		key := string(k)
		switch key {
		case "$and", "$or", "$nor":
			kind := AndClause
			if key == "$or" {
				kind = OrClause
			} else if key == "$nor" {
				kind = NorClause
			}
			c := Clause{Kind: kind, Key: key, Value: v}
			for _, b := range arrayOf(v) {
				if b.Type == bsoncore.TypeEmbeddedDocument {
					c.Branches = append(c.Branches, conjunction(b.Data))
				}
			}
			out = append(out, c)
			continue
		}
		if len(key) > 0 && key[0] == '$' {
			out = append(out, Clause{Kind: OpaqueClause, Key: key, Value: v})
			continue
		}
		out = append(out, Clause{Kind: PathClause, Key: key, Value: v, Ops: fieldOps(v)})
	}
}

// fieldOps reads the value of {path: value}.
func fieldOps(v bsoncore.Value) []Op {
	switch {
	case v.Type == bsoncore.TypeEmbeddedDocument && isOperatorDoc(v, false):
		return operatorOps(v)
	case v.Type == bsoncore.TypeRegex:
		return []Op{{Name: "$regex", Implicit: true, Value: v}}
	}
	return []Op{{Name: "$eq", Implicit: true, Value: v}}
}

// operatorOps reads an operator document.
func operatorOps(ops bsoncore.Value) []Op {
	var out []Op
	it := elemsOf(ops)
	for {
		k, v, ok := it.next()
		if !ok {
			return out
		}
		op := Op{Name: string(k), Value: v}
		switch op.Name {
		case "$in", "$nin":
			op.List = arrayOf(v)
		case "$not":
			switch v.Type {
			case bsoncore.TypeRegex:
				op.Sub = []Op{{Name: "$regex", Implicit: true, Value: v}}
			case bsoncore.TypeEmbeddedDocument:
				op.Sub = operatorOps(v)
			}
		case "$elemMatch":
			if v.Type == bsoncore.TypeEmbeddedDocument {
				op.Sub, op.Elem = elemMatchForms(v)
			}
		case "$all":
			for _, e := range arrayOf(v) {
				switch {
				case firstFieldIs(e, "$elemMatch"):
					em := lookup(e.Data, "$elemMatch")
					sub := Op{Name: "$elemMatch", Value: em}
					sub.Sub, sub.Elem = elemMatchForms(em)
					op.Sub = append(op.Sub, sub)
				case e.Type == bsoncore.TypeRegex:
					op.Sub = append(op.Sub, Op{Name: "$regex", Implicit: true, Value: e})
				default:
					op.Sub = append(op.Sub, Op{Name: "$eq", Implicit: true, Value: e})
				}
			}
		}
		out = append(out, op)
	}
}

// arrayOf is the elements of v if it is an array (TreeOf reads filters
// that may not have parsed), else none.
func arrayOf(v bsoncore.Value) []bsoncore.Value {
	if v.Type != bsoncore.TypeArray {
		return nil
	}
	return arrayValues(v)
}

// elemMatchForms reads $elemMatch's operand as parseElemMatch does: the
// value form (operators on each element) or the object form (a filter
// over each element).
func elemMatchForms(v bsoncore.Value) ([]Op, Conjunction) {
	if isOperatorDoc(v, true) {
		it := elemsOf(v)
		first, _, _ := it.next()
		if !pathlessOperators[string(first)] {
			return operatorOps(v), nil
		}
	}
	c := conjunction(v.Data)
	if c == nil {
		c = Conjunction{}
	}
	return nil, c
}

// Select returns the filter made of the top-level clauses whose keep flag
// is set (keep is indexed as Tree()), parsed with this filter's options
// (its let variables and $$NOW), and the document it was parsed from, the
// clauses' fields in their order: the planner's residual filter, for the
// conditions an index scan does not already guarantee.
func (f *Filter) Select(keep []bool) (*Filter, bsoncore.Document, error) {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	for i, c := range f.Tree() {
		if keep[i] {
			doc = bsoncore.AppendValueElement(doc, c.Key, c.Value)
		}
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	ms, _ := f.env.now.DateTimeOK()
	sub, err := ParseWith(doc, Options{Vars: f.env.vars, Now: time.UnixMilli(ms), Collation: f.env.coll})
	if err != nil {
		return nil, nil, err
	}
	return sub, doc, nil
}

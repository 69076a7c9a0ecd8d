package query_test

import (
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/query/querytest"
	"github.com/cairndb/cairn/internal/testcorpus"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestTreeFollowsParse checks invariant "One reading of a filter": every
// filter of the corpus that parses is rebuilt from its tree alone — each
// operator from Op.Name and its operand, $in/$nin from List, $not,
// $elemMatch's value form and $all from Sub, $elemMatch's object form from
// Elem, $and/$or/$nor from Branches, plain values as explicit $eq — and
// the rebuilt filter must match exactly the documents the original does.
// A tree that misread a field (an operator document taken for a value, a
// DBRef for operators, the wrong $elemMatch form) would change a match.
func TestTreeFollowsParse(t *testing.T) {
	cases, err := querytest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, c := range cases {
		f, err := query.Parse(c.Filter)
		if err != nil {
			continue
		}
		rebuilt := appendConjunction(t, nil, f.Tree())
		g, err := query.Parse(rebuilt)
		if err != nil {
			t.Errorf("%s: filter %s rebuilt as %s: %v", c.Name, bsoncore.Document(c.Filter), bsoncore.Document(rebuilt), err)
			continue
		}
		for _, d := range c.Docs {
			if f.Match(d) != g.Match(d) {
				t.Errorf("%s: filter %s rebuilt as %s: they disagree on %s", c.Name, bsoncore.Document(c.Filter), bsoncore.Document(rebuilt), d)
			}
		}
		checked++
	}
	if checked < 300 {
		t.Errorf("only %d corpus filters checked", checked)
	}
}

func appendConjunction(t *testing.T, dst []byte, c query.Conjunction) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	for _, cl := range c {
		switch cl.Kind {
		case query.AndClause, query.OrClause, query.NorClause:
			aidx, d := bsoncore.AppendArrayElementStart(dst, cl.Key)
			for i, b := range cl.Branches {
				d = bsoncore.AppendDocumentElement(d, itoa(i), appendConjunction(t, nil, b))
			}
			dst, _ = bsoncore.AppendArrayEnd(d, aidx)
		case query.PathClause:
			if len(cl.Ops) == 1 && cl.Ops[0].Implicit && cl.Ops[0].Name == "$regex" {
				dst = bsoncore.AppendValueElement(dst, cl.Key, cl.Ops[0].Value)
				continue
			}
			dst = bsoncore.AppendDocumentElement(dst, cl.Key, appendOps(t, nil, cl.Ops))
		default:
			if !opaque[cl.Key] {
				// Rebuilt from the raw value, a misread would go unseen.
				t.Errorf("opaque clause %s", cl.Key)
			}
			dst = bsoncore.AppendValueElement(dst, cl.Key, cl.Value)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// opaque are the top-level operators a parsed filter's tree may hold as
// opaque clauses.
var opaque = map[string]bool{"$text": true, "$expr": true, "$jsonSchema": true, "$comment": true, "$alwaysTrue": true, "$alwaysFalse": true,
	"$ref": true, "$id": true, "$db": true}

// appendOps writes an operator document; an implicit $eq becomes an
// explicit one.
func appendOps(t *testing.T, dst []byte, ops []query.Op) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	for _, op := range ops {
		switch op.Name {
		case "$in", "$nin":
			aidx, d := bsoncore.AppendArrayElementStart(dst, op.Name)
			for i, v := range op.List {
				d = bsoncore.AppendValueElement(d, itoa(i), v)
			}
			dst, _ = bsoncore.AppendArrayEnd(d, aidx)
		case "$not":
			if len(op.Sub) == 1 && op.Sub[0].Implicit {
				dst = bsoncore.AppendValueElement(dst, op.Name, op.Sub[0].Value)
				continue
			}
			dst = bsoncore.AppendDocumentElement(dst, op.Name, appendOps(t, nil, op.Sub))
		case "$elemMatch":
			dst = bsoncore.AppendDocumentElement(dst, op.Name, appendElemMatch(t, op))
		case "$all":
			aidx, d := bsoncore.AppendArrayElementStart(dst, op.Name)
			for i, it := range op.Sub {
				if it.Name == "$elemMatch" {
					eidx, e := bsoncore.AppendDocumentStart(nil)
					e = bsoncore.AppendDocumentElement(e, "$elemMatch", appendElemMatch(t, it))
					e, _ = bsoncore.AppendDocumentEnd(e, eidx)
					d = bsoncore.AppendDocumentElement(d, itoa(i), e)
					continue
				}
				d = bsoncore.AppendValueElement(d, itoa(i), it.Value)
			}
			dst, _ = bsoncore.AppendArrayEnd(d, aidx)
		default:
			dst = bsoncore.AppendValueElement(dst, op.Name, op.Value)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func appendElemMatch(t *testing.T, op query.Op) []byte {
	if op.Elem != nil {
		return appendConjunction(t, nil, op.Elem)
	}
	return appendOps(t, nil, op.Sub)
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestSelectKeepsOptions checks that a sub-filter (the planner's residual)
// is parsed with the filter's let variables and $$NOW: a $expr that reads
// them parses and matches as in the whole filter.
func TestSelectKeepsOptions(t *testing.T) {
	doc := func(js string) bsoncore.Document {
		d, err := testcorpus.ParseDoc(js)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	now := time.UnixMilli(1_700_000_000_000)
	f, err := query.ParseWith(doc(`{"a": 1, "$expr": {"$and": [{"$eq": ["$b", "$$v"]}, {"$eq": ["$c", "$$NOW"]}]}}`),
		query.Options{Vars: map[string]bsoncore.Value{"v": bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 7)}}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	sub, raw, err := f.Select([]bool{false, true})
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	if got := len(query.TreeOf(raw)); got != 1 {
		t.Fatalf("sub-filter %s has %d clauses, want 1", raw, got)
	}
	match := doc(`{"a": 2, "b": 7, "c": {"$date": {"$numberLong": "1700000000000"}}}`)
	other := doc(`{"a": 1, "b": 8, "c": {"$date": {"$numberLong": "1700000000000"}}}`)
	if !sub.Match(match) || sub.Match(other) {
		t.Errorf("sub-filter %s: match %v (want true), other %v (want false)", raw, sub.Match(match), sub.Match(other))
	}
}

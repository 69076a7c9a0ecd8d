package query_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/query/querytest"
)

// TestExplain checks Filter.Explain against the errInfo.details MongoDB 7.0
// produces for the same validator and document: the cases of
// testdata/explain, which also run over the wire (the server's
// TestValidationDetailsCorpus).
func TestExplain(t *testing.T) {
	cases, err := querytest.LoadExplain("testdata/explain/validation_errors.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			f, err := query.Parse(tc.Filter)
			if err != nil {
				t.Fatal(err)
			}
			got := bson.Raw(f.Explain(tc.Filter, tc.Doc)).String()
			if want := bson.Raw(tc.Details).String(); got != want {
				t.Errorf("Explain\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestExplainExprError: an $expr that fails to evaluate is explained by its
// error (MongoDB serializes the exception: code, codeName, errmsg). The
// code itself is $divide's business, so only its presence is checked.
func TestExplainExprError(t *testing.T) {
	filter := `{"$expr": {"$divide": [1, "$z"]}}`
	got := bson.Raw(mustParse(t, filter).Explain(doc(t, filter), doc(t, `{"z": 0}`)))
	if r := got.Lookup("reason").StringValue(); r != "failed to evaluate aggregation expression" {
		t.Errorf("reason %q in %s", r, got)
	}
	details, ok := got.Lookup("details").DocumentOK()
	if !ok || details.Lookup("code").Int32() == 0 || details.Lookup("errmsg").StringValue() == "" {
		t.Errorf("details %s, want the evaluation error's code and errmsg", got)
	}
}

// TestExplainCoversCorpus explains every document the query corpus's
// filters reject: an explanation is never empty, names its operator, and
// no list of reasons in it is empty. (The corpus holds several
// hundred filters over every operator, so this also checks Explain never
// panics on what Parse accepts.)
func TestExplainCoversCorpus(t *testing.T) {
	cases, err := querytest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	explained := 0
	for _, c := range cases {
		f, err := query.Parse(c.Filter)
		if err != nil {
			continue
		}
		for _, d := range c.Docs {
			if f.Match(d) {
				continue
			}
			details := bson.Raw(f.Explain(c.Filter, d))
			explained++
			if _, ok := details.Lookup("operatorName").StringValueOK(); !ok {
				t.Errorf("%s: %s fails %s but Explain says %s", c.ID(), bson.Raw(d), bson.Raw(c.Filter), details)
				continue
			}
			if empty := emptyList(details); empty != "" {
				t.Errorf("%s: %s fails %s but the explanation's %s is empty: %s", c.ID(), bson.Raw(d), bson.Raw(c.Filter), empty, details)
			}
		}
	}
	if explained < 500 {
		t.Errorf("only %d rejected documents explained; the corpus should give more", explained)
	}
	t.Logf("%d rejected documents explained", explained)
}

// emptyList finds, anywhere in an explanation, a list of reasons that is
// empty (a failure explained by nothing).
func emptyList(d bson.Raw) string {
	elems, _ := d.Elements()
	for _, e := range elems {
		switch e.Key() {
		case "clausesNotSatisfied", "clausesSatisfied", "schemaRulesNotSatisfied", "propertiesNotSatisfied",
			"schemasNotSatisfied", "failingDependencies", "details", "missingProperties":
			if arr, ok := e.Value().ArrayOK(); ok {
				if vals, _ := arr.Values(); len(vals) == 0 {
					return e.Key()
				}
			}
		}
		switch v := e.Value(); v.Type {
		case bson.TypeEmbeddedDocument:
			if k := emptyList(v.Document()); k != "" {
				return k
			}
		case bson.TypeArray:
			vals, _ := v.Array().Values()
			for _, x := range vals {
				if doc, ok := x.DocumentOK(); ok {
					if k := emptyList(doc); k != "" {
						return k
					}
				}
			}
		}
	}
	return ""
}

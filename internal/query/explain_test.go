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

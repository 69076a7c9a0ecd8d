package expr_test

import (
	"testing"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// opCase is one expression of an operator family's table test: want is
// the relaxed JSON of the value ("missing" for Missing), or code the error
// code.
type opCase struct {
	expr string
	want string
	code mongoerr.Code
}

// checkOps evaluates each case against evalDoc (expr_test.go).
func checkOps(t *testing.T, cases []opCase) {
	t.Helper()
	doc := parseJSON(t, evalDoc)
	for _, tc := range cases {
		d := parseJSON(t, `{"e": `+tc.expr+`}`)
		e, err := expr.Parse(d.Lookup("e"))
		var got bsoncore.Value
		if err == nil {
			got, err = e.Eval(expr.NewContext(doc))
		}
		if tc.code != 0 {
			if mongoerr.CodeOf(err) != tc.code {
				t.Errorf("%s: err = %v, want code %d", tc.expr, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		want := "missing"
		if tc.want != "missing" {
			want = canonical(t, parseJSON(t, `{"v": `+tc.want+`}`).Lookup("v"))
		}
		if g := canonical(t, got); g != want {
			t.Errorf("%s:\n got %s\nwant %s", tc.expr, g, want)
		}
	}
}

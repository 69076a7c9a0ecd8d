package expr_test

import (
	"testing"

	"github.com/cairndb/cairn/internal/expr"
)

// BenchmarkRegexMatch compares a constant pattern (compiled once and
// cached) with the same pattern read from the document (compiled on every
// evaluation).
func BenchmarkRegexMatch(b *testing.B) {
	doc := parseJSON(b, `{"email": "grace@navy.mil", "re": "^[a-z]+@[a-z]+\\.mil$"}`)
	for _, bc := range []struct{ name, src string }{
		{"constant", `{"$regexMatch": {"input": "$email", "regex": "^[a-z]+@[a-z]+\\.mil$"}}`},
		{"fromField", `{"$regexMatch": {"input": "$email", "regex": "$re"}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e, err := expr.Parse(parseJSON(b, `{"e": `+bc.src+`}`).Lookup("e"))
			if err != nil {
				b.Fatal(err)
			}
			ctx := expr.NewContext(doc)
			for b.Loop() {
				if v, err := e.Eval(ctx); err != nil || !expr.Truthy(v) {
					b.Fatalf("%v %v", v, err)
				}
			}
		})
	}
}

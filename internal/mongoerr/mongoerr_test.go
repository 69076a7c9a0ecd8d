package mongoerr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestEveryCodeHasAName reads this package's source: every constant of the
// const block must be a key of the names literal, so a code added without a
// codeName fails here rather than in a driver that reads codeName.
func TestEveryCodeHasAName(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "mongoerr.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	named := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			if n.Tok == token.CONST {
				for _, spec := range n.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						consts = append(consts, id.Name)
					}
				}
			}
		case *ast.ValueSpec:
			if len(n.Names) == 1 && n.Names[0].Name == "names" && len(n.Values) == 1 {
				for _, el := range n.Values[0].(*ast.CompositeLit).Elts {
					named[el.(*ast.KeyValueExpr).Key.(*ast.Ident).Name] = true
				}
			}
		}
		return true
	})
	if len(consts) < 30 || len(named) == 0 {
		t.Fatalf("found %d codes and %d names; did the declarations move?", len(consts), len(named))
	}
	for _, c := range consts {
		if !named[c] {
			t.Errorf("code %s has no codeName in names", c)
		}
	}
	for c := range names {
		if c.Name() == "" {
			t.Errorf("code %d has an empty codeName", c)
		}
	}
}

package cairn_test

import (
	"bytes"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The lint test runs the project's own rules with `go test`, so CI cannot
// skip them (STYLE.md habit 10). `make test` also runs go vet and gofmt -l.

func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestLintGofmt(t *testing.T) {
	for _, f := range goFiles(t) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		formatted, err := format.Source(src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !bytes.Equal(src, formatted) {
			t.Errorf("%s is not gofmt-formatted; run gofmt -w %s", f, f)
		}
	}
}

// TestLintRules checks the project rules: no bare panic("…") (a panic must
// carry an error value or be an invariant with context), and server-side
// packages never import the driver's client (only its bson packages); the
// benchmark harness, a client itself, is the one exception.
func TestLintRules(t *testing.T) {
	fset := token.NewFileSet()
	for _, f := range goFiles(t) {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		isTest := strings.HasSuffix(f, "_test.go")
		// internal/bench is a client (it drives servers through the driver),
		// so it alone may import the driver's client.
		isClient := strings.HasPrefix(f, filepath.Join("internal", "bench")+string(filepath.Separator))
		if !isTest && !isClient && strings.HasPrefix(f, "internal"+string(filepath.Separator)) {
			for _, imp := range file.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, "go.mongodb.org/mongo-driver/v2/mongo") {
					t.Errorf("%s imports the driver client %s; server packages use only bson", f, p)
				}
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "panic" && len(call.Args) == 1 {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					t.Errorf("%s: bare panic(%s); return an error instead", fset.Position(call.Pos()), lit.Value)
				}
			}
			return true
		})
	}
}

// TestLintFilterTree checks the planner's invariant "Filters are read
// through their tree" (internal/planner/doc.go): in internal/planner and
// internal/index, a raw filter — the selectors RawFilter,
// PartialFilterExpression and the stages' rawFilter fields — is only
// carried: it appears as a composite literal's value, on either side of an
// assignment, in a return, under len(), as bson.Raw(x) for explain, or
// compared with nil; never passed to a function that could walk it. And
// only index/partial.go, which parses a specification's filter, calls
// query.Parse or query.ParseWith there.
func TestLintFilterTree(t *testing.T) {
	carriers := map[string]bool{"RawFilter": true, "PartialFilterExpression": true, "rawFilter": true}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range goFiles(t) {
		dir := filepath.ToSlash(filepath.Dir(f))
		if strings.HasSuffix(f, "_test.go") || dir != "internal/planner" && dir != "internal/index" {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		checked++
		var stack []ast.Node
		ast.Inspect(file, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			defer func() { stack = append(stack, n) }()
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "query" && (sel.Sel.Name == "Parse" || sel.Sel.Name == "ParseWith") &&
						filepath.ToSlash(f) != "internal/index/partial.go" {
						t.Errorf("%s: query.%s outside index/partial.go: the planner reads Filter.Tree and builds sub-filters with Filter.Select", fset.Position(call.Pos()), sel.Sel.Name)
					}
				}
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !carriers[sel.Sel.Name] || len(stack) == 0 {
				return true
			}
			if !carriedOnly(stack[len(stack)-1], sel) {
				t.Errorf("%s: raw filter %s used other than carried; read query.Filter.Tree instead", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("only %d files of internal/planner and internal/index checked", checked)
	}
}

// carriedOnly reports whether parent uses the raw filter sel only to carry
// it (see TestLintFilterTree).
func carriedOnly(parent ast.Node, sel *ast.SelectorExpr) bool {
	switch p := parent.(type) {
	case *ast.KeyValueExpr:
		return p.Value == sel
	case *ast.AssignStmt, *ast.ReturnStmt:
		return true
	case *ast.BinaryExpr:
		other := p.X
		if other == sel {
			other = p.Y
		}
		id, ok := other.(*ast.Ident)
		return (p.Op == token.EQL || p.Op == token.NEQ) && ok && id.Name == "nil"
	case *ast.CallExpr:
		switch fn := p.Fun.(type) {
		case *ast.Ident:
			return fn.Name == "len"
		case *ast.SelectorExpr:
			x, ok := fn.X.(*ast.Ident)
			return ok && x.Name == "bson" && fn.Sel.Name == "Raw"
		}
	}
	return false
}

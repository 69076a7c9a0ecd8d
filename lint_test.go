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
		isCommands := !isTest && filepath.Dir(f) == filepath.Join("internal", "commands")
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && isCommands && executes(sel) {
				t.Errorf("%s: commands calls %s; opening plans, executing writes and running pipelines belong to internal/exec", fset.Position(call.Pos()), selectorName(sel))
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

// executes reports a call that runs a read or a write rather than parsing
// or replying: opening a snapshot or a plan, an engine write of documents,
// a pipeline parsed to run. Package commands must leave these to exec (its
// package comment: "Parse here, run in exec").
func executes(sel *ast.SelectorExpr) bool {
	switch sel.Sel.Name {
	case "NewReader", "Modify", "Merge", "ReplaceCollection":
		return true
	}
	if pkg, ok := sel.X.(*ast.Ident); ok {
		switch pkg.Name + "." + sel.Sel.Name {
		case "planner.Prepare", "planner.Open", "planner.NewCache", "agg.Parse":
			return true
		}
	}
	return false
}

// selectorName renders a selector call's function for a message.
func selectorName(sel *ast.SelectorExpr) string {
	if x, ok := sel.X.(*ast.Ident); ok {
		return x.Name + "." + sel.Sel.Name
	}
	return "…." + sel.Sel.Name
}

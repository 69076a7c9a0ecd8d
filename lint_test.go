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

// TestLintErrorCodes keeps MongoDB error codes in one table: outside
// internal/mongoerr no source defines a code number (a constant named
// code… or typed mongoerr.Code with a number literal) or passes a number
// literal where a code goes (mongoerr.Code(n), mongoerr.New(n, …),
// errorf(n, …), mongoerr.Error{Code: n}). Together with mongoerr's
// TestCodeTable (each code defined once, each with its codeName) this
// means no code reaches a reply without a codeName.
func TestLintErrorCodes(t *testing.T) {
	fset := token.NewFileSet()
	isNumber := func(e ast.Expr) bool {
		if u, ok := e.(*ast.UnaryExpr); ok {
			e = u.X
		}
		lit, ok := e.(*ast.BasicLit)
		return ok && lit.Kind == token.INT
	}
	isSel := func(e ast.Expr, pkg, name string) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		id, ok := sel.X.(*ast.Ident)
		return ok && id.Name == pkg && sel.Sel.Name == name
	}
	table := filepath.Join("internal", "mongoerr") + string(filepath.Separator)
	for _, f := range goFiles(t) {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, table) {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				if n.Tok != token.CONST {
					return true
				}
				for _, spec := range n.Specs {
					vs := spec.(*ast.ValueSpec)
					typed := vs.Type != nil && isSel(vs.Type, "mongoerr", "Code")
					for i, id := range vs.Names {
						named := strings.HasPrefix(strings.ToLower(id.Name), "code")
						if i < len(vs.Values) && isNumber(vs.Values[i]) && (typed || named) {
							t.Errorf("%s: code %s defined by number; add it to internal/mongoerr/codes.go and refer to it",
								fset.Position(id.Pos()), id.Name)
						}
					}
				}
			case *ast.CallExpr:
				if len(n.Args) == 0 || !isNumber(n.Args[0]) {
					return true
				}
				id, _ := n.Fun.(*ast.Ident)
				if isSel(n.Fun, "mongoerr", "Code") || isSel(n.Fun, "mongoerr", "New") || id != nil && id.Name == "errorf" {
					t.Errorf("%s: a code passed as a number; use a constant of internal/mongoerr", fset.Position(n.Pos()))
				}
			case *ast.CompositeLit:
				if !isSel(n.Type, "mongoerr", "Error") {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok && isNumber(kv.Value) {
						t.Errorf("%s: a code passed as a number; use a constant of internal/mongoerr", fset.Position(kv.Pos()))
					}
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

// TestLintFuzzCorpora: every fuzz target has a committed seed corpus
// (testdata/fuzz/<Target> beside it), so `go test` replays real inputs and
// `make fuzz` starts from them.
func TestLintFuzzCorpora(t *testing.T) {
	targets := 0
	for _, path := range goFiles(t) {
		if !strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") {
				continue
			}
			targets++
			dir := filepath.Join(filepath.Dir(path), "testdata", "fuzz", fn.Name.Name)
			if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
				t.Errorf("%s: fuzz target %s has no committed corpus in %s", path, fn.Name.Name, dir)
			}
		}
	}
	if targets < 10 {
		t.Errorf("found %d fuzz targets; did the walk miss some?", targets)
	}
}

// TestLintLayoutTable: README's layout table names every package under
// internal/ exactly once, and no package that is not there (issue 15: the
// table says what each package owns, and it is true). A new package fails
// here until its row is written.
func TestLintLayoutTable(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, line := range strings.Split(string(readme), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `internal/"); ok {
			if name, _, ok := strings.Cut(rest, "` |"); ok {
				rows["internal/"+name]++
			}
		}
	}
	pkgs := map[string]bool{}
	for _, path := range goFiles(t) {
		if dir := filepath.ToSlash(filepath.Dir(path)); strings.HasPrefix(dir, "internal/") && strings.Count(dir, "/") == 1 {
			pkgs[dir] = true
		}
	}
	if len(pkgs) < 30 {
		t.Fatalf("found %d packages under internal/; did the walk miss some?", len(pkgs))
	}
	for p := range pkgs {
		if rows[p] != 1 {
			t.Errorf("README's layout table has %d rows for %s, want one", rows[p], p)
		}
	}
	for p := range rows {
		if !pkgs[p] {
			t.Errorf("README's layout table names %s, which is not a package", p)
		}
	}
}

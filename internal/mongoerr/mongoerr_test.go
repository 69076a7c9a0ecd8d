package mongoerr

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// namedAbove1000 lists the codes of 1000 and up that MongoDB 7.0's
// error_codes.yml names (its "non-sequential codes for compatibility").
// Every code below 1000 there is named; every other code is a location
// code whose codeName is Location<code>. 40413-40415 gained IDL names
// after 7.0, so 7.0 still answers Location40415 for an unknown field.
var namedAbove1000 = map[Code]bool{
	9001: true, 10003: true, 10058: true, 10107: true, 10334: true, 11000: true,
	11600: true, 11601: true, 11602: true, 12586: true, 12587: true, 13113: true,
	13297: true, 13388: true, 13435: true, 13436: true, 14031: true, 28769: true,
	31082: true, 46841: true, 50768: true, 50915: true, 56846: true, 57986: true,
	640570: true, 640571: true, 4662500: true,
}

// tableCodes reads codes.go's const block: every code's Go name and number.
func tableCodes(t *testing.T) map[string]Code {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]Code{}
	for _, decl := range file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.INT {
					t.Fatalf("code %s is not a number literal", id.Name)
				}
				n, err := strconv.Atoi(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				codes[id.Name] = Code(n)
			}
		}
	}
	if len(codes) < 400 {
		t.Fatalf("found %d codes in codes.go; did the declarations move?", len(codes))
	}
	return codes
}

// TestCodeTable: every code is defined once, and every code has
// MongoDB's codeName — its name for the named ones, Location<code> for
// the rest — so a reply never goes out without one.
func TestCodeTable(t *testing.T) {
	seen := map[Code]string{}
	for name, c := range tableCodes(t) {
		if other, dup := seen[c]; dup {
			t.Errorf("code %d is defined twice, as %s and %s", c, name, other)
		}
		seen[c] = name
		_, named := names[c]
		wantNamed := c < 1000 || namedAbove1000[c]
		switch {
		case wantNamed && !named:
			t.Errorf("code %s (%d) has a name in MongoDB's error_codes.yml; add it to names", name, c)
		case !wantNamed && named:
			t.Errorf("code %s (%d) is a location code; its codeName is Location%d, not %q", name, c, c, names[c])
		}
		if n := c.Name(); n == "" || !wantNamed && n != "Location"+strconv.Itoa(int(c)) {
			t.Errorf("code %d: codeName %q", c, n)
		}
	}
	for c := range names {
		if _, ok := seen[c]; !ok {
			t.Errorf("names has %d, which codes.go does not define", c)
		}
	}
}

// TestCodeNames pins the codeNames the issue lists as once missing.
func TestCodeNames(t *testing.T) {
	for _, tc := range []struct {
		code Code
		want string
	}{
		{InvalidPipelineOperator, "InvalidPipelineOperator"},
		{ExceededMemoryLimit, "ExceededMemoryLimit"},
		{ConflictingUpdateOps, "ConflictingUpdateOperators"},
		{UnknownStage, "Location40324"},
		{UnwindUnknownOption, "Location28811"},
		{RegexInvalid, "Location51091"},
		{GroupUnknownAcc, "Location15952"},
		{FieldPathDollar, "Location16410"},
		{TooManyCompoundKeys, "Location13103"},
		{UnknownField, "Location40415"},
		{Code(99999999), "Location99999999"}, // a code outside the table still gets one
	} {
		if got := tc.code.Name(); got != tc.want {
			t.Errorf("Code(%d).Name() = %q, want %q", tc.code, got, tc.want)
		}
	}
	if s := New(UnknownStage, "x").Error(); !strings.HasSuffix(s, "(code 40324)") {
		t.Errorf("Error() = %q", s)
	}
}

package agg

import (
	"time"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// EvalLet evaluates the aggregate command's let document into
// Options.Vars: each value is an expression evaluated once, with no
// current document; later variables may refer to earlier ones and to
// $$NOW. Names must be valid user variable names (a lower-case letter or
// non-ASCII first), else code 16867.
func EvalLet(let bsoncore.Document, now time.Time) (map[string]bsoncore.Value, error) {
	if now.IsZero() {
		now = time.Now()
	}
	vars := map[string]bsoncore.Value{}
	names := []string{"NOW"}
	ctx := expr.NewContext(emptyDoc)
	ctx.SetVar("NOW", expr.Date(now.UnixMilli()))
	for _, f := range fieldsOf(docValue(let)) {
		if !validVarName(f.Name) {
			return nil, errorf(codeBadLetName, "'%s' starts with an invalid character for a user variable name", f.Name)
		}
		e, err := expr.ParseIn(f.Value, expr.NewScope(nil, names...))
		if err != nil {
			return nil, err
		}
		v, err := e.Eval(ctx)
		if err != nil {
			return nil, err
		}
		v = copyValue(v)
		vars[f.Name] = v
		ctx.SetVar(f.Name, v)
		names = append(names, f.Name)
	}
	return vars, nil
}

// validVarName is MongoDB's rule for user variable names: a lower-case
// ASCII letter or a non-ASCII byte first, then letters, digits, '_' or
// non-ASCII.
func validVarName(n string) bool {
	if n == "" {
		return false
	}
	if c := n[0]; !(c >= 'a' && c <= 'z' || c >= 0x80) {
		return false
	}
	for i := 1; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80) {
			return false
		}
	}
	return true
}

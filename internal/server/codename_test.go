package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestEveryCodeHasItsCodeNameOnTheWire walks every code of mongoerr's table
// (codes.go, read as source so a code added there is walked too) through a
// real connection: failCommand makes ping fail with the code, and the reply
// must carry the table's codeName — MongoDB's name, or Location<code> for a
// code MongoDB leaves unnamed (TestCodeTable checks the table itself). A
// real location error and a code outside the table arrive named too.
func TestEveryCodeHasItsCodeNameOnTheWire(t *testing.T) {
	s := startTestCommandsServer(t)
	nc := dial(t, s)
	file, err := parser.ParseFile(token.NewFileSet(), "../mongoerr/codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []int32
	ast.Inspect(file, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.INT {
					c, err := strconv.Atoi(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					codes = append(codes, int32(c))
				}
			}
		}
		return true
	})
	if len(codes) < 400 {
		t.Fatalf("read %d codes from codes.go; did the declarations move?", len(codes))
	}
	codes = append(codes, 99999999) // outside the table
	ping := command(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	for _, c := range codes {
		set := command(t, bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
			{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"ping"}}, {Key: "errorCode", Value: c}}}, {Key: "$db", Value: "admin"}})
		if r := roundTrip(t, nc, set); r == nil || r.Lookup("ok").Double() != 1 {
			t.Fatalf("configureFailPoint errorCode %d: %v", c, r)
		}
		r := roundTrip(t, nc, ping)
		if r == nil {
			t.Fatalf("code %d: the server closed the connection", c)
		}
		code, _ := r.Lookup("code").Int32OK()
		name, ok := r.Lookup("codeName").StringValueOK()
		if code != c || !ok || name != mongoerr.Code(c).Name() {
			t.Errorf("code %d went out as code %d codeName %q (present %v), want %q", c, code, name, ok, mongoerr.Code(c).Name())
		}
	}
	// A location error the server raises itself, as a driver sees it.
	r := roundTrip(t, nc, command(t, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$foo", Value: 1}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: "t"}}))
	if name, _ := r.Lookup("codeName").StringValueOK(); r.Lookup("code").Int32() != 40324 || name != "Location40324" {
		t.Fatalf("unknown stage replied %s, want code 40324 codeName Location40324", truncate(r))
	}
	t.Logf("%d codes walked over the wire, each with its codeName", len(codes))
}

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/audit"
)

// TestAuditLogOverTheWire: with an audit log, what MongoDB Enterprise
// audits reaches the file in its shape, as clients do it through the
// driver: a failed and a successful authentication, an authorization
// failure (authCheck, without the arguments of a command carrying a
// password), user creation (never its password), DDL (create, index
// build, index drop, collection drop, database drop); ordinary reads and
// writes are not audited.
func TestAuditLogOverTheWire(t *testing.T) {
	s := startAuthServer(t)
	path := filepath.Join(t.TempDir(), "audit.json")
	l, err := audit.Open(audit.Options{Destination: audit.DestFile, Path: path, Local: s.addr})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s.env.Audit = l
	ctx := context.Background()
	anon := s.client(t)
	if err := runCmd(anon, "admin", bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "s3cret-pw"}, {Key: "roles", Value: bson.A{"root"}}}); err != nil {
		t.Fatal(err)
	}
	if err := runCmd(anon, "test", bson.D{{Key: "find", Value: "c"}}); codeOf(err) != 13 {
		t.Fatalf("anonymous find: %v", err)
	}
	bad := s.as(t, "admin", "root", "wrong", "SCRAM-SHA-256")
	if err := runCmd(bad, "admin", bson.D{{Key: "ping", Value: 1}}); err == nil {
		t.Fatal("wrong password authenticated")
	}
	root := s.as(t, "admin", "root", "s3cret-pw", "SCRAM-SHA-256")
	db := root.Database("app")
	if err := db.CreateCollection(ctx, "items"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("items").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := runCmd(root, "app", bson.D{{Key: "createIndexes", Value: "items"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := runCmd(root, "app", bson.D{{Key: "dropIndexes", Value: "items"}, {Key: "index", Value: "x_1"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection("items").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "s3cret-pw") || strings.Contains(string(raw), "wrong") {
		t.Fatalf("a password reached the audit log:\n%s", raw)
	}
	var got []string
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		var ev struct {
			AType  string         `json:"atype"`
			Param  map[string]any `json:"param"`
			Result int            `json:"result"`
			Users  []struct{ User, DB string }
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		line := ev.AType
		for _, k := range []string{"ns", "user", "mechanism", "indexName", "command"} {
			if v, ok := ev.Param[k]; ok {
				line += " " + k + "=" + v.(string)
			}
		}
		if ev.Result != 0 {
			line += " result=" + strconv.Itoa(ev.Result)
		}
		got = append(got, line)
	}
	want := []string{
		"createUser user=root",
		"authCheck ns=test.c command=find result=13",
		"authenticate user=root mechanism=SCRAM-SHA-256 result=18",
		"authenticate user=root mechanism=SCRAM-SHA-256",
		"createCollection ns=app.items",
		"createIndex ns=app.items indexName=x_1",
		"dropIndex ns=app.items indexName=x_1",
		"dropCollection ns=app.items",
		"dropDatabase ns=app",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

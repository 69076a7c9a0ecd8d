package router

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestListLocalSessionsAccess: under access control $listLocalSessions {}
// lists the caller's own sessions, a user may name itself, and another
// user's sessions or allUsers need listSessions on the cluster (root has
// it; a readWrite user does not: Unauthorized), as MongoDB's.
func TestListLocalSessionsAccess(t *testing.T) {
	ctx := context.Background()
	r := keyedRouter(t)
	local := &connAuth{remote: "127.0.0.1:1"}
	if err := memberclient.Err(runAs(r, local, "admin", bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"root"}}})); err != nil {
		t.Fatal(err)
	}
	users, _ := r.userStore(ctx, true)
	rootUser, _ := users.Lookup("admin", "root")
	root := &connAuth{remote: "10.0.0.1:1", user: rootUser}
	if err := memberclient.Err(runAs(r, root, "admin", bson.D{{Key: "createUser", Value: "u1"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "app"}}}}})); err != nil {
		t.Fatal(err)
	}
	users, _ = r.userStore(ctx, true)
	u1User, ok := users.Lookup("admin", "u1")
	if !ok {
		t.Fatal("u1 was not made")
	}
	u1 := &connAuth{remote: "10.0.0.1:2", user: u1User}
	for _, a := range []*connAuth{u1, root, root} {
		if err := memberclient.Err(runAs(r, a, "admin", bson.D{{Key: "startSession", Value: 1}})); err != nil {
			t.Fatal(err)
		}
	}
	list := func(spec bson.D) bson.D {
		return bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$listLocalSessions", Value: spec}}}}, {Key: "cursor", Value: bson.D{}}}
	}
	for _, tc := range []struct {
		name string
		who  *connAuth
		spec bson.D
		code mongoerr.Code // 0: answers want sessions
		want int
	}{
		{"own sessions", u1, bson.D{}, 0, 1},
		{"naming oneself", u1, bson.D{{Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "u1"}, {Key: "db", Value: "admin"}}}}}, 0, 1},
		{"naming another user", u1, bson.D{{Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "root"}, {Key: "db", Value: "admin"}}}}}, mongoerr.Unauthorized, 0},
		{"allUsers without listSessions", u1, bson.D{{Key: "allUsers", Value: true}}, mongoerr.Unauthorized, 0},
		{"root's own", root, bson.D{}, 0, 2},
		{"root naming u1", root, bson.D{{Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "u1"}, {Key: "db", Value: "admin"}}}}}, 0, 1},
		{"root, allUsers", root, bson.D{{Key: "allUsers", Value: true}}, 0, 3},
		{"unauthenticated", &connAuth{remote: "10.0.0.1:3"}, bson.D{}, mongoerr.Unauthorized, 0},
		{"an unknown field", root, bson.D{{Key: "all", Value: true}}, mongoerr.UnknownField, 0},
	} {
		reply := runAs(r, tc.who, "app", list(tc.spec))
		err := memberclient.Err(reply)
		if got := mongoerr.CodeOf(err); got != tc.code {
			t.Errorf("%s: %v (code %d), want code %d", tc.name, err, got, tc.code)
			continue
		}
		if tc.code != 0 {
			continue
		}
		arr, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
		vals, _ := arr.Values()
		if len(vals) != tc.want {
			t.Errorf("%s: %d sessions, want %d: %s", tc.name, len(vals), tc.want, reply)
		}
	}
}

package cairn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestRouterSurface runs through a router of two shards what mongosh's
// helpers and getShardDistribution need beyond reads and writes (issue 21):
// $collStats as one document per shard, naming it, with the rest of the
// pipeline run over those documents; collectionless aggregation
// ($currentOp merged from every shard, $documents, $listLocalSessions) and
// the first stages refused with MongoDB's codes; balancerCollectionStatus;
// and the 7.0 commands refused by name (movePrimary). Table-driven: one
// stanza per case.
func TestRouterSurface(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers")
	}
	sc := startShardedCluster(t, 2)
	ctx := context.Background()
	c := routerClient(t, sc.router)
	for _, s := range sc.shards {
		runAdmin(t, c, bson.D{{Key: "addShard", Value: s}})
	}
	runAdmin(t, c, bson.D{{Key: "enableSharding", Value: "app"}})
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "app.users"}, {Key: "key", Value: bson.D{{Key: "uid", Value: "hashed"}}}})
	const n = 120
	var docs []any
	for i := range n {
		docs = append(docs, bson.D{{Key: "uid", Value: i}, {Key: "name", Value: "u"}})
	}
	if _, err := c.Database("app").Collection("users").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Database("app").Collection("plain").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var dbDoc bson.M
	if err := c.Database("config").Collection("databases").FindOne(ctx, bson.D{{Key: "_id", Value: "app"}}).Decode(&dbDoc); err != nil {
		t.Fatal(err)
	}
	primary := dbDoc["primary"].(string)
	sess := runAdmin(t, c, bson.D{{Key: "startSession", Value: 1}})
	sessID := pathOf(sess, "id", "id").(bson.Binary)

	// aggregate runs cmd and returns its documents decoded, and raw (in
	// their fields' order).
	aggregate := func(db string, cmd bson.D) ([]bson.M, []bson.Raw, error) {
		cur, err := c.Database(db).RunCommandCursor(ctx, cmd)
		if err != nil {
			return nil, nil, err
		}
		var out []bson.M
		var raws []bson.Raw
		for cur.Next(ctx) {
			var m bson.M
			if err := cur.Decode(&m); err != nil {
				return nil, nil, err
			}
			out = append(out, m)
			raws = append(raws, append(bson.Raw(nil), cur.Current...))
		}
		return out, raws, cur.Err()
	}
	pipe := func(coll any, stages ...bson.D) bson.D {
		a := bson.A{}
		for _, s := range stages {
			a = append(a, s)
		}
		return bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: a}, {Key: "cursor", Value: bson.D{}}}
	}
	storage := bson.D{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{}}}}}

	cases := []struct {
		name  string
		db    string
		cmd   bson.D
		code  int                               // a refusal's code; 0: it answers
		check func([]bson.M, []bson.Raw) string // "" when the answer is right
	}{
		{name: "collStats: one document per shard, its fields as mongos's", db: "app", cmd: pipe("users", storage),
			check: func(got []bson.M, raws []bson.Raw) string {
				if len(got) != 2 {
					return "want 2 documents"
				}
				total, shards := int64(0), map[string]bool{}
				for i, d := range got {
					keys := []string{}
					els, _ := raws[i].Elements()
					for _, e := range els {
						keys = append(keys, e.Key())
					}
					if len(keys) < 5 || strings.Join(keys[:4], ",") != "ns,shard,host,localTime" || d["ns"] != "app.users" {
						return "fields " + strings.Join(keys, ",")
					}
					shards[d["shard"].(string)] = true
					total += asInt64(pathOf(d, "storageStats", "count"))
				}
				if total != n || !shards["sh0"] || !shards["sh1"] {
					return "counts or shards wrong"
				}
				return ""
			}},
		{name: "collStats: the stages after it run over the shards' documents", db: "app",
			cmd: pipe("users", storage, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil},
				{Key: "shards", Value: bson.D{{Key: "$addToSet", Value: "$shard"}}}, {Key: "docs", Value: bson.D{{Key: "$sum", Value: "$storageStats.count"}}}}}}),
			check: func(got []bson.M, _ []bson.Raw) string {
				if len(got) != 1 || len(got[0]["shards"].(bson.A)) != 2 || asInt64(got[0]["docs"]) != n {
					return "want one group of both shards and every document"
				}
				return ""
			}},
		{name: "collStats of an unsharded collection: its primary", db: "app", cmd: pipe("plain", bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}),
			check: func(got []bson.M, _ []bson.Raw) string {
				if len(got) != 1 || got[0]["shard"] != primary || asInt64(got[0]["count"]) != 1 {
					return "want the primary's one document"
				}
				return ""
			}},
		{name: "$documents with a $lookup of a sharded collection", db: "app",
			cmd: pipe(1, bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "k", Value: 5}}, bson.D{{Key: "k", Value: 7}}, bson.D{{Key: "k", Value: 1000}}}}},
				bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "users"}, {Key: "localField", Value: "k"}, {Key: "foreignField", Value: "uid"}, {Key: "as", Value: "u"}}}},
				bson.D{{Key: "$match", Value: bson.D{{Key: "u", Value: bson.D{{Key: "$ne", Value: bson.A{}}}}}}}),
			check: func(got []bson.M, _ []bson.Raw) string {
				if len(got) != 2 || asInt64(got[0]["k"]) != 5 || asInt64(got[1]["k"]) != 7 {
					return "want k 5 and 7 joined"
				}
				return ""
			}},
		{name: "$currentOp: every shard's operations, each naming its shard", db: "admin",
			cmd: pipe(1, bson.D{{Key: "$currentOp", Value: bson.D{}}}),
			check: func(got []bson.M, _ []bson.Raw) string {
				seen := map[string]bool{}
				for _, d := range got {
					s, _ := d["shard"].(string)
					op, _ := d["opid"].(string)
					if s == "" || !strings.HasPrefix(op, s+":") {
						return "an operation without its shard, or an opid not <shard>:<n>"
					}
					seen[s] = true
				}
				if !seen["sh0"] || !seen["sh1"] { // each shard runs the $currentOp itself
					return "want operations of both shards"
				}
				return ""
			}},
		{name: "$currentOp: the stages after it run at the router", db: "admin",
			cmd: pipe(1, bson.D{{Key: "$currentOp", Value: bson.D{}}}, bson.D{{Key: "$match", Value: bson.D{{Key: "shard", Value: "sh1"}}}}),
			check: func(got []bson.M, _ []bson.Raw) string {
				for _, d := range got {
					if d["shard"] != "sh1" {
						return "a document of another shard"
					}
				}
				if len(got) == 0 {
					return "want sh1's operations"
				}
				return ""
			}},
		{name: "$listLocalSessions lists a session started here", db: "app",
			cmd: pipe(1, bson.D{{Key: "$listLocalSessions", Value: bson.D{{Key: "allUsers", Value: true}}}}),
			check: func(got []bson.M, _ []bson.Raw) string {
				for _, d := range got {
					if id, ok := pathOf(d, "_id", "id").(bson.Binary); ok && string(id.Data) == string(sessID.Data) {
						if _, ok := d["lastUse"].(bson.DateTime); ok {
							return ""
						}
					}
				}
				return "the started session is not listed"
			}},
		{name: "$currentOp outside admin", db: "app", cmd: pipe(1, bson.D{{Key: "$currentOp", Value: bson.D{}}}), code: 73},
		{name: "$currentOp localOps", db: "admin", cmd: pipe(1, bson.D{{Key: "$currentOp", Value: bson.D{{Key: "localOps", Value: true}}}}), code: 72},
		{name: "{aggregate: 1} with a stage that needs a collection", db: "app", cmd: pipe(1, bson.D{{Key: "$match", Value: bson.D{}}}), code: 73},
		{name: "{aggregate: 1} with an empty pipeline", db: "app", cmd: pipe(1), code: 73},
		{name: "{aggregate: 1} with a database change stream", db: "app", cmd: pipe(1, bson.D{{Key: "$changeStream", Value: bson.D{}}}), code: 72},
		{name: "{aggregate: 2}", db: "app", cmd: pipe(2, bson.D{{Key: "$documents", Value: bson.A{}}}), code: 9},
		{name: "$listLocalSessions with allUsers and users", db: "app",
			cmd: pipe(1, bson.D{{Key: "$listLocalSessions", Value: bson.D{{Key: "allUsers", Value: true}, {Key: "users", Value: bson.A{}}}}}), code: 2},
	}
	for _, tc := range cases {
		got, raws, err := aggregate(tc.db, tc.cmd)
		if tc.code != 0 {
			if code := anyCode(err); code != tc.code {
				t.Errorf("%s: got %v (code %d), want code %d", tc.name, err, code, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if msg := tc.check(got, raws); msg != "" {
			t.Errorf("%s: %s; got %v", tc.name, msg, got)
		}
	}

	// A chunk of app.users to move, and the shard it may go to.
	var coll bson.M
	if err := c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: "app.users"}}).Decode(&coll); err != nil {
		t.Fatal(err)
	}
	var chunk bson.M
	if err := c.Database("config").Collection("chunks").FindOne(ctx, bson.D{{Key: "uuid", Value: coll["uuid"]}}).Decode(&chunk); err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"sh0": "sh1", "sh1": "sh0"}[chunk["shard"].(string)]
	moveRange := bson.D{{Key: "moveRange", Value: "app.users"}, {Key: "toShard", Value: other}, {Key: "min", Value: chunk["min"]}, {Key: "max", Value: chunk["max"]}}
	permit := func(want any) func(bson.M) string {
		return func(bson.M) string {
			var got bson.M
			if err := c.Database("config").Collection("collections").FindOne(ctx, bson.D{{Key: "_id", Value: "app.users"}}).Decode(&got); err != nil {
				return err.Error()
			}
			if got["permitMigrations"] != want {
				return "config.collections' permitMigrations is " + fmt.Sprint(got["permitMigrations"])
			}
			return ""
		}
	}

	commands := []struct {
		name  string
		cmd   bson.D
		code  int
		check func(bson.M) string
	}{
		{name: "balancerCollectionStatus of a balanced collection", cmd: bson.D{{Key: "balancerCollectionStatus", Value: "app.users"}},
			check: func(got bson.M) string {
				if got["balancerCompliant"] != true || got["chunkSize"] != float64(128) {
					return "want compliant, chunkSize 128"
				}
				if _, ok := got["firstComplianceViolation"]; ok {
					return "a compliant collection names no violation"
				}
				return ""
			}},
		{name: "setAllowMigrations false", cmd: bson.D{{Key: "setAllowMigrations", Value: "app.users"}, {Key: "allowMigrations", Value: false}}, check: permit(false)},
		{name: "moveRange while migrations are not allowed", cmd: moveRange, code: 117},
		{name: "setAllowMigrations true", cmd: bson.D{{Key: "setAllowMigrations", Value: "app.users"}, {Key: "allowMigrations", Value: true}}, check: permit(nil)},
		{name: "moveRange once they are again", cmd: moveRange, check: func(bson.M) string {
			if n := countChunks(t, c, "app.users")[other]; n != 3 {
				return fmt.Sprintf("the destination owns %d chunks, want 3", n)
			}
			return ""
		}},
		{name: "setAllowMigrations of an unsharded collection", cmd: bson.D{{Key: "setAllowMigrations", Value: "app.plain"}, {Key: "allowMigrations", Value: false}}, code: 118},
		{name: "balancerCollectionStatus of an unsharded collection", cmd: bson.D{{Key: "balancerCollectionStatus", Value: "app.plain"}}, code: 118},
		{name: "movePrimary refused by name", cmd: bson.D{{Key: "movePrimary", Value: "app"}, {Key: "to", Value: "sh1"}}, code: 115},
		{name: "reshardCollection refused by name", cmd: bson.D{{Key: "reshardCollection", Value: "app.users"}, {Key: "key", Value: bson.D{{Key: "name", Value: 1}}}}, code: 115},
	}
	for _, tc := range commands {
		var got bson.M
		err := c.Database("admin").RunCommand(ctx, tc.cmd).Decode(&got)
		if tc.code != 0 {
			if code := anyCode(err); code != tc.code {
				t.Errorf("%s: got %v (code %d), want code %d", tc.name, err, code, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if msg := tc.check(got); msg != "" {
			t.Errorf("%s: %s; got %v", tc.name, msg, got)
		}
	}
	// config.databases still names the primary movePrimary was refused
	// for: nothing moved.
	var after bson.M
	if err := c.Database("config").Collection("databases").FindOne(ctx, bson.D{{Key: "_id", Value: "app"}}).Decode(&after); err != nil || after["primary"] != primary {
		t.Fatalf("after a refused movePrimary the primary is %v (%v), want %s", after["primary"], err, primary)
	}
}

// pathOf is the value at path in a decoded document (bson.M or bson.D at
// any depth); nil when missing.
func pathOf(v any, path ...string) any {
	for _, k := range path {
		switch d := v.(type) {
		case bson.M:
			v = d[k]
		case bson.D:
			v = nil
			for _, e := range d {
				if e.Key == k {
					v = e.Value
				}
			}
		default:
			return nil
		}
	}
	return v
}

func asInt64(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return -1
}

package shardsvr

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/servertest"
	"github.com/cairndb/cairn/internal/shard"
)

// dbVersionNode is a shard node whose config servers are one in-process
// server (its config.databases written by the test, as a router would).
func dbVersionNode(t *testing.T) (*Node, func(cmd bson.D)) {
	t.Helper()
	conn := "cfg/" + servertest.Start(t, nil)
	n := &Node{opts: Options{ShardSvr: true}, peers: memberclient.New(memberclient.Options{Timeout: 10 * time.Second}),
		identity: &identity{ShardName: "s0", ConfigConn: conn}, colls: map[string]*collMeta{}, dbs: map[string]*dbMeta{}}
	t.Cleanup(n.peers.Close)
	config := func(cmd bson.D) {
		t.Helper()
		if _, err := n.peers.RunPrimary(context.Background(), conn, command("config", cmd)); err != nil {
			t.Fatalf("%v: %v", cmd[0].Key, err)
		}
	}
	return n, config
}

func dbVersion(uuid byte, lastMod int32) shard.DatabaseVersion {
	return shard.DatabaseVersion{UUID: [16]byte{uuid}, Timestamp: 1 << 32, LastMod: lastMod}
}

func setDBVersion(config func(bson.D), v shard.DatabaseVersion) {
	config(bson.D{{Key: "update", Value: "databases"}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{{Key: "_id", Value: "d"}}},
		{Key: "u", Value: bson.D{{Key: "_id", Value: "d"}, {Key: "primary", Value: "s0"}, {Key: "version", Value: bson.Raw(v.Doc())}}},
		{Key: "upsert", Value: true}}}}})
}

// admitDB runs the database version check of a command carrying v, and
// returns its error and the Violation it panicked with, if any.
func admitDB(n *Node, v shard.DatabaseVersion) (err error, violation *invariants.Violation) {
	defer func() {
		if r := recover(); r != nil {
			v, ok := r.(*invariants.Violation)
			if !ok {
				panic(r)
			}
			violation = v
		}
	}()
	doc := v.Doc()
	return n.checkDatabaseVersion(context.Background(), "d", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}), nil
}

func cachedDB(n *Node) bsoncore.Document {
	dm := n.dbMeta("d")
	dm.mu.Lock()
	defer dm.mu.Unlock()
	return dm.version
}

// TestDatabaseVersionCache walks the shard's cached database version
// through each way it must change: a router newer than the cache makes
// the shard read again; a drop on the shard keeps the dropped incarnation
// out of the cache until the config servers no longer list it, so a stale
// router is refused; a change the shard was not told of is invariant
// "Database versions are the config servers'" broken (a Violation in an
// invariants build; admitted from the cache otherwise, which shows the
// cache is used).
func TestDatabaseVersionCache(t *testing.T) {
	n, config := dbVersionNode(t)
	v1, v1b, v2 := dbVersion(1, 1), dbVersion(1, 2), dbVersion(2, 1)
	want := func(step string, got error, code mongoerr.Code) {
		t.Helper()
		if mongoerr.CodeOf(got) != code {
			t.Fatalf("%s: got %v, want code %d", step, got, code)
		}
	}

	err, _ := admitDB(n, v1)
	want("a version the config servers do not list", err, mongoerr.StaleDbVersion)
	if cachedDB(n) != nil {
		t.Fatal("an unlisted database was cached")
	}
	setDBVersion(config, v1)
	err, _ = admitDB(n, v1)
	want("the listed version", err, 0)
	if !sameDBVersion(v1.Doc(), cachedDB(n)) {
		t.Fatalf("cached %v after admitting v1", cachedDB(n))
	}

	// A router that knows a newer version than the cache: read again.
	setDBVersion(config, v1b)
	err, _ = admitDB(n, v1b)
	want("a newer version than the cache", err, 0)
	if !sameDBVersion(v1b.Doc(), cachedDB(n)) {
		t.Fatalf("cached %v after admitting the newer v1b", cachedDB(n))
	}
	err, _ = admitDB(n, v1)
	want("an older version than the cache", err, mongoerr.StaleDbVersion)

	// The router's dropDatabase: the shards drop, then config.databases
	// loses the entry. In between the listed version is still admitted,
	// read each time, never cached; afterwards it is refused.
	n.Dropped(context.Background(), "d", "")
	for range 2 {
		err, v := admitDB(n, v1b)
		want("the dropped incarnation while still listed", err, 0)
		if v != nil {
			t.Fatalf("violation while the drop is under way: %v", v)
		}
		if cachedDB(n) != nil {
			t.Fatal("the dropped incarnation was cached again")
		}
	}
	config(bson.D{{Key: "delete", Value: "databases"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "d"}}}, {Key: "limit", Value: 0}}}}})
	err, _ = admitDB(n, v1b)
	want("a stale router after dropDatabase", err, mongoerr.StaleDbVersion)

	// Created again: a new incarnation is cached as before.
	setDBVersion(config, v2)
	err, _ = admitDB(n, v2)
	want("the new incarnation", err, 0)
	if !sameDBVersion(v2.Doc(), cachedDB(n)) {
		t.Fatalf("cached %v after admitting the new incarnation", cachedDB(n))
	}

	// A change of config.databases the shard is not told of (no path
	// does this; movePrimary would have to drop the cache first).
	setDBVersion(config, dbVersion(3, 1))
	err, v := admitDB(n, v2)
	if invariants.Enabled {
		if v == nil || v.Invariant != "Database versions are the config servers'" {
			t.Fatalf("a cache hit on a changed version: got err %v, violation %v; want the invariant's violation", err, v)
		}
	} else if err != nil || v != nil {
		t.Fatalf("a cache hit: got err %v, violation %v; want it admitted by the cache", err, v)
	}
}

// TestDropMark is the drop mark's table: what it suspects and when the
// config servers' listing clears it.
func TestDropMark(t *testing.T) {
	a, b := []byte{1, 15: 0}, []byte{2, 15: 0}
	cases := []struct {
		name        string
		dropped     []byte // nil: unknown incarnation
		listed      []byte // nil: not listed
		suspect, on bool
	}{
		{"the dropped incarnation still listed", a, a, true, true},
		{"another incarnation listed", a, b, false, false},
		{"nothing listed", a, nil, false, false},
		{"unknown dropped, something listed", nil, b, true, true},
		{"unknown dropped, nothing listed", nil, nil, false, false},
	}
	for _, c := range cases {
		var d dropMark
		d.set(c.dropped)
		if got := d.suspect(c.listed); got != c.suspect || d.on != c.on {
			t.Errorf("%s: suspect %v, on %v; want %v, %v", c.name, got, d.on, c.suspect, c.on)
		}
	}
	var none dropMark
	if none.suspect(a) {
		t.Error("an unmarked database is suspect")
	}
}

package shard

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

func TestShardVersionWire(t *testing.T) {
	epoch := bson.NewObjectID()
	sv := ShardVersion{Epoch: epoch, Timestamp: hlc.New(100, 2), V: Version{3, 4}}
	got, err := ParseShardVersion(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: sv.Doc()})
	if err != nil || got != sv {
		t.Fatalf("round trip: %v %v, want %v", got, err, sv)
	}
	for _, tc := range []struct {
		name string
		doc  bsoncore.Document
		code mongoerr.Code
	}{
		{"no epoch", bsoncore.NewDocumentBuilder().AppendTimestamp("t", 1, 1).AppendTimestamp("v", 1, 0).Build(), mongoerr.BadValue},
		{"no timestamp", bsoncore.NewDocumentBuilder().AppendObjectID("e", epoch).AppendTimestamp("v", 1, 0).Build(), mongoerr.BadValue},
		{"no version", bsoncore.NewDocumentBuilder().AppendObjectID("e", epoch).AppendTimestamp("t", 1, 1).Build(), mongoerr.BadValue},
	} {
		if _, err := ParseShardVersion(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: tc.doc}); mongoerr.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
	}
	if _, err := ParseShardVersion(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}); mongoerr.CodeOf(err) != mongoerr.TypeMismatch {
		t.Errorf("a number: %v, want TypeMismatch", err)
	}
}

func TestShardVersionCompatible(t *testing.T) {
	e1, e2 := bson.NewObjectID(), bson.NewObjectID()
	have := ShardVersion{Epoch: e1, Timestamp: hlc.New(5, 1), V: Version{3, 2}}
	for _, tc := range []struct {
		name string
		got  ShardVersion
		ok   bool
	}{
		{"same", have, true},
		{"another minor (a split)", ShardVersion{e1, hlc.New(5, 1), Version{3, 7}}, true},
		{"older major (before a move)", ShardVersion{e1, hlc.New(5, 1), Version{2, 2}}, false},
		{"newer major", ShardVersion{e1, hlc.New(5, 1), Version{4, 0}}, false},
		{"another epoch", ShardVersion{e2, hlc.New(5, 1), Version{3, 2}}, false},
		{"another timestamp", ShardVersion{e1, hlc.New(6, 1), Version{3, 2}}, false},
		{"unsharded", ShardVersion{}, false},
	} {
		if ok := tc.got.Compatible(have); ok != tc.ok {
			t.Errorf("%s: compatible %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

func TestStaleConfigShape(t *testing.T) {
	received := ShardVersion{Epoch: bson.NewObjectID(), Timestamp: hlc.New(1, 1), V: Version{1, 0}}
	wanted := received
	wanted.V = Version{2, 1}
	for _, w := range []*ShardVersion{&wanted, nil} {
		e := StaleConfigError("db.c", received, w, "s0", "test")
		if e.Code != mongoerr.StaleConfig {
			t.Fatalf("code %d", e.Code)
		}
		fields := map[string]bool{}
		for _, f := range e.Extra {
			fields[f.Name] = true
		}
		for _, f := range []string{"ns", "vReceived", "shardId", "errInfo"} {
			if !fields[f] {
				t.Errorf("StaleConfig lacks %s", f)
			}
		}
		if fields["vWanted"] != (w != nil) {
			t.Errorf("vWanted present %v, want %v", fields["vWanted"], w != nil)
		}
	}
}

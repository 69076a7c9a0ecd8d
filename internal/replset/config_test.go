package replset

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

func member(id int, host string, more ...bson.E) bson.D {
	return append(bson.D{{Key: "_id", Value: id}, {Key: "host", Value: host}}, more...)
}

// TestParseConfig: MongoDB's configuration document, with what Cairn
// cannot honour refused with MongoDB's codes; and replSetGetConfig's
// document parses back to the same configuration (rs.conf() → rs.reconfig()).
func TestParseConfig(t *testing.T) {
	a, b := member(0, "h:1"), member(1, "h:2")
	for _, tc := range []struct {
		name string
		cfg  bson.D
		code mongoerr.Code // 0: valid
	}{
		{"two members", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a, b}}}, 0},
		{"no name", bson.D{{Key: "members", Value: bson.A{a}}}, mongoerr.InvalidReplicaSetConfig},
		{"no members", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{}}}, mongoerr.InvalidReplicaSetConfig},
		{"duplicate host", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a, member(1, "h:1")}}}, mongoerr.InvalidReplicaSetConfig},
		{"duplicate _id", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a, member(0, "h:2")}}}, mongoerr.InvalidReplicaSetConfig},
		{"arbiter", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a, member(1, "h:2", bson.E{Key: "arbiterOnly", Value: true})}}}, mongoerr.InvalidReplicaSetConfig},
		{"delayed", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a, member(1, "h:2", bson.E{Key: "secondaryDelaySecs", Value: 60})}}}, mongoerr.InvalidReplicaSetConfig},
		{"priority 2", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a, member(1, "h:2", bson.E{Key: "priority", Value: 2})}}}, mongoerr.InvalidReplicaSetConfig},
		{"non-voting with priority", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a, member(1, "h:2", bson.E{Key: "votes", Value: 0})}}}, mongoerr.InvalidReplicaSetConfig},
		{"hidden learner", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a, member(1, "h:2", bson.E{Key: "votes", Value: 0}, bson.E{Key: "priority", Value: 0}, bson.E{Key: "hidden", Value: true})}}}, 0},
		{"no voter", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{member(0, "h:1", bson.E{Key: "votes", Value: 0}, bson.E{Key: "priority", Value: 0})}}}, mongoerr.InvalidReplicaSetConfig},
		{"unknown field", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a}}, {Key: "colour", Value: 1}}, mongoerr.UnknownField},
		{"unknown setting", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a}}, {Key: "settings", Value: bson.D{{Key: "getLastErrorModes", Value: bson.D{}}}}}, mongoerr.InvalidReplicaSetConfig},
		{"protocolVersion 0", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a}}, {Key: "protocolVersion", Value: 0}}, mongoerr.InvalidReplicaSetConfig},
		{"another election timeout: not yet", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a}}, {Key: "settings", Value: bson.D{{Key: "electionTimeoutMillis", Value: 10000}}}}, mongoerr.InvalidReplicaSetConfig},
		{"config servers", bson.D{{Key: "_id", Value: "cfg"}, {Key: "configsvr", Value: true}, {Key: "members", Value: bson.A{a}}}, 0},
		{"configsvr not a bool", bson.D{{Key: "_id", Value: "cfg"}, {Key: "configsvr", Value: 1}, {Key: "members", Value: bson.A{a}}}, mongoerr.TypeMismatch},
		{"the default settings", bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: bson.A{a}}, {Key: "settings", Value: bson.D{{Key: "electionTimeoutMillis", Value: 1000}, {Key: "heartbeatIntervalMillis", Value: 100}, {Key: "chainingAllowed", Value: false}}}}, 0},
	} {
		raw, err := bson.Marshal(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseConfig(bsoncore.Document(raw))
		if got := mongoerr.CodeOf(err); err != nil && got != tc.code || err == nil && tc.code != 0 {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
			continue
		}
		if err != nil {
			continue
		}
		again, err := ParseConfig(cfg.Document(3))
		if err != nil {
			t.Errorf("%s: replSetGetConfig's document does not parse back: %v", tc.name, err)
			continue
		}
		if again.ConfigSvr != cfg.ConfigSvr || again.String() != cfg.String() || len(again.Members) != len(cfg.Members) || again.Members[len(again.Members)-1] != cfg.Members[len(cfg.Members)-1] {
			t.Errorf("%s: %+v parsed back as %+v", tc.name, cfg, again)
		}
	}
}

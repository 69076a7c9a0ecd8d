package commands

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdHello answers the handshake every driver opens a connection with. A
// standalone server sends no setName, hosts or primary; a replica set
// member sends what the server discovery and monitoring specification
// reads (ReplicaSet.Hello).
func cmdHello(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	return handshake(s, req, dst, "isWritablePrimary")
}

// cmdIsMaster is the legacy spelling; its reply says ismaster instead.
func cmdIsMaster(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	return handshake(s, req, dst, "ismaster")
}

func handshake(s *Session, req *Request, dst []byte, primaryField string) (bsoncore.Document, error) {
	client, err := req.Document("client")
	if err != nil {
		return nil, err
	}
	if client != nil {
		if s.Client != nil {
			// As mongod: a connection's metadata is set once, by its
			// first handshake.
			return nil, mongoerr.New(mongoerr.ClientMetadataImmutable, "The client metadata document may only be sent in the first hello")
		}
		s.Client = bson.Raw(append([]byte(nil), client...))
		s.Env.Log.Debug("client metadata", "conn", s.ConnID, "client", s.Client.String())
	}
	r := NewReply(dst)
	if ok, _ := req.Bool("helloOk", false); ok {
		r.Bool("helloOk", true)
	}
	var counter int64
	if rs := s.Env.Repl; rs != nil {
		// A replica set member: its role and topology (package replset).
		counter, _ = rs.Topology()
		elems, _ := rs.Hello().Elements()
		for _, el := range elems {
			if el.Key() == "isWritablePrimary" {
				r.Value(primaryField, el.Value())
			} else {
				r.Value(el.Key(), el.Value())
			}
		}
	} else {
		r.Bool(primaryField, true)
	}
	r.Doc("topologyVersion", doc("processId", s.Env.ProcessID, "counter", counter))
	r.Int32("maxBsonObjectSize", MaxBSONObjectSize)
	r.Int32("maxMessageSizeBytes", MaxMessageSize)
	r.Int32("maxWriteBatchSize", MaxWriteBatchSize)
	r.Any("localTime", bson.DateTime(time.Now().UnixMilli()))
	r.Int32("logicalSessionTimeoutMinutes", LogicalSessionTimeoutMinutes)
	r.Count("connectionId", s.ConnID) // int32, as mongod's appendNumber
	r.Int32("minWireVersion", MinWireVersion)
	r.Int32("maxWireVersion", MaxWireVersion)
	r.Bool("readOnly", false)
	if comp := negotiateCompression(s.Env.Config.Compressors, req); len(comp) > 0 {
		r.StringArray("compression", comp)
	}
	if v, ok := req.Arg("saslSupportedMechs"); ok {
		// "db.user": that user's mechanisms (none for an unknown user).
		mechs := []string{}
		if name, ok := v.StringValueOK(); ok {
			if dbName, user, ok := strings.Cut(name, "."); ok {
				if u, ok := s.Env.Access.Users.Lookup(dbName, user); ok {
					mechs = u.Mechanisms()
				}
			}
		}
		r.StringArray("saslSupportedMechs", mechs)
	}
	speculativeAuth(s, req, r)
	return r.Finish(), nil
}

// negotiateCompression returns the compressors the client offered that the
// server also has, in the client's order, as mongod does.
func negotiateCompression(server []string, req *Request) []string {
	var out []string
	for _, el := range req.arrayValues("compression") {
		name, ok := el.StringValueOK()
		if !ok {
			continue
		}
		for _, have := range server {
			if have == name {
				out = append(out, name)
			}
		}
	}
	return out
}

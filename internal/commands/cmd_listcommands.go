package commands

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdListCommands lists the registry, alphabetically, with each command's
// help text and flags as MongoDB 7.0 shows them. Test commands appear only
// when they exist (enableTestCommands). Cairn has no authentication yet and
// no secondaries, so requiresAuth is false and secondaryOk true; no command
// is tagged with a Stable API version here yet.
func cmdListCommands(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	names := make([]string, 0, len(registry))
	for n, c := range registry {
		if c.testOnly && !s.Env.TestCommands() {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	cmds := NewReply(nil)
	for _, n := range names {
		c := registry[n]
		cmds.Doc(n, doc(
			"help", c.help,
			"requiresAuth", false,
			"secondaryOk", true,
			"adminOnly", c.adminOnly,
			"apiVersions", bson.A{},
			"deprecatedApiVersions", bson.A{},
		))
	}
	return NewReply(dst).Doc("commands", cmds.End()).Finish(), nil
}

package catalog

import (
	"crypto/rand"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// newUUID makes a random (version 4) UUID as BSON binary subtype 4, the form
// MongoDB reports collection UUIDs in.
func newUUID() bson.Binary {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails on Linux
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: u[:]}
}

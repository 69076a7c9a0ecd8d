package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// fcvVersion is the one feature compatibility version Cairn has: it speaks
// MongoDB 7.0 and keeps no older on-disk formats to downgrade to.
const fcvVersion = "7.0"

// cmdSetFeatureCompatibilityVersion accepts "7.0" with confirm: true, as
// MongoDB 7.0 asks (7369100 without it, even when the version does not
// change), and refuses every other version. MongoDB 7.0 would also accept
// the downgrade targets "6.0" and "6.3"; Cairn cannot run as those, so they
// get the invalid-version error naming the one version it has.
func cmdSetFeatureCompatibilityVersion(_ context.Context, _ *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	v := req.First()
	version, ok := v.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'setFeatureCompatibilityVersion.setFeatureCompatibilityVersion' is the wrong type '%s', expected type 'string'", typeName(v.Type))
	}
	if version != fcvVersion {
		return nil, mongoerr.New(mongoerr.InvalidFCVValue, "Invalid feature compatibility version value '%s'; expected '%s'. See https://docs.mongodb.com/master/release-notes/7.0-compatibility/#feature-compatibility.", version, fcvVersion)
	}
	confirm, err := req.Bool("confirm", false)
	if err != nil {
		return nil, err
	}
	if !confirm {
		// The version equals the current one, so MongoDB's check (requested >
		// actual) picks its downgrade message.
		return nil, mongoerr.New(mongoerr.FCVConfirmRequired, "Once you have downgraded the FCV, if you choose to downgrade the binary version, it will require support assistance. Please re-run this command with 'confirm: true' to acknowledge this and continue with the FCV downgrade.")
	}
	return OK(dst), nil
}

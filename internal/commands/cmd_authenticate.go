package commands

import (
	"context"
	"crypto/x509"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// MechanismX509 authenticates a client by the TLS certificate it presented
// and the server verified: the user is the certificate's subject in the
// $external database.
const MechanismX509 = "MONGODB-X509"

// externalDB holds users whose credentials live outside Cairn (x.509).
const externalDB = "$external"

// cmdAuthenticate serves authenticate, which modern MongoDB keeps for
// MONGODB-X509 only: {authenticate: 1, mechanism: "MONGODB-X509", user:
// <subject, optional>} on $external.
func cmdAuthenticate(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	mech, err := req.String("mechanism", "")
	if err != nil {
		return nil, err
	}
	user, err := req.String("user", "")
	if err != nil {
		return nil, err
	}
	if mech != MechanismX509 {
		return nil, mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
	}
	r := NewReply(dst)
	if err := authenticateX509(s, req.DB, user, r); err != nil {
		return nil, err
	}
	return r.Finish(), nil
}

// authenticateX509 authenticates s as its verified client certificate's
// subject and appends {dbname, user} to r (authenticate, and hello's
// speculativeAuthenticate).
func authenticateX509(s *Session, db, user string, r *Reply) (err error) {
	defer func() {
		if s.ClientCert != nil && user == "" {
			user = s.ClientCert.Subject.String()
		}
		auditAuthenticate(s, user, db, MechanismX509, err)
	}()
	subject, err := X509Subject(db, user, s.ClientCert)
	if err != nil {
		return err
	}
	u, ok := s.Env.Access.Users.Lookup(externalDB, subject)
	if !ok {
		s.Env.Log.Info("authentication failed", "conn", s.ConnID, "remote", s.Remote, "mechanism", MechanismX509, "subject", subject)
		return X509UnknownUser(subject)
	}
	a := &s.auth
	a.conv = nil
	a.user, a.gen = u, s.Env.Access.Users.Gen()
	a.privs, _ = s.Env.Access.Users.Resolve(u.Roles)
	s.Env.Log.Info("authenticated", "conn", s.ConnID, "user", u.Name, "db", u.DB, "mechanism", MechanismX509)
	r.String("dbname", externalDB).String("user", subject)
	return nil
}

// X509Subject checks a MONGODB-X509 authentication's database and claimed
// user against the client's verified certificate (nil: none) and returns
// the user to look up in $external: the certificate's subject. A router
// authenticates its clients' certificates with it too.
func X509Subject(db, user string, cert *x509.Certificate) (string, error) {
	if db != externalDB {
		return "", mongoerr.New(mongoerr.BadValue, "X.509 authentication must always use the $external database.")
	}
	if cert == nil {
		return "", mongoerr.New(mongoerr.AuthenticationFailed, "No verified subject name available from client")
	}
	subject := cert.Subject.String()
	if user != "" && user != subject {
		return "", mongoerr.New(mongoerr.AuthenticationFailed, "There is no x.509 client certificate matching the user.")
	}
	return subject, nil
}

// X509UnknownUser is the error of a verified subject no $external user has.
func X509UnknownUser(subject string) error {
	return mongoerr.New(mongoerr.AuthenticationFailed, "Could not find user \"%s\" for db \"%s\"", subject, externalDB)
}

// hasMechanisms reports whether createUser names mechanisms.
func hasMechanisms(req *Request) bool {
	_, ok := req.Arg("mechanisms")
	return ok
}

package auth

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/xdg-go/scram"
)

// The mechanisms Cairn speaks, by their SASL names.
const (
	SCRAMSHA1   = "SCRAM-SHA-1"
	SCRAMSHA256 = "SCRAM-SHA-256"
)

// MongoDB's defaults (scramIterationCount, scramSHA256IterationCount) and
// salt lengths (the hash's output length minus 4 bytes, as it stores them).
const (
	sha1Iterations   = 10000
	sha256Iterations = 15000
	sha1SaltLen      = 16
	sha256SaltLen    = 28
)

// ErrUnknownMechanism is returned for a mechanism other than the two SCRAMs.
var ErrUnknownMechanism = errors.New("auth: unknown mechanism")

// Credential is one mechanism's stored secret, as in a system.users
// document's credentials.<mechanism>: salt, storedKey and serverKey are
// base64, as MongoDB stores them.
type Credential struct {
	IterationCount int
	Salt           string
	StoredKey      string
	ServerKey      string
}

// hashOf is the SCRAM hash of a mechanism.
func hashOf(mech string) (scram.HashGeneratorFcn, error) {
	switch mech {
	case SCRAMSHA1:
		return scram.SHA1, nil
	case SCRAMSHA256:
		return scram.SHA256, nil
	}
	return nil, ErrUnknownMechanism
}

// MongoPasswordDigest is hex(md5(user:mongo:password)): the "password"
// SCRAM-SHA-1 runs over in MongoDB (drivers compute the same).
func MongoPasswordDigest(user, password string) string {
	sum := md5.Sum([]byte(user + ":mongo:" + password))
	return hex.EncodeToString(sum[:])
}

// NewCredential makes mech's stored credential for user's password with a
// fresh random salt.
func NewCredential(mech, user, password string) (Credential, error) {
	hg, err := hashOf(mech)
	if err != nil {
		return Credential{}, err
	}
	var client *scram.Client
	saltLen, iters := sha256SaltLen, sha256Iterations
	if mech == SCRAMSHA1 {
		saltLen, iters = sha1SaltLen, sha1Iterations
		client, err = hg.NewClientUnprepped(user, MongoPasswordDigest(user, password), "")
	} else {
		client, err = hg.NewClient(user, password, "") // SASLprep'd, as MongoDB's SHA-256
	}
	if err != nil {
		return Credential{}, fmt.Errorf("auth: password cannot be used: %w", err)
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return Credential{}, err
	}
	sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return Credential{}, err
	}
	return Credential{
		IterationCount: iters,
		Salt:           base64.StdEncoding.EncodeToString(salt),
		StoredKey:      base64.StdEncoding.EncodeToString(sc.StoredKey),
		ServerKey:      base64.StdEncoding.EncodeToString(sc.ServerKey),
	}, nil
}

// stored turns c into the library's form for a server conversation.
func (c Credential) stored() (scram.StoredCredentials, error) {
	salt, err1 := base64.StdEncoding.DecodeString(c.Salt)
	stored, err2 := base64.StdEncoding.DecodeString(c.StoredKey)
	server, err3 := base64.StdEncoding.DecodeString(c.ServerKey)
	if err := errors.Join(err1, err2, err3); err != nil {
		return scram.StoredCredentials{}, fmt.Errorf("auth: corrupt stored credential: %w", err)
	}
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: c.IterationCount},
		StoredKey:  stored, ServerKey: server,
	}, nil
}

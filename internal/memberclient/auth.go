package memberclient

import (
	"context"
	"fmt"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MongoDB's internal user, whose password is the keyFile's key (package
// auth holds the server's side).
const (
	systemUser = "__system"
	systemDB   = "local"
	mechanism  = "SCRAM-SHA-256"
)

// maxSteps bounds a SASL conversation: SCRAM takes two round trips.
const maxSteps = 4

// authenticate runs saslStart/saslContinue as __system@local with
// SCRAM-SHA-256 (github.com/xdg-go/scram, the driver's own library) before
// the connection's first command ("Authenticated before use").
func (c *conn) authenticate(ctx context.Context, client *scram.Client) error {
	conv := client.NewConversation()
	payload, err := conv.Step("")
	if err != nil {
		return err
	}
	cmd := bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: mechanism},
		{Key: "payload", Value: bson.Binary{Data: []byte(payload)}},
		{Key: "options", Value: bson.D{{Key: "skipEmptyExchange", Value: true}}}, {Key: "$db", Value: systemDB}}
	for step := 0; step < maxSteps; step++ {
		raw, err := bson.Marshal(cmd)
		if err != nil {
			return err
		}
		reply, err := c.roundTrip(ctx, raw, nil)
		if err != nil { // the member went away, not a refusal: retryable
			return &NetError{Host: c.nc.RemoteAddr().String(), Op: "authenticating", Err: err}
		}
		if err := Err(reply); err != nil {
			return err
		}
		_, data, _ := reply.Lookup("payload").BinaryOK()
		done, _ := reply.Lookup("done").BooleanOK()
		if !conv.Done() {
			out, err := conv.Step(string(data))
			if err != nil {
				return err
			}
			payload = out
		}
		if done {
			if !conv.Valid() {
				return fmt.Errorf("the member's SCRAM proof did not verify")
			}
			return nil
		}
		id := reply.Lookup("conversationId")
		cmd = bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: rawValue(id)},
			{Key: "payload", Value: bson.Binary{Data: []byte(payload)}}, {Key: "$db", Value: systemDB}}
	}
	return fmt.Errorf("the SASL conversation did not finish in %d steps", maxSteps)
}

func rawValue(v bsoncore.Value) bson.RawValue {
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}

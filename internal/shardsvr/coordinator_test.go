package shardsvr

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestCoordinationDone checks the outcome a coordination's waiters (the
// router's coordinateCommitTransaction) get: a coordinator stepping down
// answers InterruptedDueToReplStateChange (retryable; MongoDB's
// TransactionCoordinator::_done), naming the transaction and the reason;
// every other outcome passes as is.
func TestCoordinationDone(t *testing.T) {
	lsid, err := bson.Marshal(bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}})
	if err != nil {
		t.Fatal(err)
	}
	aborted := mongoerr.New(mongoerr.NoSuchTransaction, "Transaction 7 was aborted by its coordinator")
	cases := []struct {
		name     string
		in       error
		want     mongoerr.Code // 0: nil
		contains []string
	}{
		{"committed", nil, 0, nil},
		{"aborted", aborted, mongoerr.NoSuchTransaction, []string{"aborted by its coordinator"}},
		{"shutting down", stepDownErr(context.Canceled), mongoerr.InterruptedDueToReplStateChange,
			[]string{"Coordinator {", ":7 stopped due to: ", "shutting down"}},
		{"lost its primary", stepDownErr(errors.New("not primary")), mongoerr.InterruptedDueToReplStateChange,
			[]string{":7 stopped due to: ", "not primary", "resumes it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := coordinationDone(lsid, 7, tc.in)
			if tc.want == 0 {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			if c := mongoerr.CodeOf(got); c != tc.want {
				t.Fatalf("code %d (%v), want %d", c, got, tc.want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(got.Error(), s) {
					t.Errorf("%q lacks %q", got.Error(), s)
				}
			}
		})
	}
}

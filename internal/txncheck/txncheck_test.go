package txncheck

import (
	"strings"
	"testing"
)

func ap(k string, v int) Mop     { return Mop{Append: true, Key: k, Value: v} }
func rd(k string, vs ...int) Mop { return Mop{Key: k, Read: vs} }

func txn(id int, o Outcome, mops ...Mop) Txn { return Txn{ID: id, Outcome: o, Mops: mops} }

// TestCheckFindsAnomalies: the negative controls — a history holding each
// anomaly is reported with it ("Every anomaly is named"), and valid
// histories (including write skew, which snapshot isolation allows) are
// not.
func TestCheckFindsAnomalies(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    []Txn
		want string // "" for a valid history
	}{
		{"serial appends and reads", []Txn{
			txn(1, OK, ap("x", 1), ap("y", 1)),
			txn(2, OK, rd("x", 1), ap("x", 2)),
			txn(3, OK, rd("x", 1, 2), rd("y", 1)),
		}, ""},
		{"write skew (G2) is allowed", []Txn{
			txn(1, OK, ap("x", 1), ap("y", 1)),
			txn(2, OK, rd("x", 1), rd("y", 1), ap("x", 2)),
			txn(3, OK, rd("x", 1), rd("y", 1), ap("y", 2)),
			txn(4, OK, rd("x", 1, 2), rd("y", 1, 2)),
		}, ""},
		{"a failed append is never seen", []Txn{
			txn(1, OK, ap("x", 1)),
			txn(2, Fail, ap("x", 2)),
			txn(3, OK, rd("x", 1)),
		}, ""},
		{"G0: writes interleave on two keys", []Txn{
			txn(1, OK, ap("x", 1), ap("y", 2)),
			txn(2, OK, ap("x", 2), ap("y", 1)),
			txn(3, OK, rd("x", 1, 2), rd("y", 1, 2)),
		}, "G0"},
		{"G1a: a failed transaction's append read", []Txn{
			txn(1, Fail, ap("x", 1)),
			txn(2, OK, rd("x", 1)),
		}, "G1a"},
		{"G1b: an intermediate append read", []Txn{
			txn(1, OK, ap("x", 1), ap("x", 2)),
			txn(2, OK, rd("x", 1)),
		}, "G1b"},
		{"G1c: circular information flow", []Txn{
			txn(1, OK, ap("x", 1), rd("y", 1)),
			txn(2, OK, ap("y", 1), rd("x", 1)),
		}, "G1c"},
		{"G-single: read skew", []Txn{
			txn(1, OK, ap("x", 1), ap("y", 1)),
			txn(2, OK, rd("x"), rd("y", 1)),
			txn(3, OK, rd("x", 1), rd("y", 1)),
		}, "G-single"},
		{"lost update: both read the same end and appended", []Txn{
			txn(1, OK, ap("x", 1)),
			txn(2, OK, rd("x", 1), ap("x", 2)),
			txn(3, OK, rd("x", 1), ap("x", 3)),
			txn(4, OK, rd("x", 1, 2, 3)),
		}, "lost-update"},
		{"incompatible orders", []Txn{
			txn(1, OK, ap("x", 1)),
			txn(2, OK, ap("x", 2)),
			txn(3, OK, rd("x", 1, 2)),
			txn(4, OK, rd("x", 2, 1)),
		}, "incompatible-order"},
		{"a value no one appended", []Txn{txn(1, OK, rd("x", 9))}, "garbage-read"},
		{"own append unseen", []Txn{txn(1, OK, ap("x", 1), rd("x"))}, "internal"},
		{"a committed append lost", []Txn{
			txn(1, OK, ap("x", 1)),
			txn(2, OK, ap("x", 2)),
			{ID: 3, Outcome: OK, Mops: []Mop{rd("x", 1)}, Final: true},
		}, "lost-append"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.h)
			if tc.want == "" {
				if len(got) > 0 {
					t.Fatalf("valid history reported: %v", got)
				}
				return
			}
			for _, a := range got {
				if a.Kind == tc.want {
					return
				}
			}
			t.Fatalf("want %s, got %v", tc.want, got)
		})
	}
}

func TestBank(t *testing.T) {
	if a := Bank([][]int{{50, 50}, {30, 70}}, 100); len(a) != 0 {
		t.Errorf("valid bank reads reported: %v", a)
	}
	if a := Bank([][]int{{50, 50}, {30, 50}}, 100); len(a) != 1 || !strings.Contains(a[0].Msg, "sum to 80") {
		t.Errorf("a read summing to 80 of 100: %v", a)
	}
}

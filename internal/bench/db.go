package bench

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// db is a system under test as the workloads drive it: YCSB's database
// layer. A server reached through the driver, the in-process Pebble floor
// and the no-op calibration target all implement it. Implementations are
// safe for concurrent use and do not keep the byte slices they are given
// (callers reuse them).
type db interface {
	// reset empties the record set (drops the collection).
	reset(ctx context.Context) error
	// insert inserts the records, one request for the whole batch.
	insert(ctx context.Context, docs []bsoncore.Document) error
	// read fetches the whole record with _id k; a missing one is
	// errNotFound.
	read(ctx context.Context, k string) error
	// update changes one field of record u.key, the way u.style says.
	update(ctx context.Context, u *update) error
	// readModifyWrite reads record u.key, sets u.field to u.value in what
	// it read, and writes it back.
	readModifyWrite(ctx context.Context, u *update) error
	// scan reads up to n records in _id order from _id k on and reports
	// how many it got.
	scan(ctx context.Context, k string, n int) (int, error)
	// close releases connections and files.
	close(ctx context.Context) error
}

// update is one YCSB update: field of record key becomes value.
type update struct {
	key   string
	field string
	value []byte
	// record is the whole record with the field changed: what
	// UpdateReplace sends.
	record bsoncore.Document
	style  UpdateStyle
}

// errNotFound reports a read of a record the load phase (or an
// acknowledged insert) created but the target does not return: a
// correctness failure, not a slow path.
var errNotFound = errors.New("record not found")

// nullDB does nothing: running a workload against it measures what the
// harness itself (key choice, record generation, histograms) costs, which
// is subtracted from in-process targets' CPU.
type nullDB struct{}

func (nullDB) reset(context.Context) error                       { return nil }
func (nullDB) insert(context.Context, []bsoncore.Document) error { return nil }
func (nullDB) read(context.Context, string) error                { return nil }
func (nullDB) update(context.Context, *update) error             { return nil }
func (nullDB) readModifyWrite(context.Context, *update) error    { return nil }
func (nullDB) scan(_ context.Context, _ string, n int) (int, error) {
	return n, nil
}
func (nullDB) close(context.Context) error { return nil }

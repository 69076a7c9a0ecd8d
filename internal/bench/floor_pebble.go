package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/storage"
)

// pebbleFloor runs the workloads against Pebble directly, in this process:
// what the storage engine costs with no protocol, no driver, no command
// layer and no key encoding. Keys are the record keys as bytes, values the
// same BSON documents the servers store.
//
// Pebble is opened as Cairn's store opens it (storage.OpenPebble, the
// function Cairn's storage.Open opens Pebble with): the same options —
// memtables of a sixteenth of the cache up to 64 MiB, bloom filters on
// every level, L0 and L1 uncompressed, a span per keyspace — the same block
// cache (the part of the default RAM-sized cache that is not the document
// cache) and the same log filesystem (the log written ahead of its writer).
// So a ratio against the floor is Cairn's work above the engine, not a
// difference of configuration. (Until session 15 the floor opened Pebble
// with its defaults and a 64 MiB cache: 4 MiB memtables, no filters on L6,
// compression on every level; BENCHMARKS.md, "The Pebble floor opened as
// the store opens Pebble".)
//
// Writes are durable: every insert, update and read-modify-write commits
// with pebble.Sync, so the floor is comparable with Cairn acknowledging
// writes only once synced (--sync always). A load batch (--batch records,
// as one insertMany is to the servers) is one Pebble batch committed with
// Sync; the batches of concurrent threads share the log's syncs in Pebble's
// commit pipeline, as concurrent requests share a commit group's sync in
// Cairn's. With --sync set to an interval the floor writes with NoSync
// instead, as Cairn's interval mode acknowledges before the sync.
//
// An update with UpdateReplace is one Set of the whole record (no read: a
// raw key-value store need not check the record exists); UpdateSet and
// read-modify-write are Get, modify, Set. Reads copy the value out, as a
// server must to send it.
type pebbleFloor struct {
	pdb  *pebble.DB
	dir  string
	wo   *pebble.WriteOptions
	bufs sync.Pool
}

func openPebbleFloor(durable bool) (*pebbleFloor, error) {
	dir, err := os.MkdirTemp("", "cairn-bench-pebble-")
	if err != nil {
		return nil, err
	}
	pdb, err := storage.OpenPebble(dir, storage.Options{Logger: silentPebbleLogger})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	wo := pebble.Sync
	if !durable {
		wo = pebble.NoSync
	}
	return &pebbleFloor{pdb: pdb, dir: dir, wo: wo}, nil
}

// silentPebbleLogger drops Pebble's informational messages (the store
// logs them at debug level); errors still reach the log.
var silentPebbleLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

func (p *pebbleFloor) buffer() *[]byte {
	if b, ok := p.bufs.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// reset empties the store: a range deletion over every record key.
func (p *pebbleFloor) reset(context.Context) error {
	return p.pdb.DeleteRange([]byte{0}, []byte{0xff}, p.wo)
}

func (p *pebbleFloor) insert(_ context.Context, docs []bsoncore.Document) error {
	b := p.pdb.NewBatch()
	defer b.Close()
	for _, d := range docs {
		id, ok := d.Lookup("_id").StringValueOK()
		if !ok {
			return fmt.Errorf("pebble floor: document without a string _id")
		}
		if err := b.Set([]byte(id), d, nil); err != nil {
			return err
		}
	}
	return b.Commit(p.wo)
}

// get appends record k's value to dst.
func (p *pebbleFloor) get(dst []byte, k string) ([]byte, error) {
	v, closer, err := p.pdb.Get([]byte(k))
	if err == pebble.ErrNotFound {
		return dst, fmt.Errorf("%w: _id %q", errNotFound, k)
	}
	if err != nil {
		return dst, err
	}
	dst = append(dst, v...)
	return dst, closer.Close()
}

func (p *pebbleFloor) read(_ context.Context, k string) error {
	b := p.buffer()
	var err error
	*b, err = p.get((*b)[:0], k)
	p.bufs.Put(b)
	return err
}

func (p *pebbleFloor) update(ctx context.Context, u *update) error {
	if u.style == UpdateReplace {
		return p.pdb.Set([]byte(u.key), u.record, p.wo)
	}
	return p.readModifyWrite(ctx, u)
}

func (p *pebbleFloor) readModifyWrite(_ context.Context, u *update) error {
	b := p.buffer()
	defer p.bufs.Put(b)
	cur, err := p.get((*b)[:0], u.key)
	*b = cur
	if err != nil {
		return err
	}
	next, err := withField(nil, cur, u.field, u.value)
	if err != nil {
		return err
	}
	return p.pdb.Set([]byte(u.key), next, p.wo)
}

func (p *pebbleFloor) scan(_ context.Context, k string, n int) (int, error) {
	it, err := p.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte(k)})
	if err != nil {
		return 0, err
	}
	b := p.buffer()
	got := 0
	for ok := it.First(); ok && got < n; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return got, err
		}
		*b = append((*b)[:0], v...)
		got++
	}
	p.bufs.Put(b)
	return got, it.Close()
}

func (p *pebbleFloor) close(context.Context) error {
	err := p.pdb.Close()
	if rerr := os.RemoveAll(p.dir); err == nil {
		err = rerr
	}
	return err
}

// settled reports whether Pebble has no flush or compaction running, so a
// measurement does not pay for the previous phase's background work.
func (p *pebbleFloor) settled() bool {
	m := p.pdb.Metrics()
	return m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0
}

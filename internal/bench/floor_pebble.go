package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
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
//
// The pebble-oplog floor (oplog set) is the same with the change log Cairn
// keeps on every node, standalone included (issue 18: change streams and
// versioned collections read it): each insert and update also sets, in
// the same batch, an entry in MongoDB's oplog shape under an ascending key
// of the store's oplog keyspace (storage.SpaceOplog, whose values the
// store's options separate into blob files) — an insert's entry holds the
// document (o), an update's its one-field diff ($v 2) or, for
// UpdateReplace, the whole record, with o2 the _id. So it is Pebble given
// the bytes Cairn writes, and a ratio to it is Cairn's work above those
// bytes (BENCHMARKS.md, "The load phase against Pebble given Cairn's
// bytes").
type pebbleFloor struct {
	pdb     *pebble.DB
	dir     string
	wo      *pebble.WriteOptions
	bufs    sync.Pool
	durable bool
	oplog   bool
	opSeq   atomic.Uint64 // the last oplog entry's number
	// written is set by the first write of any kind (fresh.go's check that
	// a load goes into a store nothing was written to).
	written atomic.Bool
}

func openPebbleFloor(durable, oplog bool) (*pebbleFloor, error) {
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
	return &pebbleFloor{pdb: pdb, dir: dir, wo: wo, durable: durable, oplog: oplog}, nil
}

// floorNS and floorUI are the namespace and collection UUID the oplog
// floor's entries name.
var (
	floorNS = engine.Namespace{DB: "ycsb", Coll: "usertable"}
	floorUI = make([]byte, 16)
)

// setOplogEntry sets in b the next oplog entry, built by the engine's own
// entry builder (engine.AppendOplogEntry: the bytes Cairn writes for a
// write outside a session): op 'i' with o the document, or op 'u' with o2
// {_id: id} and o the change — diff, when set, as a one-field $set's {$v:
// 2, diff: {u: {field: value}}}, otherwise o itself. Entries are built in
// pooled buffers (Set copies them): no allocation per entry.
func (p *pebbleFloor) setOplogEntry(b *pebble.Batch, op byte, id string, o bsoncore.Document, diff *update) error {
	n := p.opSeq.Add(1)
	var key [9]byte
	key[0] = storage.SpaceOplog
	binary.BigEndian.PutUint64(key[1:], n)
	buf, obuf := p.buffer(), p.buffer()
	defer p.bufs.Put(buf)
	defer p.bufs.Put(obuf)
	if diff != nil {
		var oStart, ds, us int32
		oStart, *obuf = bsoncore.AppendDocumentStart((*obuf)[:0])
		*obuf = bsoncore.AppendInt32Element(*obuf, "$v", 2)
		ds, *obuf = bsoncore.AppendDocumentElementStart(*obuf, "diff")
		us, *obuf = bsoncore.AppendDocumentElementStart(*obuf, "u")
		*obuf = appendStringElement(*obuf, diff.field, diff.value)
		*obuf, _ = bsoncore.AppendDocumentEnd(*obuf, us)
		*obuf, _ = bsoncore.AppendDocumentEnd(*obuf, ds)
		*obuf, _ = bsoncore.AppendDocumentEnd(*obuf, oStart)
		o = *obuf
	}
	at := len(*obuf) // the _id's value after o's bytes (o stays valid if the append moves them)
	if diff == nil {
		at = 0
	}
	*obuf = bsoncore.AppendString((*obuf)[:at], id)
	idv := bsoncore.Value{Type: bsoncore.TypeString, Data: (*obuf)[at:]}
	ts := hlc.New(uint32(n>>32), uint32(n))
	*buf = engine.AppendOplogEntry((*buf)[:0], op, floorNS, floorUI, o, idv, ts, 1, int64(n))
	return b.Set(key[:], *buf, nil)
}

// write sets key to value, with op "u"'s oplog entry (o, or diff's) when
// the floor keeps one.
func (p *pebbleFloor) write(key string, value []byte, o bsoncore.Document, diff *update) error {
	p.noteWrite()
	if !p.oplog {
		return p.pdb.Set([]byte(key), value, p.wo)
	}
	b := p.pdb.NewBatch()
	defer b.Close()
	if err := b.Set([]byte(key), value, nil); err != nil {
		return err
	}
	if err := p.setOplogEntry(b, 'u', key, o, diff); err != nil {
		return err
	}
	return b.Commit(p.wo)
}

// noteWrite sets written; after the first write it only reads the flag,
// so concurrent writers do not contend on it.
func (p *pebbleFloor) noteWrite() {
	if !p.written.Load() {
		p.written.Store(true)
	}
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
	p.noteWrite()
	return p.pdb.DeleteRange([]byte{0}, []byte{0xff}, p.wo)
}

func (p *pebbleFloor) insert(_ context.Context, docs []bsoncore.Document) error {
	p.noteWrite()
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
		if p.oplog {
			if err := p.setOplogEntry(b, 'i', id, d, nil); err != nil {
				return err
			}
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
		return p.write(u.key, u.record, u.record, nil)
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
	return p.write(u.key, next, nil, u)
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

package catalog

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// IDIndexName is the name MongoDB gives every collection's _id index.
const IDIndexName = "_id_"

// Collection is the metadata of one collection. Values reachable from a State
// are immutable; changes copy.
type Collection struct {
	ID      uint64      `bson:"id"`
	DB      string      `bson:"db"`
	Name    string      `bson:"name"`
	UUID    bson.Binary `bson:"uuid"`
	Created time.Time   `bson:"created"`
	// Options are the create options as the client sent them (validated by
	// the command layer), kept verbatim for listCollections and later issues.
	Options bson.Raw `bson:"options,omitempty"`
	// Indexes are the secondary indexes; the _id index is implicit in the
	// document keyspace and not listed here.
	Indexes []Index `bson:"indexes,omitempty"`
}

// Index is the metadata of one secondary index.
type Index struct {
	ID   uint64   `bson:"id"`
	Name string   `bson:"name"`
	Key  bson.Raw `bson:"key"`
	// Spec is the whole index specification as createIndexes received it.
	Spec bson.Raw `bson:"spec,omitempty"`
	// Multikey records that some document produced several keys (an array
	// on an indexed path), which changes how the planner may use bounds.
	Multikey bool `bson:"multikey,omitempty"`
	// MultikeyComponents says which paths held arrays: for each key
	// pattern field, the positions of the path components that did
	// (index.Multikey.Components). MultikeyPaths lists them for a wildcard
	// index (index.Multikey.Paths). Catalogs written before these fields
	// existed have Multikey without either: which paths are multikey is
	// unknown then, and the planner treats every path as multikey.
	MultikeyComponents [][]int  `bson:"multikeyComponents,omitempty"`
	MultikeyPaths      []string `bson:"multikeyPaths,omitempty"`
	// Building is set while createIndexes fills the index from existing
	// documents; writes maintain it, the planner does not use it yet.
	Building bool `bson:"building,omitempty"`
	// TypeBits: every entry carries the type bits of its key in its value
	// (index.Spec.KeysAndTypeBits), so a covered plan can rebuild the
	// document's values exactly. Indexes created before type bits existed
	// lack it; their entries are read as before (numbers in the narrowest
	// type), and covered plans over them fetch the documents whose keys hold
	// numbers, nulls or containers.
	TypeBits bool `bson:"typeBits,omitempty"`
}

// MultikeyPathsKnown reports whether the index records which of its paths
// are multikey (always, unless a catalog from before the record says only
// that some are).
func (ix *Index) MultikeyPathsKnown() bool {
	if !ix.Multikey || len(ix.MultikeyPaths) > 0 {
		return true
	}
	for _, c := range ix.MultikeyComponents {
		if len(c) > 0 {
			return true
		}
	}
	return false
}

// Index looks up an index of the collection by name; nil when absent.
func (c *Collection) Index(name string) *Index {
	for i := range c.Indexes {
		if c.Indexes[i].Name == name {
			return &c.Indexes[i]
		}
	}
	return nil
}

// Namespace is "db.collection".
func (c *Collection) Namespace() string { return c.DB + "." + c.Name }

// State is one immutable view of the catalog.
type State struct {
	byNS map[nsKey]*Collection
	// views: database → name → definition; replaced whole on a change
	// (views.go), so a State's maps are never written after publication.
	views  map[string]map[string]*View
	nextID uint64
}

// Collection looks up db.name; nil when it does not exist.
func (s *State) Collection(db, name string) *Collection { return s.byNS[nsKey{db, name}] }

// nsKey is a collection's key in State.byNS: looking one up hashes its
// two names, where a "db.name" key would first be built on every command.
type nsKey struct{ db, name string }

func keyOf(c *Collection) nsKey { return nsKey{c.DB, c.Name} }

// Collections lists db's collections sorted by name (all databases when db is "").
func (s *State) Collections(db string) []*Collection {
	var out []*Collection
	for _, c := range s.byNS {
		if db == "" || c.DB == db {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace() < out[j].Namespace() })
	return out
}

// Databases lists the names of databases that hold at least one collection, sorted.
func (s *State) Databases() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range s.byNS {
		if !seen[c.DB] {
			seen[c.DB] = true
			out = append(out, c.DB)
		}
	}
	for db := range s.views { // a database holding only views exists (its system.views)
		if !seen[db] {
			seen[db] = true
			out = append(out, db)
		}
	}
	sort.Strings(out)
	return out
}

// clone copies the top level so one change can be made without touching s.
func (s *State) clone() *State {
	n := &State{byNS: make(map[nsKey]*Collection, len(s.byNS)+1), views: s.views, nextID: s.nextID}
	for k, v := range s.byNS {
		n.byNS[k] = v
	}
	return n
}

// Catalog holds the published State for readers and the working State the
// commit pipeline changes (see "One writer").
type Catalog struct {
	published atomic.Pointer[State]
	// gen is odd from just before a group that changed the catalog commits
	// until its state is published (or discarded): see "Catalog matches
	// snapshot" at ReadBegin.
	gen     atomic.Uint64
	working *State
	// committing is working as of the last Committing: what Committed
	// publishes, since the pipeline may apply the next group (advancing
	// working) while this one's log sync is in flight.
	// Atomic: a pipelined member's next group runs Committing while the
	// completer runs this group's Committed (both then hold the published
	// state: storage's Hooks.Publishes keeps a changing group alone).
	committing atomic.Pointer[State]
	now        func() time.Time
	// reloaded: Reload published a state the pipeline has not adopted as
	// its working state yet (work).
	reloaded atomic.Bool
}

// firstID leaves ids below it free for fixed internal uses later.
const firstID = 16

var (
	nextIDKey     = storage.SystemKey("nextid")
	collRecPrefix = []byte{storage.SpaceMeta, 'c'}
)

func collRecKey(id uint64) []byte {
	return binary.AppendUvarint(append([]byte(nil), collRecPrefix...), id)
}

// Load reads the catalog from db. Call it before any write, then wire
// Committed and Failed into the storage hooks.
func Load(db *storage.DB, now func() time.Time) (*Catalog, error) {
	st := &State{byNS: map[nsKey]*Collection{}, nextID: firstID}
	if v, ok, err := db.Get(nil, nextIDKey); err != nil {
		return nil, fmt.Errorf("catalog: reading id sequence: %w", err)
	} else if ok {
		n, k := binary.Uvarint(v)
		if k <= 0 {
			return nil, fmt.Errorf("catalog: id sequence record is damaged")
		}
		st.nextID = n
	}
	it, err := db.NewIter(collRecPrefix, storage.PrefixEnd(collRecPrefix))
	if err != nil {
		return nil, err
	}
	err = loadRecords(it, st)
	if cerr := it.Close(); err == nil && cerr != nil { // closed once ("Closed once", package storage)
		err = fmt.Errorf("catalog: reading collection records: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	if it, err = db.NewIter(viewRecPrefix, storage.PrefixEnd(viewRecPrefix)); err != nil {
		return nil, err
	}
	err = loadViews(it, st)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("catalog: reading view records: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	c := &Catalog{working: st, now: now}
	c.published.Store(st)
	return c, nil
}

// loadRecords reads the collection records it walks into st.
func loadRecords(it *storage.Iter, st *State) error {
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.Value()
		if err != nil {
			return fmt.Errorf("catalog: reading collection record: %w", err)
		}
		var c Collection
		if err := bson.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("catalog: collection record %x is damaged: %w", it.Key(), err)
		}
		if c.ID >= st.nextID {
			return fmt.Errorf("catalog: collection %s has id %d beyond the id sequence %d", c.Namespace(), c.ID, st.nextID)
		}
		st.byNS[keyOf(&c)] = &c
	}
	return nil
}

// Current is the catalog as of the last committed write; safe from any goroutine.
func (c *Catalog) Current() *State { return c.published.Load() }

// Committing marks a catalog change in flight (gen odd) when the group about
// to commit changed the catalog, and reports whether it did; the storage
// Committing hook (the pipeline then applies the next group only after this
// one is published).
func (c *Catalog) Committing() bool {
	w := c.work()
	c.committing.Store(w)
	if w != c.published.Load() {
		c.gen.Add(1)
		return true
	}
	return false
}

// Changing reports, on the pipeline goroutine, whether the requests applied
// since the last Committing changed the catalog (storage's Hooks.Publishes:
// a pipelined member then lets every group in flight complete before this
// one's Committing, so Committed never publishes a state early).
func (c *Catalog) Changing() bool { return c.work() != c.published.Load() }

// Committed publishes the state as of Committing; the storage Committed hook.
func (c *Catalog) Committed() {
	if w := c.committing.Load(); w != nil {
		c.published.Store(w)
	}
	c.settle()
}

// Failed discards unpublished changes; the storage Failed hook.
func (c *Catalog) Failed() {
	c.reloaded.Store(false)
	c.working = c.published.Load()
	c.settle()
}

// settle ends a catalog change in flight (gen even again).
func (c *Catalog) settle() {
	if c.gen.Load()%2 == 1 {
		c.gen.Add(1)
	}
}

// ReadBegin and ReadValid pair the catalog with a storage snapshot:
//
//	st, g := cat.ReadBegin()
//	snap := db.NewSnapshot()
//	if !cat.ReadValid(g) { close snap, start again }
//
// Invariant "Catalog matches snapshot": a state whose ReadValid holds has
// exactly the catalog changes whose writes the snapshot sees. Current alone
// cannot promise that: a group's writes become visible inside its batch
// commit, its catalog state only after that commit returns (Committed), so
// a snapshot taken in between would see, say, array values of an index the
// catalog still calls not multikey. The pair is a seqlock on gen: ReadBegin
// waits while a catalog change is in flight, ReadValid fails if one began
// since. Catalog changes are rare (DDL, an index's first array), so a retry,
// or a wait for one group's commit, is too.
func (c *Catalog) ReadBegin() (*State, uint64) {
	for wait := time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
		if g := c.gen.Load(); g%2 == 0 {
			st := c.published.Load()
			if c.gen.Load() == g {
				return st, g
			}
		}
		time.Sleep(wait)
	}
}

// TryReadBegin is ReadBegin without the wait: ok is false while a catalog
// change is in flight (for a caller that must not wait, such as storage's
// completer goroutine, which itself ends the change).
func (c *Catalog) TryReadBegin() (st *State, g uint64, ok bool) {
	if g = c.gen.Load(); g%2 == 0 {
		st = c.published.Load()
		if c.gen.Load() == g {
			return st, g, true
		}
	}
	return nil, 0, false
}

// ReadValid reports whether no catalog change began since ReadBegin
// returned g (see "Catalog matches snapshot").
func (c *Catalog) ReadValid(g uint64) bool { return c.gen.Load() == g }

// Working is the state a request function sees, including earlier requests of
// its group and its own changes. Only for use inside a storage request.
func (c *Catalog) Working() *State { return c.work() }

// change installs next as the working state, undone if tx's writes are.
func (c *Catalog) change(tx *storage.Txn, next *State) {
	if invariants.Enabled && !tx.OnPipeline() {
		invariants.Fail("One writer", "the working catalog changed outside a request on the commit pipeline's goroutine")
	}
	prev := c.work()
	c.working = next
	tx.OnUndo(func() { c.working = prev })
}

// allocID takes the next id from the sequence in st and persists the sequence.
func allocID(tx *storage.Txn, st *State) uint64 {
	id := st.nextID
	st.nextID++
	tx.Set(nextIDKey, binary.AppendUvarint(nil, st.nextID))
	return id
}

func (c *Catalog) writeRecord(tx *storage.Txn, coll *Collection) error {
	rec, err := bson.Marshal(coll)
	if err != nil {
		return fmt.Errorf("catalog: encoding %s: %w", coll.Namespace(), err)
	}
	tx.Set(collRecKey(coll.ID), rec)
	return nil
}

// CreateCollection adds db.name inside tx. The name must be valid and free.
func (c *Catalog) CreateCollection(tx *storage.Txn, db, name string, options bson.Raw) (*Collection, error) {
	st := c.work()
	if st.Collection(db, name) != nil {
		return nil, mongoerr.New(mongoerr.NamespaceExists, "Collection %s.%s already exists.", db, name)
	}
	if st.View(db, name) != nil { // "Views and collections share one namespace"
		return nil, mongoerr.New(mongoerr.NamespaceExists, "Namespace %s.%s already exists", db, name)
	}
	if err := checkDBCase(st, db); err != nil {
		return nil, err
	}
	next := st.clone()
	coll := &Collection{ID: allocID(tx, next), DB: db, Name: name, UUID: newUUID(), Created: c.now().UTC(), Options: options}
	if err := c.writeRecord(tx, coll); err != nil {
		return nil, err
	}
	next.byNS[keyOf(coll)] = coll
	c.change(tx, next)
	return coll, nil
}

// NewCollection makes the metadata of a collection db.name for a
// multi-document transaction to create at its commit (AddCollection): its
// id is taken from the sequence inside tx, which may commit alone (an id
// a transaction that aborts took is never used, as "Ids are never
// reused" allows), and nothing else of the catalog changes.
func (c *Catalog) NewCollection(tx *storage.Txn, db, name string, options bson.Raw) (*Collection, error) {
	st := c.work()
	if err := checkDBCase(st, db); err != nil {
		return nil, err
	}
	next := st.clone()
	coll := &Collection{ID: allocID(tx, next), DB: db, Name: name, UUID: newUUID(), Created: c.now().UTC(), Options: options}
	c.change(tx, next) // the id sequence advanced
	return coll, nil
}

// NewIndexID takes an index id from the sequence inside tx, for an index
// of a collection NewCollection made.
func (c *Catalog) NewIndexID(tx *storage.Txn) uint64 {
	next := c.work().clone()
	id := allocID(tx, next)
	c.change(tx, next)
	return id
}

// AddCollection installs coll, made by NewCollection (with the indexes its
// transaction gave it), inside tx: its record is written and it joins the
// working state. The name must still be free.
func (c *Catalog) AddCollection(tx *storage.Txn, coll *Collection) error {
	st := c.work()
	if st.Collection(coll.DB, coll.Name) != nil || st.View(coll.DB, coll.Name) != nil {
		return mongoerr.New(mongoerr.NamespaceExists, "Collection %s already exists.", coll.Namespace())
	}
	if err := checkDBCase(st, coll.DB); err != nil {
		return err
	}
	if err := c.writeRecord(tx, coll); err != nil {
		return err
	}
	next := st.clone()
	next.byNS[keyOf(coll)] = coll
	c.change(tx, next)
	return nil
}

// checkDBCase refuses a database whose name differs from an existing one only
// in case, as MongoDB does (such names would collide on case-insensitive
// filesystems and confuse users).
func checkDBCase(st *State, db string) error {
	for _, existing := range st.Databases() {
		if existing != db && strings.EqualFold(existing, db) {
			return mongoerr.New(mongoerr.DatabaseDifferCase, "db already exists with different case already have: [%s] trying to create [%s]", existing, db)
		}
	}
	return nil
}

// DropCollection removes db.name and all its data inside tx. It reports
// whether the collection existed.
func (c *Catalog) DropCollection(tx *storage.Txn, db, name string) bool {
	coll := c.work().Collection(db, name)
	if coll == nil {
		return false
	}
	next := c.work().clone()
	delete(next.byNS, keyOf(coll))
	tx.Delete(collRecKey(coll.ID))
	deleteSpace(tx, storage.SpaceDocument, coll.ID)
	deleteSpace(tx, storage.SpaceNatural, coll.ID) // a capped collection's order
	deleteSpace(tx, storage.SpaceHistory, coll.ID) // a versioned collection's history
	deleteSpace(tx, storage.SpaceHistoryVersion, coll.ID)
	for _, ix := range coll.Indexes {
		deleteSpace(tx, storage.SpaceIndex, ix.ID)
	}
	c.change(tx, next)
	return true
}

func deleteSpace(tx *storage.Txn, space byte, id uint64) {
	p := storage.Prefix(nil, space, id)
	tx.DeleteRange(p, storage.PrefixEnd(p))
}

// DropDatabase drops every collection of db inside tx and returns how many.
func (c *Catalog) DropDatabase(tx *storage.Txn, db string) int {
	n := 0
	for _, coll := range c.work().Collections(db) {
		if c.DropCollection(tx, coll.DB, coll.Name) {
			n++
		}
	}
	for _, v := range c.work().Views(db) {
		if c.DropView(tx, db, v.Name()) {
			n++
		}
	}
	return n
}

// RenameCollection moves fromDB.from to toDB.to inside tx. Data stays where
// it is: only the record changes, because data is keyed by id, not name. An
// existing target is dropped when dropTarget is set, refused otherwise.
func (c *Catalog) RenameCollection(tx *storage.Txn, fromDB, from, toDB, to string, dropTarget bool) error {
	src := c.work().Collection(fromDB, from)
	if src == nil && c.work().View(fromDB, from) != nil {
		return mongoerr.New(mongoerr.CommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", fromDB, from)
	}
	if src == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Source collection %s.%s does not exist", fromDB, from)
	}
	if fromDB == toDB && from == to {
		return mongoerr.New(mongoerr.IllegalOperation, "Can't rename a collection to itself")
	}
	if c.work().View(toDB, to) != nil {
		return mongoerr.New(mongoerr.NamespaceExists, "a view already exists with that name: %s.%s", toDB, to)
	}
	if c.work().Collection(toDB, to) != nil {
		if !dropTarget {
			return mongoerr.New(mongoerr.NamespaceExists, "target namespace exists")
		}
		c.DropCollection(tx, toDB, to)
	}
	if err := checkDBCase(c.work(), toDB); err != nil {
		return err
	}
	moved := *src
	moved.DB, moved.Name = toDB, to
	if err := c.writeRecord(tx, &moved); err != nil {
		return err
	}
	next := c.work().clone()
	delete(next.byNS, keyOf(src))
	next.byNS[keyOf(&moved)] = &moved
	c.change(tx, next)
	return nil
}

// SetOptions replaces the options of db.name inside tx (collMod).
func (c *Catalog) SetOptions(tx *storage.Txn, db, name string, options bson.Raw) error {
	cur := c.work().Collection(db, name)
	if cur == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", db, name)
	}
	next := *cur
	next.Options = options
	return c.replaceCollection(tx, &next)
}

// withIndexes returns a copy of coll carrying indexes.
func withIndexes(coll *Collection, indexes []Index) *Collection {
	next := *coll
	next.Indexes = indexes
	return &next
}

// replaceCollection persists coll and installs it in the working state.
func (c *Catalog) replaceCollection(tx *storage.Txn, coll *Collection) error {
	if err := c.writeRecord(tx, coll); err != nil {
		return err
	}
	next := c.work().clone()
	next.byNS[keyOf(coll)] = coll
	c.change(tx, next)
	return nil
}

// AddIndex adds ix (its ID is assigned here) to db.coll inside tx and
// returns the index as stored. Name clashes are the caller's to check.
func (c *Catalog) AddIndex(tx *storage.Txn, db, coll string, ix Index) (Index, error) {
	cur := c.work().Collection(db, coll)
	if cur == nil {
		return Index{}, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", db, coll)
	}
	next := c.work().clone()
	ix.ID = allocID(tx, next)
	c.change(tx, next) // the id sequence advanced
	indexes := append(append([]Index(nil), cur.Indexes...), ix)
	return ix, c.replaceCollection(tx, withIndexes(cur, indexes))
}

// UpdateIndex replaces the index of the same name (its multikey or building
// flag changed) inside tx.
func (c *Catalog) UpdateIndex(tx *storage.Txn, db, coll string, ix Index) error {
	cur := c.work().Collection(db, coll)
	if cur == nil || cur.Index(ix.Name) == nil {
		return mongoerr.New(mongoerr.IndexNotFound, "index not found with name [%s]", ix.Name)
	}
	indexes := append([]Index(nil), cur.Indexes...)
	for i := range indexes {
		if indexes[i].Name == ix.Name {
			indexes[i] = ix
		}
	}
	return c.replaceCollection(tx, withIndexes(cur, indexes))
}

// DropIndex removes the named index and its entries inside tx.
func (c *Catalog) DropIndex(tx *storage.Txn, db, coll, name string) error {
	cur := c.work().Collection(db, coll)
	if cur == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s.%s", db, coll)
	}
	ix := cur.Index(name)
	if ix == nil {
		return mongoerr.New(mongoerr.IndexNotFound, "index not found with name [%s]", name)
	}
	deleteSpace(tx, storage.SpaceIndex, ix.ID)
	var indexes []Index
	for _, other := range cur.Indexes {
		if other.Name != name {
			indexes = append(indexes, other)
		}
	}
	return c.replaceCollection(tx, withIndexes(cur, indexes))
}

// work is the working state, on the commit pipeline's goroutine: after a
// Reload it is the reloaded state.
func (c *Catalog) work() *State {
	if c.reloaded.Load() {
		c.reloaded.Store(false)
		c.working = c.published.Load()
	}
	return c.working
}

// Reload makes the catalog what db holds once apply has changed db outside
// the commit pipeline (a replica set secondary applying its primary's
// commit group, storage's ApplyReplicated). Readers see a change in flight
// from before apply until the reloaded state is published ("Catalog matches
// snapshot"); the pipeline's goroutine adopts it as its working state at
// its next use (the working state is that goroutine's alone).
func (c *Catalog) Reload(db *storage.DB, apply func() error) error {
	c.gen.Add(1)
	defer func() { c.gen.Add(1) }()
	if err := apply(); err != nil {
		return err
	}
	fresh, err := Load(db, c.now)
	if err != nil {
		return err
	}
	c.published.Store(fresh.working)
	c.reloaded.Store(true)
	return nil
}

// RecordKey is the key of collection id's catalog record: a prepared
// transaction holds it (engine txn_prepare.go), so no DDL changes the
// collection before the transaction commits or aborts.
func RecordKey(id uint64) []byte { return collRecKey(id) }

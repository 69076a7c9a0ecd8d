// Smoke test: mongosh's shell API against a running `cairn serve`.
//
// Usage: mongosh "mongodb://127.0.0.1:PORT/smoke_mongosh" --quiet --norc --file mongosh_smoke.js
//
// Same protocol as node_smoke.mjs (read by smoke_test.go): "ok <name>" or
// "expected-gap <name>: <code>" per check on stdout; the first failure prints
// "FAIL <name>: <reason>" (on stdout: print is mongosh's output) and exits 1.
const assert = require('assert').strict;

// Shell results live in another JS realm, so assert.deepEqual would reject
// them for their prototypes; canonical Extended JSON compares what matters
// instead: BSON types, values and field order.
function same(actual, expected, message) {
  const a = EJSON.stringify(actual, { relaxed: false });
  const e = EJSON.stringify(expected, { relaxed: false });
  assert.equal(a, e, message);
}

// The server's error for fn, or a failure naming what unexpectedly succeeded.
function serverError(fn) {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('succeeded, but an error was expected');
}

function expectCode(fn, code, codeName) {
  const err = serverError(fn);
  assert.equal(err.code, code, `want code ${code}, got ${err.code} (${err.message})`);
  if (codeName) {
    assert.equal(err.codeName, codeName, `want codeName ${codeName} for code ${code}`);
  }
  return err;
}

// Counts in shell results must be plain numbers, as against mongod: a Long
// here means the server sent a count (n, nModified) as int64, not int32.
function count(actual, want, what) {
  assert.equal(typeof actual, 'number',
    `${what} is ${actual && actual.constructor ? actual.constructor.name : typeof actual}('${actual}'), not a number: the reply's count must be an int32, as mongod sends it`);
  assert.equal(actual, want, what);
}

const c = db.items;

const checks = [
  ['db.version', () => {
    assert.match(db.version(), /^7\.0\.\d+$/);
  }],
  ['adminCommand-ping', () => {
    assert.equal(db.adminCommand({ ping: 1 }).ok, 1);
  }],
  ['db.hello', () => {
    assert.equal(db.hello().isWritablePrimary, true);
  }],
  ['startup-banners', () => {
    // What an interactive mongosh prints after connecting (getLog
    // startupWarnings and friends): nothing, and no error.
    for (const banner of ['startupWarnings', 'automationNotices', 'nonGenuineMongoDBCheck']) {
      const r = show(banner);
      assert.equal(r.type, 'ShowBannerResult');
      assert.equal(r.value, null, `show('${banner}') would print ${JSON.stringify(r.value)}`);
    }
  }],
  ['diagnostics', () => {
    assert.match(db.serverBuildInfo().version, /^7\.0\./);
    assert.ok(db.hostInfo().system.hostname !== undefined, 'hostInfo has no system.hostname');
    assert.equal(db.serverStatus().ok, 1);
    assert.equal(db.stats().ok, 1);
  }],
  ['insertOne', () => {
    const r = c.insertOne({ name: 'ann', color: 'red', n: 1 });
    assert.equal(r.acknowledged, true);
    assert.ok(r.insertedId instanceof ObjectId, 'insertedId is not an ObjectId');
    same(c.findOne({ _id: r.insertedId }), { _id: r.insertedId, name: 'ann', color: 'red', n: 1 });
  }],
  ['insertOne-explicit-id', () => {
    assert.equal(c.insertOne({ _id: 1, name: 'one', color: 'red', n: 2 }).insertedId, 1);
  }],
  ['insertMany', () => {
    const r = c.insertMany([
      { _id: 3, name: 'three', color: 'blue', n: 3 },
      { _id: 2, name: 'two', color: 'green', n: 4 },
      { name: 'gen', color: 'red', n: 5 },
    ]);
    assert.equal(Object.keys(r.insertedIds).length, 3);
    assert.ok(r.insertedIds[2] instanceof ObjectId);
  }],
  ['findOne-by-id', () => {
    same(c.findOne({ _id: 2 }), { _id: 2, name: 'two', color: 'green', n: 4 });
    assert.equal(c.findOne({ _id: 'missing' }), null);
  }],
  ['find-toArray', () => {
    // Batches of 2 force getMore. Cairn's natural order is _id order, where
    // numbers sort before ObjectIds.
    const ids = c.find().batchSize(2).toArray().map((d) => d._id);
    assert.equal(ids.length, 5);
    same(ids.slice(0, 3), [1, 2, 3]);
    assert.ok(ids.slice(3).every((id) => id instanceof ObjectId));
  }],
  ['find-equality-filter', () => {
    const names = c.find({ color: 'red' }).toArray().map((d) => d.name).sort();
    same(names, ['ann', 'gen', 'one']);
    same(c.find({ color: 'red', n: 2 }).toArray().map((d) => d._id), [1]);
  }],
  ['find-query-language', () => {
    const docs = c.find({ n: { $gte: 3 } }, { _id: 0, name: 1 }).sort({ n: -1 }).limit(3).toArray();
    same(docs, [{ name: 'gen' }, { name: 'two' }, { name: 'three' }]);
  }],
  ['replaceOne', () => {
    const r = c.replaceOne({ _id: 1 }, { name: 'uno', color: 'green' });
    count(r.matchedCount, 1, 'matchedCount');
    count(r.modifiedCount, 1, 'modifiedCount');
    same(c.findOne({ _id: 1 }), { _id: 1, name: 'uno', color: 'green' });
  }],
  ['replaceOne-upsert', () => {
    const r = c.replaceOne({ _id: 10 }, { name: 'ten', color: 'blue' }, { upsert: true });
    count(r.matchedCount, 0, 'matchedCount');
    count(r.upsertedCount, 1, 'upsertedCount');
    assert.equal(r.insertedId, 10); // mongosh's UpdateResult names the upserted _id insertedId
    same(c.findOne({ _id: 10 }), { _id: 10, name: 'ten', color: 'blue' });
  }],
  ['duplicate-key', () => {
    expectCode(() => c.insertOne({ _id: 10, name: 'again' }), 11000);
  }],
  ['deleteOne', () => {
    count(c.deleteOne({ _id: 10 }).deletedCount, 1, 'deletedCount');
    assert.equal(c.findOne({ _id: 10 }), null);
  }],
  ['deleteMany', () => {
    count(c.deleteMany({ color: 'red' }).deletedCount, 2, 'deletedCount'); // ann, gen
    same(c.find({ color: 'red' }).toArray(), []);
  }],
  ['estimatedDocumentCount', () => {
    count(c.estimatedDocumentCount(), 3, 'estimatedDocumentCount'); // uno, two, three
  }],
  ['getCollectionNames', () => {
    db.other.insertOne({ _id: 1 });
    same(db.getCollectionNames().sort(), ['items', 'other']);
  }],
  ['getDBNames', () => {
    assert.ok(db.getMongo().getDBNames().includes(db.getName()), `${db.getName()} missing from listDatabases`);
  }],
  ['unknown-command', () => {
    expectCode(() => db.runCommand({ cairnSmokeNoSuchCommand: 1 }), 59, 'CommandNotFound');
  }],
  ['drop', () => {
    assert.equal(db.other.drop(), true);
    same(db.getCollectionNames(), ['items']);
  }],
  ['createIndex', () => {
    same(c.createIndex({ color: 1 }), 'color_1');
    same(c.getIndexes().map((ix) => ix.name), ['_id_', 'color_1']);
    c.dropIndex('color_1');
    same(c.getIndexes().length, 1);
  }],
  ['aggregate', () => {
    const out = c.aggregate([{ $count: 'n' }]).toArray();
    same(out.length, 1);
    same(c.countDocuments({}), out[0].n);
  }],
  ['validator', () => {
    db.createCollection('people', { validator: { $jsonSchema: { required: ['name'], properties: { age: { bsonType: 'int', minimum: 0 } } } } });
    const err = expectCode(() => db.people.insertOne({ _id: 1, name: 'ann', age: -1 }), 121);
    same(err.errInfo.failingDocumentId, 1);
    same(err.errInfo.details.operatorName, '$jsonSchema');
    same(err.errInfo.details.schemaRulesNotSatisfied[0].propertiesNotSatisfied[0].propertyName, 'age');
    db.people.insertOne({ _id: 2, age: -1 }, { bypassDocumentValidation: true });
    same(db.people.countDocuments({}), 1);
    assert.equal(db.runCommand({ collMod: 'people', validationAction: 'warn' }).ok, 1);
    db.people.insertOne({ _id: 3 });
    same(db.getCollectionInfos({ name: 'people' })[0].options.validationAction, 'warn');
    assert.equal(db.people.drop(), true);
  }],
  ['capped', () => {
    db.createCollection('log', { capped: true, size: 4096, max: 3 });
    for (let i = 0; i < 5; i++) {
      db.log.insertOne({ _id: i });
    }
    assert.equal(db.log.isCapped(), true);
    same(db.log.find().toArray(), [{ _id: 2 }, { _id: 3 }, { _id: 4 }]);
    const stats = db.log.stats();
    assert.equal(stats.capped, true);
    count(stats.max, 3, 'stats.max');
    count(stats.maxSize, 4096, 'stats.maxSize');
    same(db.log.find().sort({ $natural: -1 }).toArray(), [{ _id: 4 }, { _id: 3 }, { _id: 2 }]);
    const cur = db.log.find().tailable({ awaitData: true });
    cur.disableBlockWarnings();
    same([cur.next(), cur.next(), cur.next()], [{ _id: 2 }, { _id: 3 }, { _id: 4 }]);
    db.log.insertOne({ _id: 5 });
    same(cur.next(), { _id: 5 });
    cur.close();
    assert.equal(db.log.drop(), true);
  }],
  ['profiler', () => {
    assert.equal(db.setProfilingLevel(2, { slowms: 150 }).was, 0);
    const st = db.getProfilingStatus();
    assert.equal(st.was, 2);
    assert.equal(st.slowms, 150);
    assert.equal(st.sampleRate, 1);
    db.prof.insertOne({ a: 1 });
    db.prof.find({ a: 1 }).toArray();
    const entry = db.system.profile.findOne({ op: 'query', ns: db.getName() + '.prof' });
    assert.ok(entry, 'no profile entry for the find');
    assert.equal(entry.planSummary, 'COLLSCAN');
    assert.equal(entry.nreturned, 1);
    assert.ok(entry.ts instanceof Date, 'ts is not a date');
    assert.equal(db.setProfilingLevel(0, { slowms: 100 }).was, 2);
    assert.equal(db.getProfilingStatus().was, 0);
    db.prof.drop();
  }],
  // Issue #23's seed scenario on a versioned collection: three versions of
  // docId 174, the latest by _id and by attr1, a compare-and-swap that
  // loses and retries, the audit of every version, a read as of a time
  // between versions 1 and 2, and a deleted document's history.
  ['versioned-seed-scenario', () => {
    assert.equal(db.createCollection('vdocs', { versioning: { enabled: true } }).ok, 1);
    const v = db.vdocs;
    v.insertMany([{ _id: 174, attr1: 'red', n: 1 }, { _id: 175, attr1: 'red', n: 1 }, { _id: 176, attr1: 'blue', n: 1 }]);
    for (const n of [2, 3]) {
      count(v.updateOne({ _id: 174 }, { $set: { n } }).modifiedCount, 1, `update to n=${n}`);
    }
    same(v.findOne({ _id: 174 }), { _id: 174, attr1: 'red', n: 3, _v: Long.fromNumber(3) });
    same(v.find({ attr1: 'red' }).sort({ _id: 1 }).toArray().map((d) => d._id), [174, 175]);
    // A writer holding version 2 loses the race, re-reads and retries.
    count(v.updateOne({ _id: 174, _v: 2 }, { $set: { n: 40 } }).matchedCount, 0, 'stale CAS matchedCount');
    const cur = v.findOne({ _id: 174 });
    count(v.updateOne({ _id: 174, _v: cur._v }, { $set: { n: 4 } }).modifiedCount, 1, 'retried CAS modifiedCount');
    expectCode(() => v.updateOne({ _id: 174 }, { $set: { _v: 99 } }), 66); // a write error: no codeName in the shell's error
    const audit = (id) => v.aggregate([{ $versions: {} }, { $match: { _id: id } }]).toArray();
    const vs = audit(174);
    same(vs.map((x) => [x._v, x.op, x.doc.n]), [[Long.fromNumber(4), 'update', 4], [Long.fromNumber(3), 'update', 3],
      [Long.fromNumber(2), 'update', 2], [Long.fromNumber(1), 'insert', 1]]);
    for (let i = 1; i < vs.length; i++) {
      same(vs[i].validTo, vs[i - 1].validFrom, `version ${vs[i]._v} ends where the next begins`);
    }
    // Just before version 2 began: version 1 holds, and 175 and 176 exist.
    const v2 = vs[2].validFrom;
    const before = v2.i > 1 ? Timestamp({ t: v2.t, i: v2.i - 1 }) : Timestamp({ t: v2.t - 1, i: 0x7fffffff });
    const rc = { level: 'snapshot', atClusterTime: before };
    const then = db.runCommand({ find: 'vdocs', filter: { _id: 174 }, readConcern: rc });
    same(then.cursor.firstBatch, [{ _id: 174, attr1: 'red', n: 1, _v: Long.fromNumber(1) }]);
    count(db.runCommand({ count: 'vdocs', query: { n: 1 }, readConcern: rc }).n, 3, 'count n=1 as of version 1');
    // A deleted document's history ends in a tombstone.
    count(v.deleteOne({ _id: 175 }).deletedCount, 1, 'deletedCount');
    same(audit(175).map((x) => [x.op, x.doc == null]), [['delete', true], ['insert', false]]); // a tombstone has no document
    count(v.countDocuments({ _id: 175 }), 0, 'deleted 175 counted');
    count(db.runCommand({ count: 'vdocs', query: { _id: 175 }, readConcern: rc }).n, 1, '175 as of before its delete');
    assert.equal(v.drop(), true);
  }],
];

// Features Cairn does not have yet; see node_smoke.mjs.
const gaps = [
];

let current = 'start';
try {
  db.dropDatabase(); // so the script can be rerun by hand against one server
  for (const [name, fn] of checks) {
    current = name;
    fn();
    print(`ok ${name}`);
  }
  for (const [name, code, codeName, fn] of gaps) {
    current = `expected-gap ${name}`;
    const err = expectCode(fn, code, codeName);
    print(`expected-gap ${name}: ${err.code}`);
  }
  current = 'dropDatabase';
  assert.equal(db.dropDatabase().ok, 1);
  assert.ok(!db.getMongo().getDBNames().includes(db.getName()), 'database still listed after dropDatabase');
  print('ok dropDatabase');
} catch (err) {
  print(`FAIL ${current}: ${err && err.stack ? err.stack : err}`);
  quit(1);
}

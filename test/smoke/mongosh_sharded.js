// Smoke test: mongosh's sh.* helpers through a `cairn router` of a sharded
// cluster (two shards, started by `cairn cluster up --shards 2`).
//
// Usage: mongosh "mongodb://127.0.0.1:PORT/smoke_sharded" --quiet --norc --file mongosh_sharded.js
//
// Same protocol as mongosh_smoke.js: "ok <name>" per check on stdout; the
// first failure prints "FAIL <name>: <reason>" and exits 1.
const assert = require('assert').strict;

function check(name, fn) {
  try {
    fn();
    print('ok ' + name);
  } catch (err) {
    print('FAIL ' + name + ': ' + (err && err.stack ? err.stack : err));
    quit(1);
  }
}

const ns = db.getName() + '.users';

check('hello-isdbgrid', () => {
  assert.equal(db.hello().msg, 'isdbgrid');
});

check('sh.enableSharding', () => {
  assert.equal(sh.enableSharding(db.getName()).ok, 1);
});

check('sh.shardCollection-hashed', () => {
  assert.equal(sh.shardCollection(ns, { uid: 'hashed' }).ok, 1);
});

check('insertMany-through-router', () => {
  const docs = [];
  for (let i = 0; i < 200; i++) docs.push({ uid: i, name: 'u' + i });
  assert.equal(Object.keys(db.users.insertMany(docs).insertedIds).length, 200);
  assert.equal(db.users.countDocuments({}), 200);
});

check('targeted-explain', () => {
  const plan = db.users.find({ uid: 7 }).explain().queryPlanner.winningPlan;
  assert.equal(plan.stage, 'SINGLE_SHARD');
  assert.equal(plan.shards.length, 1);
});

check('collStats-per-shard', () => {
  const per = db.users.aggregate([{ $collStats: { storageStats: {} } }]).toArray();
  assert.equal(per.length, 2);
  assert.equal(per.reduce((n, s) => n + s.storageStats.count, 0), 200);
});

check('sh.splitAt', () => {
  assert.equal(sh.shardCollection(db.getName() + '.orders', { cust: 1 }).ok, 1);
  assert.equal(sh.splitAt(db.getName() + '.orders', { cust: 100 }).ok, 1);
});

check('sh.addShardToZone-and-range', () => {
  assert.equal(sh.addShardToZone('shard0', 'EU').ok, 1);
  assert.equal(sh.updateZoneKeyRange(db.getName() + '.orders', { cust: MinKey() }, { cust: 100 }, 'EU').ok, 1);
});

check('sh.stopBalancer-and-state', () => {
  sh.stopBalancer();
  assert.equal(sh.getBalancerState(), false);
  sh.startBalancer();
  assert.equal(sh.getBalancerState(), true);
});

check('sh.status', () => {
  const res = sh.status();
  const s = res.value || res;
  assert.equal(s.shards.length, 2);
  const app = s.databases.find((d) => d.database._id === db.getName());
  assert.ok(app, 'the database is listed');
  const users = app.collections[ns];
  assert.equal(JSON.stringify(users.shardKey), JSON.stringify({ uid: 'hashed' }));
  assert.equal(users.chunkMetadata.length, 2);
  const orders = app.collections[db.getName() + '.orders'];
  assert.equal(orders.chunks.length, 2);
  assert.equal(orders.tags.length, 1);
  const mongoses = s['active mongoses'] || s['most recently active mongoses'];
  assert.ok(Array.isArray(mongoses) && mongoses.length === 1, 'the router is listed: ' + JSON.stringify(mongoses));
  const dist = (s.shardedDataDistribution || []).find((d) => d.ns === ns);
  assert.ok(dist, 'shardedDataDistribution lists the collection: ' + JSON.stringify(s.shardedDataDistribution));
  assert.equal(dist.shards.length, 2);
  assert.equal(dist.shards.reduce((n, x) => n + Number(x.numOwnedDocuments), 0), 200);
});

check('getShardDistribution', () => {
  db.users.getShardDistribution(); // prints; it throws when a shard's stats are missing
});

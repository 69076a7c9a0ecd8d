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
  // mongosh runs $collStats {storageStats} through the router (one
  // document per shard, each naming it) and counts config.chunks per shard.
  const res = db.users.getShardDistribution();
  const d = res.value || res;
  const keys = Object.keys(d).filter((k) => k.startsWith('Shard '));
  assert.equal(keys.length, 2, 'one entry per shard: ' + JSON.stringify(d));
  assert.equal(keys.reduce((n, k) => n + d[k].docs, 0), 200);
  assert.equal(d.Totals.docs, 200, JSON.stringify(d.Totals));
  assert.equal(d.Totals.chunks, 4, JSON.stringify(d.Totals)); // hashed presplit: two per shard
});

// Every sh.* helper of mongosh, in one table: what it does through the
// router, or the code it is refused with ('expected-gap'). Helpers that
// change something are followed by a look at what changed.
const orders = db.getName() + '.orders';
const admin = db.getSiblingDB('admin');
const config = db.getSiblingDB('config');
// The chunk [{cust: 100}, MaxKey) (splitAt 100 made it).
const upperChunk = () => config.chunks.findOne({ uuid: config.collections.findOne({ _id: orders }).uuid, 'min.cust': 100 });
const helpers = [
  ['help', () => sh.help()],
  ['status-verbose', () => assert.equal((sh.status(true).value || sh.status(true)).shards.length, 2)],
  ['addShard-again', () => {
    const host = admin.runCommand({ listShards: 1 }).shards.find((x) => x._id === 'shard1').host;
    assert.equal(sh.addShard(host).shardAdded, 'shard1');
  }],
  ['addShardTag', () => assert.equal(sh.addShardTag('shard1', 'US').ok, 1)],
  ['addTagRange', () => assert.equal(sh.addTagRange(orders, { cust: 100 }, { cust: MaxKey() }, 'US').ok, 1)],
  ['removeTagRange', () => {
    assert.equal(sh.removeTagRange(orders, { cust: 100 }, { cust: MaxKey() }).ok, 1);
    assert.equal(config.tags.countDocuments({ ns: orders, tag: 'US' }), 0);
  }],
  ['removeShardTag', () => {
    assert.equal(sh.removeShardTag('shard1', 'US').ok, 1);
    assert.ok(!(config.shards.findOne({ _id: 'shard1' }).tags || []).includes('US'));
  }],
  ['removeRangeFromZone', () => assert.equal(sh.removeRangeFromZone(orders, { cust: MinKey() }, { cust: 100 }).ok, 1)],
  ['removeShardFromZone', () => assert.equal(sh.removeShardFromZone('shard0', 'EU').ok, 1)],
  ['splitFind', () => {
    const docs = [];
    for (let i = 0; i < 100; i++) docs.push({ cust: i });
    db.orders.insertMany(docs);
    assert.equal(sh.splitFind(orders, { cust: 10 }).ok, 1);
    assert.equal(config.chunks.countDocuments({ uuid: config.collections.findOne({ _id: orders }).uuid }), 3);
  }],
  ['moveChunk', () => {
    const to = upperChunk().shard === 'shard0' ? 'shard1' : 'shard0';
    assert.equal(sh.moveChunk(orders, { cust: 150 }, to).ok, 1);
    assert.equal(upperChunk().shard, to);
  }],
  ['moveRange', () => {
    const to = upperChunk().shard === 'shard0' ? 'shard1' : 'shard0';
    assert.equal(sh.moveRange(orders, to, { cust: 100 }, { cust: MaxKey() }).ok, 1);
    assert.equal(upperChunk().shard, to);
  }],
  ['status-migration-results', () => {
    // The donors record their migrations in config.changelog: sh.status()
    // counts moveChunk's and moveRange's.
    const s = sh.status();
    const res = (s.value || s).balancer['Migration Results for the last 24 hours'];
    assert.ok(Object.entries(res).some(([n, v]) => v === 'Success' && Number(n) >= 2), JSON.stringify(res));
  }],
  ['listShards', () => assert.equal(sh.listShards().map((x) => x._id).join(), 'shard0,shard1')],
  ['listShards-filter', () => assert.equal(sh.listShards({ _id: 'shard1' }).map((x) => x._id).join(), 'shard1')],
  ['isConfigShardEnabled', () => assert.equal(sh.isConfigShardEnabled().enabled, false)],
  ['disableMigrations', () => {
    assert.equal(sh.disableMigrations(orders).ok, 1);
    assert.equal(config.collections.findOne({ _id: orders }).permitMigrations, false);
    const to = upperChunk().shard === 'shard0' ? 'shard1' : 'shard0';
    let code = 0;
    try {
      sh.moveChunk(orders, { cust: 150 }, to);
    } catch (err) {
      code = err.code;
    }
    assert.equal(code, 117, 'moveChunk while migrations are not allowed');
  }],
  ['enableMigrations', () => {
    assert.equal(sh.enableMigrations(orders).ok, 1);
    assert.equal(config.collections.findOne({ _id: orders }).permitMigrations, undefined);
  }],
  ['balancerCollectionStatus', () => {
    const st = sh.balancerCollectionStatus(orders);
    assert.equal(typeof st.balancerCompliant, 'boolean');
    assert.equal(st.chunkSize, 128);
  }],
  ['disableBalancing', () => {
    sh.disableBalancing(orders);
    assert.equal(config.collections.findOne({ _id: orders }).noBalance, true);
  }],
  ['enableBalancing', () => {
    sh.enableBalancing(orders);
    assert.equal(config.collections.findOne({ _id: orders }).noBalance, false);
  }],
  ['isBalancerRunning', () => assert.equal(typeof sh.isBalancerRunning().mode, 'string')],
  ['setBalancerState', () => {
    sh.setBalancerState(false);
    assert.equal(sh.getBalancerState(), false);
    sh.setBalancerState(true);
    assert.equal(sh.getBalancerState(), true);
  }],
  ['getShardedDataDistribution', () => {
    const dist = sh.getShardedDataDistribution().toArray();
    assert.ok(dist.find((x) => x.ns === ns), JSON.stringify(dist));
  }],
  // MongoDB 7.0 performs no automatic splits either; the setting is kept.
  ['disableAutoSplit', () => sh.disableAutoSplit()],
  ['enableAutoSplit', () => sh.enableAutoSplit()],
  ['isAutoMergerEnabled', () => {
    assert.equal(sh.isAutoMergerEnabled(), false); // Cairn has none
    const s = sh.status();
    assert.equal((s.value || s).automerge['Currently enabled'], 'no');
  }],
  ['startAutoMerger', () => sh.startAutoMerger(), 72],
  ['stopAutoMerger', () => sh.stopAutoMerger(), 72],
  ['enableAutoMerger', () => sh.enableAutoMerger(orders), 72],
  ['disableAutoMerger', () => sh.disableAutoMerger(orders), 72],
  ['checkMetadataConsistency', () => sh.checkMetadataConsistency().toArray(), 115],
  ['reshardCollection', () => sh.reshardCollection(orders, { cust: 'hashed' }), 115],
  ['commitReshardCollection', () => sh.commitReshardCollection(orders), 115],
  ['abortReshardCollection', () => sh.abortReshardCollection(orders), 115],
  ['shardAndDistributeCollection', () => sh.shardAndDistributeCollection(db.getName() + '.spread', { k: 1 }), 115],
  ['movePrimary', () => admin.runCommand({ movePrimary: db.getName(), to: 'shard1' }), 115],
  // MongoDB 8.0's: a 7.0 mongos has none of them.
  ['moveCollection', () => sh.moveCollection(db.getName() + '.plain', 'shard1'), 59],
  ['unshardCollection', () => sh.unshardCollection(orders, 'shard1'), 59],
  ['abortMoveCollection', () => sh.abortMoveCollection(orders), 59],
  ['abortUnshardCollection', () => sh.abortUnshardCollection(orders), 59],
  ['shardDrainingStatus', () => sh.shardDrainingStatus('shard1'), 59],
  ['getTransitionToDedicatedConfigServerStatus', () => sh.getTransitionToDedicatedConfigServerStatus(), 59],
];
for (const [name, fn, code] of helpers) {
  const label = 'sh.' + name;
  if (code === undefined) {
    check(label, fn);
    continue;
  }
  let res;
  try {
    res = fn();
  } catch (err) {
    if (err.code === code) {
      print('expected-gap ' + label + ': ' + code);
      continue;
    }
    print('FAIL ' + label + ': want code ' + code + ', got ' + (err && err.stack ? err.stack : err));
    quit(1);
  }
  if (res && res.ok === 0 && res.code === code) { // runCommand answers without throwing
    print('expected-gap ' + label + ': ' + code);
    continue;
  }
  print('FAIL ' + label + ': want code ' + code + ', got ' + JSON.stringify(res));
  quit(1);
}

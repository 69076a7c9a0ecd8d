// Smoke test: the official Node.js driver against a three-member Cairn
// replica set, connecting with replicaSet= as an application does.
//
// Usage: node replset_node.mjs "mongodb://h0,h1,h2/?replicaSet=rs0"
//
// Protocol as node_smoke.mjs: "ok <name>" per check; the first failure
// prints "FAIL <name>: <reason>" on stderr and exits 1.
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { runChecks } from './checks.mjs';

const uri = process.argv[2];
const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
let topology;
client.on('topologyDescriptionChanged', (ev) => { topology = ev.newDescription; });

const checks = [
  ['connect-replicaSet', async () => {
    await client.connect();
    assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
    assert.equal(topology.type, 'ReplicaSetWithPrimary');
    assert.equal(topology.setName, 'rs0');
    const kinds = [...topology.servers.values()].map((s) => s.type).sort();
    assert.deepEqual(kinds, ['RSPrimary', 'RSSecondary', 'RSSecondary']);
  }],
  ['majority-write', async () => {
    const r = await client.db('smoke_rs_node').collection('c').insertOne({ _id: 1, v: 'x' }, { writeConcern: { w: 'majority' } });
    assert.equal(r.acknowledged, true);
  }],
  ['secondary-read', async () => {
    const c = client.db('smoke_rs_node').collection('c', { readPreference: 'secondary' });
    const deadline = Date.now() + 10000;
    for (;;) {
      const doc = await c.findOne({ _id: 1 });
      if (doc) {
        assert.equal(doc.v, 'x');
        return;
      }
      if (Date.now() > deadline) throw new Error('the write never reached a secondary read');
      await new Promise((r) => setTimeout(r, 50));
    }
  }],
  ['retryable-write-session', async () => {
    const session = client.startSession();
    try {
      const r = await client.db('smoke_rs_node').collection('c').updateOne({ _id: 1 }, { $set: { v: 'y' } }, { session });
      assert.equal(r.modifiedCount, 1);
    } finally {
      await session.endSession();
    }
  }],
];

await runChecks(client, checks);

// Change streams with the official MongoDB Node.js driver, run by
// smoke_test.go (TestClientsChangeStreams) against `cairn serve --replSet
// rs0`: it initiates a one-member set, then watches a collection the way
// applications do (collection.watch()).
//
// Usage: node changestream_smoke.mjs HOST:PORT
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { MongoClient } from 'mongodb';

const addr = process.argv[2];
if (!addr) {
  console.error('usage: node changestream_smoke.mjs HOST:PORT');
  process.exit(2);
}

async function check(name, fn) {
  try {
    await fn();
  } catch (err) {
    console.error(`FAIL ${name}: ${err && err.stack || err}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}

let client;
let coll;
let firstToken;

await check('replSetInitiate', async () => {
  const direct = new MongoClient(`mongodb://${addr}/?directConnection=true`, { serverSelectionTimeoutMS: 5000 });
  await direct.connect();
  await direct.db('admin').command({ replSetInitiate: { _id: 'rs0', members: [{ _id: 0, host: addr }] } });
  for (let i = 0; ; i++) {
    const h = await direct.db('admin').command({ hello: 1 });
    if (h.isWritablePrimary) break;
    assert.ok(i < 300, 'no primary within 30 s');
    await sleep(100);
  }
  await direct.close();
  client = new MongoClient(`mongodb://${addr}/?replicaSet=rs0`, { serverSelectionTimeoutMS: 10000 });
  await client.connect();
  coll = client.db('smoke_cs').collection('c');
});

await check('watch-insert-update', async () => {
  const cs = coll.watch([], { fullDocument: 'updateLookup', maxAwaitTimeMS: 200 });
  assert.equal(await cs.tryNext(), null); // opens the stream: nothing yet
  await coll.insertOne({ _id: 1, a: 1 });
  await coll.updateOne({ _id: 1 }, { $set: { a: 2 } });
  const ins = await cs.next();
  assert.equal(ins.operationType, 'insert');
  assert.deepEqual(ins.fullDocument, { _id: 1, a: 1 });
  assert.deepEqual(ins.ns, { db: 'smoke_cs', coll: 'c' });
  firstToken = ins._id;
  const upd = await cs.next();
  assert.equal(upd.operationType, 'update');
  assert.deepEqual(upd.updateDescription.updatedFields, { a: 2 });
  assert.deepEqual(upd.fullDocument, { _id: 1, a: 2 });
  assert.ok(cs.resumeToken && cs.resumeToken._data, 'no resume token');
  await cs.close();
});

await check('resumeAfter', async () => {
  const cs = coll.watch([], { resumeAfter: firstToken });
  const upd = await cs.next();
  assert.equal(upd.operationType, 'update');
  await cs.close();
});

await check('pipeline-and-events', async () => {
  const cs = coll.watch([{ $match: { operationType: 'delete' } }], { maxAwaitTimeMS: 200 });
  assert.equal(await cs.tryNext(), null);
  await coll.insertOne({ _id: 2 });
  await coll.deleteOne({ _id: 2 });
  const del = await cs.next();
  assert.equal(del.operationType, 'delete');
  assert.deepEqual(del.documentKey, { _id: 2 });
  await cs.close();
});

await client.close();

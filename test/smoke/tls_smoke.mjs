// Smoke test of --tlsMode requireTLS with the official Node.js driver: a
// client with tls=true and the test CA connects and writes; a plain client
// is refused; a client that does not trust the CA is refused.
//
// Usage: node tls_smoke.mjs HOST:PORT CAFILE   (protocol as node_smoke.mjs)
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const [addr, caFile] = process.argv.slice(2);

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    console.error(`FAIL ${name}: ${err && err.stack || err}`);
    process.exit(1);
  }
}

async function withClient(uri, opts, fn) {
  const c = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000, ...opts });
  try {
    await c.connect();
    return await fn(c);
  } finally {
    await c.close();
  }
}

await check('tls-insert-find', () => withClient(`mongodb://${addr}/?tls=true`, { tlsCAFile: caFile }, async (c) => {
  await c.db('smoke_tls').collection('c').insertOne({ _id: 1, over: 'tls' });
  assert.deepEqual(await c.db('smoke_tls').collection('c').findOne({ _id: 1 }), { _id: 1, over: 'tls' });
}));
await check('plain-refused', () => assert.rejects(
  withClient(`mongodb://${addr}/`, { serverSelectionTimeoutMS: 1000 }, (c) => c.db('admin').command({ ping: 1 }))));
await check('untrusted-ca-refused', () => assert.rejects(
  withClient(`mongodb://${addr}/?tls=true`, { serverSelectionTimeoutMS: 1000 }, (c) => c.db('admin').command({ ping: 1 }))));

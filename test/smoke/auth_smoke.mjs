// Smoke test of --auth with the official Node.js driver: the localhost
// exception creates the first user, then SCRAM-SHA-256 and SCRAM-SHA-1
// authenticate, a wrong password fails with AuthenticationFailed (18) and an
// unauthenticated client is refused with Unauthorized (13).
//
// Usage: node auth_smoke.mjs HOST:PORT   (protocol as node_smoke.mjs)
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const addr = process.argv[2];
const opts = { serverSelectionTimeoutMS: 5000, connectTimeoutMS: 5000 };

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (err) {
    console.error(`FAIL ${name}: ${err && err.stack || err}`);
    process.exit(1);
  }
}

async function withClient(uri, fn) {
  const c = new MongoClient(uri, opts);
  try {
    await c.connect();
    return await fn(c);
  } finally {
    await c.close();
  }
}

await check('unauthenticated-refused', () => withClient(`mongodb://${addr}/`, async (c) => {
  await assert.rejects(c.db('smoke_auth').collection('c').findOne({}), (e) => e.code === 13);
}));
await check('localhost-exception-first-user', () => withClient(`mongodb://${addr}/`, async (c) => {
  await c.db('admin').command({ createUser: 'smoke', pwd: 'sm0ke pass', roles: ['root'] });
  await assert.rejects(c.db('admin').command({ createUser: 'second', pwd: 'x', roles: [] }), (e) => e.code === 13);
}));
for (const mech of ['SCRAM-SHA-256', 'SCRAM-SHA-1']) {
  await check(`auth-${mech}`, () => withClient(`mongodb://smoke:sm0ke%20pass@${addr}/?authSource=admin&authMechanism=${mech}`, async (c) => {
    await c.db('smoke_auth').collection('c').insertOne({ mech });
    assert.equal(await c.db('smoke_auth').collection('c').countDocuments({ mech }), 1);
    const st = await c.db('admin').command({ connectionStatus: 1 });
    assert.deepEqual(st.authInfo.authenticatedUsers, [{ user: 'smoke', db: 'admin' }]);
  }));
  await check(`wrong-password-${mech}`, async () => {
    const c = new MongoClient(`mongodb://smoke:wrong@${addr}/?authSource=admin&authMechanism=${mech}`, opts);
    await assert.rejects(c.connect(), (e) => e.code === 18);
    await c.close();
  });
}
// Without a mechanism the driver negotiates one (saslSupportedMechs) and
// authenticates speculatively in its handshake.
await check('auth-negotiated', () => withClient(`mongodb://smoke:sm0ke%20pass@${addr}/?authSource=admin`, async (c) => {
  assert.equal((await c.db('admin').command({ ping: 1 })).ok, 1);
}));

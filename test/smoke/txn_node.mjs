// Smoke test: multi-document transactions through the official Node.js
// driver against a three-member replica set that `cairn cluster up`
// started (txn_smoke_test.go): session.withTransaction as applications
// write it, its retry of a transient error, explicit abort, snapshot reads
// and a causally consistent read of the session's own write on a secondary.
//
// Usage: node txn_node.mjs "mongodb://h0,h1,h2/?replicaSet=rs0"
//
// Protocol as node_smoke.mjs: "ok <name>" per check; the first failure
// prints "FAIL <name>: <reason>" on stderr and exits 1.
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { runChecks } from './checks.mjs';

const uri = process.argv[2];
const client = new MongoClient(uri, { serverSelectionTimeoutMS: 20000, w: 'majority' });
const db = client.db('smoke_txn_node');
const accounts = db.collection('accounts');
const ledger = db.collection('ledger');
const txnOptions = { readConcern: { level: 'snapshot' }, writeConcern: { w: 'majority' } };

async function balances() {
  const docs = await accounts.find({}, { readConcern: { level: 'majority' } }).sort({ _id: 1 }).toArray();
  return docs.map((d) => d.balance);
}

const checks = [
  ['setup', async () => {
    await client.connect();
    await accounts.insertMany([{ _id: 'a', balance: 100 }, { _id: 'b', balance: 100 }]);
    await ledger.insertOne({ _id: 0, note: 'opened' });
  }],
  ['withTransaction-commit', async () => {
    const session = client.startSession();
    try {
      const result = await session.withTransaction(async () => {
        await accounts.updateOne({ _id: 'a' }, { $inc: { balance: -30 } }, { session });
        await accounts.updateOne({ _id: 'b' }, { $inc: { balance: 30 } }, { session });
        await ledger.insertOne({ _id: 1, from: 'a', to: 'b', amount: 30 }, { session });
        // The transaction reads its own writes.
        const a = await accounts.findOne({ _id: 'a' }, { session });
        assert.equal(a.balance, 70);
        return 'moved';
      }, txnOptions);
      assert.equal(result, 'moved');
    } finally {
      await session.endSession();
    }
    assert.deepEqual(await balances(), [70, 130]);
    assert.equal(await ledger.countDocuments({}), 2);
  }],
  ['withTransaction-callback-throws-aborts', async () => {
    const session = client.startSession();
    try {
      await assert.rejects(session.withTransaction(async () => {
        await accounts.updateOne({ _id: 'a' }, { $inc: { balance: -1000 } }, { session });
        await ledger.insertOne({ _id: 2, from: 'a', to: 'b', amount: 1000 }, { session });
        throw new Error('insufficient funds');
      }, txnOptions), /insufficient funds/);
    } finally {
      await session.endSession();
    }
    assert.deepEqual(await balances(), [70, 130]);
    assert.equal(await ledger.findOne({ _id: 2 }), null);
  }],
  ['withTransaction-retries-write-conflict', async () => {
    // The first attempt's commit meets a write made outside it since its
    // snapshot: WriteConflict with TransientTransactionError, and
    // withTransaction runs the callback again.
    const session = client.startSession();
    let attempts = 0;
    try {
      await session.withTransaction(async () => {
        attempts++;
        const b = await accounts.findOne({ _id: 'b' }, { session });
        await accounts.updateOne({ _id: 'b' }, { $set: { balance: b.balance + 5 } }, { session });
        if (attempts === 1) {
          await accounts.updateOne({ _id: 'b' }, { $inc: { balance: 1 } });
        }
      }, txnOptions);
    } finally {
      await session.endSession();
    }
    assert.equal(attempts, 2);
    assert.deepEqual(await balances(), [70, 136]);
  }],
  ['explicit-abort', async () => {
    const session = client.startSession();
    try {
      session.startTransaction(txnOptions);
      await ledger.insertOne({ _id: 3, note: 'never' }, { session });
      await session.abortTransaction();
    } finally {
      await session.endSession();
    }
    assert.equal(await ledger.findOne({ _id: 3 }), null);
  }],
  ['snapshot-isolation', async () => {
    // A transaction keeps reading its snapshot while another client
    // commits a change.
    const session = client.startSession();
    try {
      session.startTransaction(txnOptions);
      const before = await accounts.findOne({ _id: 'a' }, { session });
      await accounts.updateOne({ _id: 'a' }, { $inc: { balance: 1 } });
      const again = await accounts.findOne({ _id: 'a' }, { session });
      assert.equal(again.balance, before.balance);
      await session.commitTransaction();
      const after = await accounts.findOne({ _id: 'a' });
      assert.equal(after.balance, before.balance + 1);
    } finally {
      await session.endSession();
    }
  }],
  ['causal-read-on-secondary', async () => {
    // A causally consistent session reads its own write from a secondary
    // (afterClusterTime from the write's operationTime).
    const session = client.startSession({ causalConsistency: true });
    try {
      await ledger.insertOne({ _id: 4, note: 'causal' }, { session, writeConcern: { w: 1 } });
      const doc = await db.collection('ledger', { readPreference: 'secondary' }).findOne({ _id: 4 }, { session });
      assert.equal(doc && doc.note, 'causal');
    } finally {
      await session.endSession();
    }
  }],
];

await runChecks(client, checks);

// Transactions in mongosh against a three-member replica set that `cairn
// cluster up` started, run by txn_smoke_test.go: session.withTransaction,
// the explicit startTransaction/commitTransaction/abortTransaction helpers
// and a transaction's snapshot.
const session = db.getMongo().startSession();
const sdb = session.getDatabase('smoke_txn_mongosh');
const plain = db.getSiblingDB('smoke_txn_mongosh');
plain.inventory.insertMany([{ _id: 'apple', qty: 10 }, { _id: 'pear', qty: 5 }]);
plain.orders.insertOne({ _id: 0 });

function check(cond, what) {
  if (!cond) {
    throw new Error(what);
  }
}

session.withTransaction(() => {
  sdb.inventory.updateOne({ _id: 'apple' }, { $inc: { qty: -2 } });
  sdb.orders.insertOne({ _id: 1, item: 'apple', qty: 2 });
  check(sdb.inventory.findOne({ _id: 'apple' }).qty === 8, 'the transaction does not read its own write');
}, { readConcern: { level: 'snapshot' }, writeConcern: { w: 'majority' } });
check(plain.inventory.findOne({ _id: 'apple' }).qty === 8 && plain.orders.countDocuments({}) === 2,
  'withTransaction did not commit: ' + EJSON.stringify(plain.orders.find().toArray()));
print('ok withTransaction-commit');

let threw = false;
try {
  session.withTransaction(() => {
    sdb.inventory.updateOne({ _id: 'pear' }, { $inc: { qty: -50 } });
    throw new Error('out of pears');
  });
} catch (e) {
  threw = /out of pears/.test(String(e));
}
check(threw, 'withTransaction did not pass the callback\'s error on');
check(plain.inventory.findOne({ _id: 'pear' }).qty === 5, 'an aborted transaction\'s write is visible');
print('ok withTransaction-abort-on-throw');

session.startTransaction({ readConcern: { level: 'snapshot' } });
sdb.orders.insertOne({ _id: 2, item: 'pear', qty: 1 });
plain.inventory.updateOne({ _id: 'pear' }, { $set: { qty: 6 } });
check(sdb.inventory.findOne({ _id: 'pear' }).qty === 5, 'the transaction does not read its snapshot');
session.commitTransaction();
check(plain.orders.findOne({ _id: 2 }) !== null && plain.inventory.findOne({ _id: 'pear' }).qty === 6, 'commitTransaction');
print('ok startTransaction-commitTransaction');

session.startTransaction();
sdb.orders.insertOne({ _id: 3 });
session.abortTransaction();
check(plain.orders.findOne({ _id: 3 }) === null, 'abortTransaction left the insert');
print('ok abortTransaction');
session.endSession();

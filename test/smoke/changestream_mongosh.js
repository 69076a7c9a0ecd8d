// Change streams in mongosh (db.coll.watch()), run by smoke_test.go
// (TestClientsChangeStreams) after changestream_smoke.mjs initiated the
// one-member set.
const c = db.getSiblingDB('smoke_cs_mongosh').c;
const cs = c.watch([], { fullDocument: 'updateLookup' });
if (cs.tryNext() !== null) {
  throw new Error('an event before any write');
}
c.insertOne({ _id: 1, a: 1 });
c.updateOne({ _id: 1 }, { $inc: { a: 1 } });
function nextEvent() {
  for (let i = 0; i < 100; i++) {
    const ev = cs.tryNext();
    if (ev !== null) {
      return ev;
    }
    sleep(50);
  }
  throw new Error('no event within 5 s');
}
const ins = nextEvent();
if (ins.operationType !== 'insert' || ins.fullDocument.a !== 1) {
  throw new Error('insert event: ' + EJSON.stringify(ins));
}
print('ok watch-insert');
const upd = nextEvent();
if (upd.operationType !== 'update' || upd.fullDocument.a !== 2 || upd.updateDescription.updatedFields.a !== 2) {
  throw new Error('update event: ' + EJSON.stringify(upd));
}
print('ok watch-update');
if (!cs.getResumeToken() || !cs.getResumeToken()._data) {
  throw new Error('no resume token');
}
print('ok resume-token');
cs.close();

// Smoke test: mongosh's replica-set helpers against a three-member Cairn set
// (`cairn serve --replSet rs0` processes smoke_test.go started and
// initiated), plus a fourth member to add.
//
// Usage: NEW_MEMBER=host:port mongosh "mongodb://h0,h1,h2/?replicaSet=rs0" --quiet --norc --file replset_mongosh.js
//
// Same protocol as mongosh_smoke.js: "ok <name>" per check; the first
// failure prints "FAIL <name>: <reason>" and exits 1.
const assert = require('assert').strict;

function waitFor(what, cond) {
  const deadline = Date.now() + 30000;
  for (;;) {
    let last;
    try {
      if (cond()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ': ' + last : ''}`);
    sleep(100);
  }
}

const checks = [
  ['rs.status', () => {
    const st = rs.status();
    assert.equal(st.ok, 1);
    assert.equal(st.set, 'rs0');
    assert.equal(st.members.length, 3);
    assert.equal(st.members.filter((m) => m.stateStr === 'PRIMARY').length, 1, 'one PRIMARY');
    assert.equal(st.members.filter((m) => m.stateStr === 'SECONDARY').length, 2, 'two SECONDARY');
    assert.equal(st.myState, 1, 'mongosh with replicaSet= talks to the primary');
  }],
  ['rs.conf', () => {
    const conf = rs.conf();
    assert.equal(conf._id, 'rs0');
    assert.equal(conf.members.length, 3);
    assert.ok(conf.version >= 1, `version ${conf.version}`);
    for (const m of conf.members) {
      assert.equal(typeof m.host, 'string');
    }
  }],
  ['rs.add', () => {
    const before = rs.conf().version;
    const r = rs.add(process.env.NEW_MEMBER);
    assert.equal(r.ok, 1);
    const conf = rs.conf();
    assert.equal(conf.members.length, 4);
    assert.ok(conf.members.some((m) => m.host === process.env.NEW_MEMBER), 'the new member is in the config');
    assert.ok(conf.version > before, `version ${conf.version} after ${before}`);
    waitFor('the new member to be SECONDARY', () =>
      rs.status().members.some((m) => m.name === process.env.NEW_MEMBER && m.stateStr === 'SECONDARY'));
  }],
  ['rs.stepDown', () => {
    const old = db.hello().me;
    assert.equal(db.hello().isWritablePrimary, true);
    const r = rs.stepDown(10);
    assert.equal(r.ok, 1);
    waitFor('a new primary', () => {
      const p = rs.status().members.find((m) => m.stateStr === 'PRIMARY');
      return p !== undefined && p.name !== old;
    });
  }],
  ['write-after-stepDown', () => {
    waitFor('a write on the new primary', () =>
      db.getSiblingDB('smoke_rs').c.insertOne({ after: 'stepDown' }, { writeConcern: { w: 'majority' } }).acknowledged);
  }],
];

let current = 'start';
try {
  for (const [name, fn] of checks) {
    current = name;
    fn();
    print(`ok ${name}`);
  }
} catch (err) {
  print(`FAIL ${current}: ${err && err.stack ? err.stack : err}`);
  quit(1);
}

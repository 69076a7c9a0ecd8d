// mongosh over TLS (--tls --tlsCAFile), run by smoke_test.go against
// `cairn serve --tlsMode requireTLS`.
const r = db.adminCommand({ ping: 1 });
if (r.ok !== 1) {
  throw new Error('ping over TLS: ' + JSON.stringify(r));
}
print('ok tls-ping');
db.getSiblingDB('smoke_tls').m.insertOne({ from: 'mongosh' });
if (db.getSiblingDB('smoke_tls').m.countDocuments({ from: 'mongosh' }) !== 1) {
  throw new Error('insert over TLS not found');
}
print('ok tls-insert-find');

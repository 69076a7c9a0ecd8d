// mongosh under --auth, run by smoke_test.go once auth_smoke.mjs made the
// user: the connection string authenticated (its authMechanism says how).
const st = db.adminCommand({ connectionStatus: 1 });
if (st.authInfo.authenticatedUsers.length !== 1 || st.authInfo.authenticatedUsers[0].user !== 'smoke') {
  throw new Error('not authenticated as smoke: ' + JSON.stringify(st.authInfo));
}
print('ok connectionStatus');
db.getSiblingDB('smoke_auth').c.insertOne({ from: 'mongosh' });
if (db.getSiblingDB('smoke_auth').c.countDocuments({ from: 'mongosh' }) < 1) {
  throw new Error('insert not found');
}
print('ok insert-find');

// The check runner the Node.js smoke scripts share (the protocol of
// node_smoke.mjs): each [name, fn] check runs in order and prints
// "ok <name>"; the first failure prints "FAIL <name>: <reason>" on stderr
// and sets exit code 1. The client is closed either way.
export async function runChecks(client, checks) {
  let current = 'start';
  try {
    for (const [name, fn] of checks) {
      current = name;
      await fn();
      console.log(`ok ${name}`);
    }
  } catch (err) {
    console.error(`FAIL ${current}: ${err && err.stack ? err.stack : err}`);
    process.exitCode = 1;
  } finally {
    await client.close();
  }
}

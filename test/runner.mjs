// A minimal sequential test runner for the Node.js client scripts the Go tests run
// (test/e2e/client.mjs, test/clients/tssdk.mjs): one line per test, then the plain
// "N passed, N failed" line CI reads.

const tests = [];

// test registers a test; they run in registration order (later ones build on state
// earlier ones created).
export const test = (name, fn) => tests.push({ name, fn });

// runTests runs every registered test and returns the counts.
export async function runTests() {
  let passed = 0;
  let failed = 0;
  for (const t of tests) {
    try {
      await t.fn();
      passed++;
      console.log(`ok    ${t.name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL  ${t.name}\n      ${String(e?.stack ?? e).split('\n').join('\n      ')}`);
    }
  }
  return { passed, failed };
}

// finish prints the closing line and exits non-zero when anything failed.
export function finish({ passed, failed }) {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

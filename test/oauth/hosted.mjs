// A person connecting the hosted clients (claude.ai, Claude Code, GitHub Copilot CLI):
// Debian's chromium goes through the dev sign-in and consent pages of each
// authorization URL the Go test built (hosted_test.go holds the PKCE verifiers and
// redeems the codes). A native client's loopback redirect is served here, on the
// port the Go test chose, as the client itself listens on one; claude.ai's callback
// is claude.ai's own host, which chromium is told cannot be resolved, so the code
// never leaves this machine: the request chromium starts is what is read.
//
//   AACMCP_JOBS        JSON: [{name, auth_url, redirect_uri, answer}], in order
//   AACMCP_RESULT_FILE where to write [{name, query, consents}]
//   AACMCP_UNRESOLVED  comma-separated hosts chromium must not look up
//
// It prints one line per job and ends with "N passed, M failed".
import http from 'node:http';
import { writeFile } from 'node:fs/promises';
import { test, runTests, finish } from '../runner.mjs';
import { authorize, launchBrowser } from './browser.mjs';

const jobs = JSON.parse(process.env.AACMCP_JOBS);
const unresolved = (process.env.AACMCP_UNRESOLVED || '').split(',').filter(Boolean);
const results = [];
const browser = await launchBrowser(
  unresolved.length ? [`--host-resolver-rules=${unresolved.map((h) => `MAP ${h} ~NOTFOUND`).join(', ')}`] : [],
);

const isLoopback = (u) => u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);

// redirectTo is authorize()'s redirect listener for uri: the first request
// chromium starts to its origin and path (any query) is handed to expect(). A
// loopback uri is also served, on 127.0.0.1 at its port, so that the page loads.
async function redirectTo(uri) {
  const base = new URL(uri);
  let waiter = null;
  const onRequest = (req) => {
    const u = new URL(req.url());
    if (u.origin !== base.origin || u.pathname !== base.pathname || !waiter) return;
    const w = waiter;
    waiter = null;
    w(u);
  };
  browser.context.on('request', onRequest);
  let server = null;
  if (isLoopback(base)) {
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end('<!DOCTYPE html><html lang="en"><title>Done</title><p>Authorization finished: you can close this window.</p></html>');
    });
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(Number(base.port || 80), '127.0.0.1', resolve);
    });
  }
  return {
    url: base.href,
    expect() {
      return new Promise((resolve) => { waiter = resolve; });
    },
    async close() {
      browser.context.off('request', onRequest);
      if (server) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(() => resolve()));
      }
    },
  };
}

for (const job of jobs) {
  test(job.name, async () => {
    const redirect = await redirectTo(job.redirect_uri);
    try {
      const { params, consents } = await authorize(browser, redirect, job.auth_url, job.answer);
      results.push({ name: job.name, query: Object.fromEntries(params), consents });
    } finally {
      await redirect.close();
    }
  });
}

let counts;
try {
  counts = await runTests();
} finally {
  await browser.close();
  await writeFile(process.env.AACMCP_RESULT_FILE, JSON.stringify(results));
}
finish(counts);

// End-to-end checks of a running `aacmcp serve` through the official MCP TypeScript SDK
// client (Client + StreamableHTTPClientTransport), as a real MCP host would connect.
//
// Input (environment):
//   AACMCP_URL          the /mcp endpoint, e.g. http://127.0.0.1:8080/mcp
//   AACMCP_E2E_TOKENS   JSON object: label -> bearer secret. Labels: FULL, READONLY,
//                       VIEWER, MEMBER, ADMIN, AUTHOR, REMOVED, OTHER, REVOKED, and
//                       "scope:<scope>" for a token holding only that scope. Every token
//                       but OTHER belongs to workspace demo; FULL and the scope tokens to
//                       its admin "dev", AUTHOR to a member.
//   AACMCP_E2E_EXPECT   file to write the expected audit records to (one per tool call
//                       made, plus the rejected token), for the Go test to check.
//   AACMCP_E2E_SEEDED   "0" when the workspace was not seeded by `serve --dev` (the
//                       gateway run): the seeded issues are then not required.
//
// Output: one line per failed check, and a final "N passed, N failed" line; exit code
// 1 when anything failed. Failures are asserted on error codes (JSON-RPC data.code, the
// tool result's code, HTTP status), never on message text.

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { test, runTests, finish } from '../runner.mjs';

// The spec's tool table, kept once on purpose as an oracle independent of the catalog
// (shared/catalog/testdata/spec-tools.json, which the Go tests read too): the server
// must agree with the spec, not with itself.
const SPEC = Object.fromEntries(
  JSON.parse(readFileSync(new URL('../../shared/catalog/testdata/spec-tools.json', import.meta.url), 'utf8'))
    .tools.map((t) => [t.name, t]),
);
const TOOL_ORDER = Object.keys(SPEC);
const ALL_SCOPES = ['issues:read', 'issues:write', 'comments:read', 'comments:write', 'dashboard:read', 'agents:write', 'autopilot:run'];
const READ_SCOPES = ['issues:read', 'comments:read', 'dashboard:read'];
const IDEMPOTENCY_KEY_TOOLS = new Set(['create_issue', 'comment_issue', 'trigger_autopilot']);
const AGENT = 'triage-bot';
const CONFIRM_MESSAGE = { error: 'confirm: true required for destructive operations', code: 'destructive_flag_missing' };

// Audit outcome of each error code (docs/architecture.md section 6).
const OUTCOME = {
  invalid_token: 'denied', insufficient_scope: 'denied', destructive_flag_missing: 'denied',
  permission_denied: 'denied', rate_limited: 'denied',
  invalid_arguments: 'error', not_found: 'error', conflict: 'error', internal_error: 'error', unknown_tool: 'error',
};

const url = new URL(required('AACMCP_URL'));
const TOKENS = JSON.parse(required('AACMCP_E2E_TOKENS'));
const expectPath = required('AACMCP_E2E_EXPECT');

function required(name) {
  const v = process.env[name];
  if (!v) {
    console.error(`missing environment variable ${name}`);
    process.exit(2);
  }
  return v;
}

// ---- tiny sequential test runner ----------------------------------------------------


// ---- connections and calls ------------------------------------------------------------

const expectations = [];
const connections = new Map();

// connect opens an SDK client with the token of label. A fetch wrapper keeps the last
// non-2xx response (status, body, WWW-Authenticate) so a refusal the SDK turns into a
// thrown StreamableHTTPError can still be checked by its JSON-RPC data.code.
async function connect(label, { listTools = true } = {}) {
  if (connections.has(label)) return connections.get(label);
  const secret = TOKENS[label];
  assert.ok(secret, `no token for ${label}`);
  const last = { status: 0, body: '', wwwAuthenticate: '' };
  const spy = async (input, init) => {
    const res = await fetch(input, init);
    last.status = res.status;
    last.wwwAuthenticate = res.headers.get('www-authenticate') ?? '';
    last.body = res.ok ? '' : await res.clone().text();
    return res;
  };
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${secret}` } },
    fetch: spy,
  });
  const client = new Client({ name: 'aacmcp-e2e', version: '1.0.0' });
  await client.connect(transport);
  const conn = { label, client, last, tools: [] };
  if (listTools) {
    // Also caches the output schemas, so the SDK validates every structured result.
    conn.tools = (await client.listTools()).tools;
  }
  connections.set(label, conn);
  return conn;
}

// call invokes tool and checks the result against expect: 'ok' or an error code.
// It records the audit record the server must write for the call. Returns the
// success result, or the error body.
async function call(conn, tool, args, expect, { replay } = {}) {
  if (replay === undefined && IDEMPOTENCY_KEY_TOOLS.has(tool)) replay = false;
  expectations.push({
    token: conn.label, tool,
    outcome: expect === 'ok' ? 'success' : OUTCOME[expect],
    reason: expect === 'ok' ? '' : expect,
    ...(replay === undefined ? {} : { replay }),
  });
  const what = `${tool} as ${conn.label} ${JSON.stringify(args)}`;
  let res, err;
  try {
    res = await conn.client.callTool({ name: tool, arguments: args });
  } catch (e) {
    err = e;
  }
  if (expect === 'insufficient_scope') {
    assert.ok(err instanceof StreamableHTTPError, `${what}: want a thrown HTTP 403, got ${err ?? JSON.stringify(res)}`);
    assert.equal(err.code, 403, `${what}: HTTP status`);
    assert.equal(conn.last.status, 403);
    const body = JSON.parse(conn.last.body);
    assert.equal(body.error.data.code, 'insufficient_scope', `${what}: data.code`);
    assert.deepEqual(body.error.data.required_scopes, SPEC[tool].scopes, `${what}: required_scopes`);
    assert.match(conn.last.wwwAuthenticate, /^Bearer /, `${what}: WWW-Authenticate`);
    assert.match(conn.last.wwwAuthenticate, /error="insufficient_scope"/);
    assert.match(conn.last.wwwAuthenticate, new RegExp(`scope="${SPEC[tool].scopes.join(' ')}"`));
    assert.match(conn.last.wwwAuthenticate, /resource_metadata="http[^"]+"/);
    return body.error.data;
  }
  if (expect === 'unknown_tool') {
    assert.ok(err instanceof McpError, `${what}: want a JSON-RPC error, got ${err ?? JSON.stringify(res)}`);
    assert.equal(err.data?.code, 'unknown_tool', `${what}: data.code`);
    return err.data;
  }
  assert.ok(!err, `${what}: threw ${err?.stack ?? err}`);
  assert.ok(Array.isArray(res.content) && res.content[0]?.type === 'text', `${what}: want a text block`);
  const body = JSON.parse(res.content[0].text);
  if (expect === 'ok') {
    assert.notEqual(res.isError, true, `${what}: unexpected error ${res.content[0].text}`);
    assert.deepEqual(res.structuredContent, body, `${what}: structuredContent must equal the text block`);
    return body;
  }
  assert.equal(res.isError, true, `${what}: want isError, got ${res.content[0].text}`);
  assert.equal(body.code, expect, `${what}: code (body ${res.content[0].text})`);
  assert.equal(typeof body.error, 'string', `${what}: error message`);
  if (res.structuredContent !== undefined) {
    assert.deepEqual(res.structuredContent, body, `${what}: structured error must equal the text block`);
  }
  return body;
}

const ok = (conn, tool, args, opts) => call(conn, tool, args, 'ok', opts);

let seq = 0;
const unique = (s) => `${s} ${++seq}`;

async function newIssue(conn, extra = {}) {
  const is = await ok(conn, 'create_issue', { title: unique(`e2e issue by ${conn.label}`), ...extra });
  assert.match(is.key, /^[A-Z][A-Z0-9]*-\d+$/);
  return is;
}

async function newComment(conn, issueId) {
  return ok(conn, 'comment_issue', { issue_id: issueId, body: unique(`comment by ${conn.label}`) });
}

// validArgs gives each tool arguments that pass the schema, on fixtures fx.
function validArgs(tool, fx, label) {
  switch (tool) {
    case 'list_issues': return {};
    case 'get_issue': return { issue_id: fx.issue.id };
    case 'list_comments': return { issue_id: fx.issue.id };
    case 'dashboard_usage_daily': return {};
    case 'create_issue': return { title: unique(`created by ${label}`) };
    case 'update_issue': return { issue_id: fx.issue.id, title: unique(`updated by ${label}`) };
    case 'comment_issue': return { issue_id: fx.issue.id, body: unique(`comment by ${label}`) };
    case 'assign_issue_to_agent': return { issue_id: fx.issue.id, agent_id: AGENT };
    case 'trigger_autopilot': return { issue_id: fx.issue.id, instructions: 'e2e' };
    case 'delete_issue': return { issue_id: fx.deleteIssue.id, confirm: true };
    case 'delete_comment': return { comment_id: fx.deleteComment.id, confirm: true };
  }
  throw new Error(`no arguments for ${tool}`);
}

// ---- the checks -------------------------------------------------------------------------

test('tools/list: every tool, in order, with the spec\'s annotations and scopes', async () => {
  const full = await connect('FULL');
  // The spec's tools, in the spec's order; a tool the spec does not list is checked by
  // the catalog's own tests, not against this oracle.
  assert.deepEqual(full.tools.map((t) => t.name).filter((n) => n in SPEC), TOOL_ORDER);
  for (const t of full.tools) {
    const want = SPEC[t.name];
    if (!want) continue;
    const a = t.annotations ?? {};
    // Every hint explicit: the MCP defaults (destructive, open world) would be wrong.
    for (const k of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
      assert.equal(typeof a[k], 'boolean', `${t.name}.${k} must be set explicitly`);
    }
    assert.equal(a.readOnlyHint, want.readOnly, `${t.name} readOnlyHint`);
    assert.equal(a.destructiveHint, want.destructive, `${t.name} destructiveHint`);
    assert.equal(a.idempotentHint, want.idempotent, `${t.name} idempotentHint`);
    assert.equal(a.openWorldHint, want.openWorld, `${t.name} openWorldHint`);
    assert.deepEqual(t._meta?.['aacmcp/scopes'], want.scopes, `${t.name} scopes in _meta`);
    assert.ok(t.title || a.title, `${t.name} has a title`);
    assert.ok(t.description, `${t.name} has a description`);
    assert.equal(t.inputSchema?.type, 'object', `${t.name} input schema`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name} output schema`);
    if (want.destructive) {
      assert.ok(t.inputSchema.properties?.confirm, `${t.name} declares confirm`);
      assert.ok(t.inputSchema.required?.includes('confirm'), `${t.name} requires confirm`);
    }
    assert.equal(Boolean(t.inputSchema.properties?.idempotency_key), IDEMPOTENCY_KEY_TOOLS.has(t.name),
      `${t.name} idempotency_key property`);
  }
});

test('tools/list is filtered by the token\'s scopes (read-only token, each single scope)', async () => {
  const cases = [['READONLY', READ_SCOPES], ...ALL_SCOPES.map((s) => [`scope:${s}`, [s]])];
  for (const [label, scopes] of cases) {
    const conn = await connect(label);
    const want = TOOL_ORDER.filter((n) => SPEC[n].scopes.every((s) => scopes.includes(s)));
    // A tool the spec does not list is checked by the catalog's own tests (docs/adding-a-tool.md).
    assert.deepEqual(conn.tools.map((t) => t.name).filter((n) => n in SPEC), want, `tools/list for ${label}`);
  }
});

test('happy path of every tool (admin dev, full scopes)', async () => {
  const full = await connect('FULL');
  const page = await ok(full, 'list_issues', {});
  if (process.env.AACMCP_E2E_SEEDED !== '0') assert.ok(page.issues.length >= 4, 'the dev seed has issues');
  assert.ok('next_cursor' in page);

  const is = await ok(full, 'create_issue', {
    title: 'Checkout fails on Safari', description: 'Steps: ...', priority: 'high', labels: ['bug', 'e2e'],
  });
  assert.match(is.key, /^AAC-\d+$/);
  assert.equal(is.version, 1);
  assert.equal(is.status, 'open');
  assert.equal(is.priority, 'high');
  assert.deepEqual([...is.labels].sort(), ['bug', 'e2e']);
  assert.equal(is.created_by, 'dev');
  assert.equal(is.assignee, null);
  assert.equal(is.comment_count, 0);

  assert.deepEqual(await ok(full, 'get_issue', { issue_id: is.id }), is);
  assert.deepEqual(await ok(full, 'get_issue', { issue_id: is.key }), is, 'get by key');
  assert.deepEqual(await ok(full, 'get_issue', { issue_id: is.key.toLowerCase() }), is, 'keys are case-insensitive');

  const up = await ok(full, 'update_issue', { issue_id: is.id, status: 'in_progress', expected_version: 1 });
  assert.equal(up.status, 'in_progress');
  assert.equal(up.version, 2);
  await call(full, 'update_issue', { issue_id: is.id, status: 'done', expected_version: 1 }, 'conflict');

  const c = await ok(full, 'comment_issue', { issue_id: is.id, body: 'Seen on 17.4 too.' });
  assert.equal(c.issue_id, is.id);
  assert.equal(c.author, 'dev');
  assert.equal(c.body, 'Seen on 17.4 too.');
  const comments = await ok(full, 'list_comments', { issue_id: is.key });
  assert.deepEqual(comments.comments.map((x) => x.id), [c.id]);
  assert.equal((await ok(full, 'get_issue', { issue_id: is.id })).comment_count, 1);

  const as = await ok(full, 'assign_issue_to_agent', { issue_id: is.id, agent_id: AGENT });
  assert.deepEqual(as.assignee, { type: 'agent', id: AGENT });
  const mine = await ok(full, 'list_issues', { assignee: AGENT });
  assert.ok(mine.issues.some((x) => x.id === is.id), 'list_issues filters by assignee');
  const labelled = await ok(full, 'list_issues', { label: 'e2e', status: 'in_progress' });
  assert.ok(labelled.issues.every((x) => x.labels.includes('e2e') && x.status === 'in_progress'));

  const run = await ok(full, 'trigger_autopilot', { issue_id: is.id, instructions: 'Fix it.' });
  assert.equal(run.issue_id, is.id);
  assert.equal(run.issue_key, is.key);
  assert.ok(['queued', 'dispatched'].includes(run.status), `run status ${run.status}`);
  assert.equal(run.requested_by, 'dev');

  const usage = await ok(full, 'dashboard_usage_daily', {});
  assert.ok(Array.isArray(usage.days));
  const created = usage.days.filter((d) => d.tool === 'create_issue');
  assert.ok(created.reduce((n, d) => n + d.calls, 0) >= 1, 'create_issue calls are counted');
  for (const d of usage.days) {
    assert.match(d.date, /^\d{4}-\d{2}-\d{2}$/);
    assert.ok(d.calls >= d.denied + d.errors, `calls include denied and errors: ${JSON.stringify(d)}`);
  }

  const delC = await ok(full, 'delete_comment', { comment_id: c.id, confirm: true });
  assert.deepEqual(delC, { deleted: true, comment_id: c.id });
  const delI = await ok(full, 'delete_issue', { issue_id: is.id, confirm: true });
  assert.deepEqual(delI, { deleted: true, issue_id: is.id });
  await call(full, 'get_issue', { issue_id: is.id }, 'not_found');
  await call(full, 'list_comments', { issue_id: is.id }, 'not_found');
});

test('pagination walks every issue once', async () => {
  const full = await connect('FULL');
  const all = await ok(full, 'list_issues', { limit: 100 });
  assert.equal(all.next_cursor, '', 'fewer than 100 issues fit one page');
  const seen = [];
  let cursor;
  for (let i = 0; i < 100; i++) {
    const page = await ok(full, 'list_issues', cursor ? { limit: 2, cursor } : { limit: 2 });
    assert.ok(page.issues.length <= 2);
    seen.push(...page.issues.map((x) => x.id));
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  assert.deepEqual(seen, all.issues.map((x) => x.id));
  await call(full, 'list_issues', { cursor: 'not-a-cursor' }, 'invalid_arguments');
});

test('invalid arguments are tool errors with code invalid_arguments', async () => {
  const full = await connect('FULL');
  const is = await newIssue(full);
  const bad = [
    ['list_issues', { limit: 0 }],
    ['list_issues', { limit: 101 }],
    ['list_issues', { status: 'sleeping' }],
    ['list_issues', { unknown_field: true }],
    ['create_issue', {}],
    ['create_issue', { title: 'x', priority: 'whenever' }],
    ['get_issue', { issue_id: 42 }],
    ['update_issue', { issue_id: is.id, expected_version: 'one' }],
    ['dashboard_usage_daily', { from: 'yesterday' }],
    ['delete_issue', { issue_id: is.id, confirm: true, cascade: true }],
  ];
  for (const [tool, args] of bad) await call(full, tool, args, 'invalid_arguments');
  await call(full, 'no_such_tool', {}, 'unknown_tool');
});

test('destructive tools: confirm must be the JSON boolean true', async () => {
  const full = await connect('FULL');
  const is = await newIssue(full);
  const c = await newComment(full, is.id);
  const variants = [{}, { confirm: false }, { confirm: 'true' }, { confirm: 1 }, { confirm: null }];
  for (const v of variants) {
    for (const [tool, target] of [['delete_comment', { comment_id: c.id }], ['delete_issue', { issue_id: is.id }]]) {
      const body = await call(full, tool, { ...target, ...v }, 'destructive_flag_missing');
      assert.deepEqual({ error: body.error, code: body.code }, CONFIRM_MESSAGE, `${tool} ${JSON.stringify(v)}`);
    }
  }
  // Nothing was deleted by the refused calls.
  assert.equal((await ok(full, 'get_issue', { issue_id: is.id })).comment_count, 1);
  assert.deepEqual(await ok(full, 'delete_comment', { comment_id: c.id, confirm: true }), { deleted: true, comment_id: c.id });
  assert.deepEqual(await ok(full, 'delete_issue', { issue_id: is.id, confirm: true }), { deleted: true, issue_id: is.id });
});

test('checks run in the spec\'s order: scope, confirm, existence, permission', async () => {
  const full = await connect('FULL');
  const ro = await connect('READONLY');
  const viewer = await connect('VIEWER');
  const is = await newIssue(full);
  // No issues:write: the scope refusal wins over the missing confirm.
  await call(ro, 'delete_issue', { issue_id: is.id }, 'insufficient_scope');
  // A viewer has the scope but not the role: the missing confirm is reported first.
  await call(viewer, 'delete_issue', { issue_id: is.id }, 'destructive_flag_missing');
  await call(viewer, 'delete_issue', { issue_id: is.id, confirm: true }, 'permission_denied');
  // The scope and confirm hold and the issue is missing: not_found.
  await call(full, 'delete_issue', { issue_id: '550e8400-e29b-41d4-a716-446655440000', confirm: true }, 'not_found');
  await call(full, 'get_issue', { issue_id: 'AAC-999999' }, 'not_found');
  assert.equal((await ok(full, 'get_issue', { issue_id: is.id })).id, is.id);
});

test('scope matrix: each tool against a token holding each single scope', async () => {
  const full = await connect('FULL');
  const fx = { issue: await newIssue(full) };
  await newComment(full, fx.issue.id);
  fx.deleteIssue = await newIssue(full);
  fx.deleteComment = await newComment(full, fx.issue.id);
  for (const scope of ALL_SCOPES) {
    const conn = await connect(`scope:${scope}`);
    for (const tool of TOOL_ORDER) {
      const allowed = SPEC[tool].scopes.every((s) => s === scope);
      const args = validArgs(tool, fx, conn.label);
      await call(conn, tool, args, allowed ? 'ok' : 'insufficient_scope');
    }
  }
  // The one allowed delete of each kind went through.
  await call(full, 'get_issue', { issue_id: fx.deleteIssue.id }, 'not_found');
});

test('role matrix: viewer, member, admin, author and removed member on every tool', async () => {
  const full = await connect('FULL');
  const author = await connect('AUTHOR');
  const fx = { issue: await newIssue(full) };
  await newComment(full, fx.issue.id);

  // What each role may do with items someone else (dev) created.
  const writes = new Set(TOOL_ORDER.filter((t) => !SPEC[t].readOnly));
  const expectFor = {
    VIEWER: (t) => (writes.has(t) ? 'permission_denied' : 'ok'),
    MEMBER: (t) => (SPEC[t].destructive ? 'permission_denied' : 'ok'),
    ADMIN: () => 'ok',
    REMOVED: () => 'permission_denied',
  };
  for (const [label, want] of Object.entries(expectFor)) {
    const conn = await connect(label);
    fx.deleteIssue = await newIssue(full);
    fx.deleteComment = await newComment(full, fx.issue.id);
    for (const tool of TOOL_ORDER) {
      await call(conn, tool, validArgs(tool, fx, label), want(tool));
    }
  }

  // The author (a member) may delete what they created, and only that.
  const own = { issue: fx.issue, deleteIssue: await newIssue(author) };
  own.deleteComment = await newComment(author, fx.issue.id);
  for (const tool of TOOL_ORDER) {
    await call(author, tool, validArgs(tool, own, 'AUTHOR'), 'ok');
  }
  const others = { deleteIssue: await newIssue(full), deleteComment: await newComment(full, fx.issue.id) };
  await call(author, 'delete_issue', { issue_id: others.deleteIssue.id, confirm: true }, 'permission_denied');
  await call(author, 'delete_comment', { comment_id: others.deleteComment.id, confirm: true }, 'permission_denied');
});

test('idempotent tools return the same result when repeated', async () => {
  const full = await connect('FULL');
  const is = await newIssue(full);
  const c = await newComment(full, is.id);
  const twice = async (tool, args, normalize = (x) => x) => {
    const a = await ok(full, tool, args);
    const b = await ok(full, tool, args);
    assert.deepEqual(normalize(b), normalize(a), `${tool} repeated`);
    return a;
  };
  await twice('list_issues', {});
  await twice('get_issue', { issue_id: is.id });
  await twice('list_comments', { issue_id: is.id });
  // The dashboard counts its own calls; every other tool's counters hold still.
  await twice('dashboard_usage_daily', {}, (r) => r.days.filter((d) => d.tool !== 'dashboard_usage_daily'));
  const up = await twice('update_issue', { issue_id: is.id, priority: 'urgent', expected_version: 1 });
  assert.equal(up.version, 2, 'the repeat changed nothing');
  const as = await twice('assign_issue_to_agent', { issue_id: is.id, agent_id: AGENT });
  assert.equal(as.version, 3);
  assert.deepEqual(await twice('delete_comment', { comment_id: c.id, confirm: true }), { deleted: true, comment_id: c.id });
  assert.deepEqual(await twice('delete_issue', { issue_id: is.id, confirm: true }), { deleted: true, issue_id: is.id });
});

test('non-idempotent tools honour idempotency_key', async () => {
  const full = await connect('FULL');
  const key = `e2e-${Date.now()}`;
  const args = { title: 'Created once', idempotency_key: key };
  const first = await ok(full, 'create_issue', args);
  assert.deepEqual(await ok(full, 'create_issue', args, { replay: true }), first);
  await call(full, 'create_issue', { ...args, title: 'Something else' }, 'conflict');

  const cArgs = { issue_id: first.id, body: 'Once.', idempotency_key: key };
  const c1 = await ok(full, 'comment_issue', cArgs);
  assert.deepEqual(await ok(full, 'comment_issue', cArgs, { replay: true }), c1);
  assert.equal((await ok(full, 'get_issue', { issue_id: first.id })).comment_count, 1);

  const tArgs = { issue_id: first.id, idempotency_key: key };
  const r1 = await ok(full, 'trigger_autopilot', tArgs);
  assert.deepEqual(await ok(full, 'trigger_autopilot', tArgs, { replay: true }), r1);

  // Without a key every call is new.
  const a = await ok(full, 'create_issue', { title: 'Twice' });
  const b = await ok(full, 'create_issue', { title: 'Twice' });
  assert.notEqual(a.id, b.id);
});

test('another workspace\'s issue and comment are not_found', async () => {
  const full = await connect('FULL');
  const other = await connect('OTHER');
  const theirs = await ok(other, 'create_issue', { title: 'Private to the other workspace' });
  assert.match(theirs.key, /^OTH-\d+$/);
  const theirComment = await ok(other, 'comment_issue', { issue_id: theirs.id, body: 'private' });
  for (const id of [theirs.id, theirs.key]) {
    await call(full, 'get_issue', { issue_id: id }, 'not_found');
    await call(full, 'list_comments', { issue_id: id }, 'not_found');
    await call(full, 'update_issue', { issue_id: id, title: 'hijacked' }, 'not_found');
    await call(full, 'comment_issue', { issue_id: id, body: 'hi' }, 'not_found');
    await call(full, 'assign_issue_to_agent', { issue_id: id, agent_id: AGENT }, 'not_found');
    await call(full, 'trigger_autopilot', { issue_id: id }, 'not_found');
    await call(full, 'delete_issue', { issue_id: id, confirm: true }, 'not_found');
  }
  await call(full, 'delete_comment', { comment_id: theirComment.id, confirm: true }, 'not_found');
  const mine = await ok(full, 'list_issues', { limit: 100 });
  assert.ok(!mine.issues.some((x) => x.id === theirs.id), 'list_issues stays in the workspace');
  const still = await ok(other, 'get_issue', { issue_id: theirs.id });
  assert.equal(still.title, theirs.title);
  assert.equal(still.comment_count, 1);
  assert.equal(still.version, theirs.version);
});

test('a revoked token is refused with 401 and a challenge', async () => {
  expectations.push({ token: 'REVOKED', tool: '', outcome: 'denied', reason: 'invalid_token' });
  let err;
  try {
    await connect('REVOKED', { listTools: false });
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof StreamableHTTPError, `want HTTP 401, got ${err}`);
  assert.equal(err.code, 401);
});

// ---- run ------------------------------------------------------------------------------

const counts = await runTests();
for (const c of connections.values()) await c.client.close().catch(() => {});
writeFileSync(expectPath, JSON.stringify(expectations, null, 1));
finish(counts);

// The workspace policy approve, driven by the official TypeScript SDK v2 client
// (@modelcontextprotocol/client) at 2026-07-28 and by REST, with a person in
// Debian's chromium (playwright-core, test/oauth/browser.mjs) on aacmcp's
// approval page. Run by approve_tssdk_test.go with:
//
//   AACMCP_URL          the /mcp URL
//   AACMCP_TOKEN        a token of user dev (admin) with every scope
//   AACMCP_OTHER_USER   another member of the workspace (eve), who signs in too
//   AACMCP_SCREENSHOTS  when set, a directory where the pages the person sees are
//                       saved as PNG (`make screenshots`)
//
// Error codes are read from the results' error objects, never from message
// text; the link is read from the message, where a model would read it. Lines
// "AUDIT <want> <issue id>" tell the Go test which outcome each issue's last
// delete_issue record must have. It ends with "N passed, M failed".
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport, isInputRequiredResult } from '@modelcontextprotocol/client';
import { launchBrowser } from '../oauth/browser.mjs';
import { test, runTests, finish } from '../runner.mjs';

const url = new URL(process.env.AACMCP_URL);
const token = process.env.AACMCP_TOKEN;
const MODERN = '2026-07-28';
const browser = await launchBrowser();
const shots = process.env.AACMCP_SCREENSHOTS;
if (shots) mkdirSync(shots, { recursive: true });

// shot saves what the person sees as <name>.png, for the docs.
async function shot(page, name) {
  if (shots && name) await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

async function connect({ urlMode = false, onURL = null } = {}) {
  const client = new Client(
    { name: 'aacmcp-tssdk-v2-approve', version: '1.0.0' },
    {
      capabilities: urlMode ? { elicitation: { url: {} } } : {},
      versionNegotiation: { mode: { pin: MODERN } },
    },
  );
  if (urlMode) client.setRequestHandler('elicitation/create', async (req) => onURL(req.params));
  await client.connect(new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  }));
  return client;
}

function errorOf(res) {
  assert.equal(res.isError, true, `want an error result, got ${JSON.stringify(res)}`);
  return JSON.parse(res.content[0].text);
}

async function create(client, title) {
  const res = await client.callTool({ name: 'create_issue', arguments: { title } });
  assert.notEqual(res.isError, true, JSON.stringify(res));
  return res.structuredContent;
}

async function exists(client, issue) {
  const res = await client.callTool({ name: 'get_issue', arguments: { issue_id: issue.id } });
  if (!res.isError) return true;
  assert.equal(errorOf(res).code, 'not_found');
  return false;
}

const del = (issue) => ({ name: 'delete_issue', arguments: { issue_id: issue.id, confirm: true } });

// linkIn finds the approval link in a refusal's text and checks its origin.
function linkIn(message) {
  const m = /(https?:\/\/\S+\/oauth\/approve\?\S+)/.exec(message);
  assert.ok(m, `no approval link in ${JSON.stringify(message)}`);
  const link = new URL(m[1]);
  assert.equal(link.origin, url.origin, 'the link is not of the server\'s own origin');
  return link;
}

// approve is the person: opens link, signs in with the dev sign-in as user, and
// on the approval page types the key and presses Approve (or Deny). It returns
// the text of the page it ends on.
// shots names the screenshots of the steps: {signin, page, done}.
async function person(link, { user = 'dev', key = null, deny = false, shots: names = {} } = {}) {
  const page = await browser.context.newPage();
  try {
    await page.goto(String(link), { waitUntil: 'load' });
    const signIn = page.getByRole('button', { name: user, exact: true });
    if (await signIn.count() > 0) {
      await shot(page, names.signin);
      const loaded = page.waitForEvent('load');
      await signIn.click();
      await loaded;
    }
    const approveBtn = page.getByRole('button', { name: 'Approve', exact: true });
    if (await approveBtn.count() === 0) {
      await shot(page, names.done);
      return await page.locator('body').innerText();
    }
    if (key) {
      const body = await page.locator('body').innerText();
      assert.ok(body.includes(key), `the page does not name ${key}: ${body}`);
      await page.getByLabel(`Type ${key} to approve`).fill(key);
    }
    await shot(page, names.page);
    const loaded = page.waitForEvent('load');
    await (deny ? page.getByRole('button', { name: 'Deny', exact: true }) : approveBtn).click();
    await loaded;
    await shot(page, names.done);
    return await page.locator('body').innerText();
  } finally {
    await page.close();
  }
}

const audit = (want, issue) => console.log(`AUDIT ${want} ${issue.id}`);

async function rest(tool, args) {
  const res = await fetch(new URL(`/tools/${tool}`, url), {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(args),
  });
  return { status: res.status, body: await res.json() };
}

test('URL elicitation: the SDK hands the link to the person, who approves in the browser; the retry deletes', async () => {
  const seen = [];
  const client = await connect({
    urlMode: true,
    onURL: async (params) => {
      seen.push(params);
      assert.equal(params.mode, 'url');
      const text = await person(linkIn(params.url), { key: issue.key });
      assert.match(text, /Approved/);
      return { action: 'accept' };
    },
  });
  const issue = await create(client, 'Approve me through the SDK');
  const res = await client.callTool(del(issue));
  assert.notEqual(res.isError, true, JSON.stringify(res));
  assert.deepEqual(res.structuredContent, { deleted: true, issue_id: issue.id });
  assert.equal(seen.length, 1);
  assert.equal(await exists(client, issue), false);
  audit('success', issue);
});

test('URL elicitation: a retry with a spent approval\'s requestState is refused', async () => {
  let state = null;
  const client = await connect({ urlMode: true, onURL: async () => ({ action: 'accept' }) });
  const issue = await create(client, 'Replay my approval');
  const first = await client.callTool(del(issue), { allowInputRequired: true });
  assert.ok(isInputRequiredResult(first), JSON.stringify(first));
  state = first.requestState;
  const link = linkIn(first.inputRequests.confirm.params.url);
  assert.match(await person(link, { key: issue.key }), /Approved/);
  const ok = await client.callTool({ ...del(issue), requestState: state, inputResponses: { confirm: { action: 'accept' } } }, { allowInputRequired: true });
  assert.notEqual(ok.isError, true, JSON.stringify(ok));
  const replay = await client.callTool({ ...del(issue), requestState: state, inputResponses: { confirm: { action: 'accept' } } }, { allowInputRequired: true });
  assert.equal(errorOf(replay).code, 'confirmation_invalid');
  audit('confirmation_invalid', issue);
});

test('no elicitation over MCP: the refusal carries the link; after approval the same call deletes', async () => {
  const client = await connect();
  const issue = await create(client, 'Approve me from the chat');
  const refused = errorOf(await client.callTool(del(issue)));
  assert.equal(refused.code, 'human_approval_required');
  const link = linkIn(refused.error);
  assert.match(await person(link, { key: issue.key, shots: { signin: 'approve-signin', page: 'approve-page', done: 'approve-approved' } }), /Approved/);
  const res = await client.callTool(del(issue));
  assert.notEqual(res.isError, true, JSON.stringify(res));
  assert.equal(await exists(client, issue), false);
  audit('success', issue);
});

test('REST: 403 human_approval_required with the link; after approval the same call deletes', async () => {
  const client = await connect();
  const issue = await create(client, 'Approve me over REST');
  const refused = await rest('delete_issue', { issue_id: issue.id, confirm: true });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.code, 'human_approval_required');
  assert.match(await person(linkIn(refused.body.error), { key: issue.key }), /Approved/);
  const ok = await rest('delete_issue', { issue_id: issue.id, confirm: true });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.equal(await exists(client, issue), false);
  audit('success', issue);
});

test('another member who signs in sees that it is not theirs, and the delete stays refused', async () => {
  const client = await connect();
  const issue = await create(client, 'Not yours to approve');
  const link = linkIn(errorOf(await client.callTool(del(issue))).error);
  const text = await person(link, { user: process.env.AACMCP_OTHER_USER, shots: { done: 'approve-not-yours' } });
  assert.match(text, /This approval is not yours/);
  assert.equal(errorOf(await client.callTool(del(issue))).code, 'human_approval_required');
  assert.equal(await exists(client, issue), true);
  audit('human_approval_required', issue);
});

test('Deny: the same call is declined, and nothing is deleted', async () => {
  const client = await connect();
  const issue = await create(client, 'Deny me');
  const link = linkIn(errorOf(await client.callTool(del(issue))).error);
  assert.match(await person(link, { deny: true, shots: { done: 'approve-denied' } }), /Denied/);
  assert.equal(errorOf(await client.callTool(del(issue))).code, 'confirmation_declined');
  assert.equal(await exists(client, issue), true);
  audit('confirmation_declined', issue);
});

test('a forged or edited link is refused by the page', async () => {
  const client = await connect();
  const issue = await create(client, 'Forge my link');
  const link = linkIn(errorOf(await client.callTool(del(issue))).error);
  const tok = link.searchParams.get('approval');
  const i = Math.floor(tok.length / 2);
  const edited = new URL(link);
  edited.searchParams.set('approval', tok.slice(0, i) + (tok[i] === 'A' ? 'B' : 'A') + tok.slice(i + 1));
  assert.match(await person(edited), /not valid/);
  const forged = new URL(link);
  forged.searchParams.set('approval', 'AQhkZWFkYmVlZg');
  assert.match(await person(forged), /not valid/);
  assert.equal(errorOf(await client.callTool(del(issue))).code, 'human_approval_required');
  audit('human_approval_required', issue);
});

test('an approval does not cover another issue', async () => {
  const client = await connect();
  const a = await create(client, 'Approved one');
  const b = await create(client, 'Other one');
  const link = linkIn(errorOf(await client.callTool(del(a))).error);
  assert.match(await person(link, { key: a.key }), /Approved/);
  assert.equal(errorOf(await client.callTool(del(b))).code, 'human_approval_required');
  assert.equal(await exists(client, b), true);
  audit('human_approval_required', b);
});

const result = await runTests();
await browser.close();
finish(result);

// Human confirmation through MCP multi round-trip requests, driven by the official
// TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in
// test/package-lock.json) at protocol 2026-07-28 with an elicitation handler, against
// a workspace whose destructive-confirmation policy is elicit or require. Run by
// confirm_tssdk_test.go in three phases, with:
//
//   AACMCP_URL           the /mcp URL
//   AACMCP_TOKEN         a token of user dev (admin) with every scope
//   AACMCP_TOKEN2        another token of dev
//   AACMCP_OTHER_TOKEN   a token of user eve (admin of the same workspace)
//   AACMCP_PHASE         elicit | require | expired
//   AACMCP_STATE_FILE    where the elicit phase leaves a state for the expired phase
//
// Error codes are read from the results' error objects, never from message text.
// Lines "AUDIT <want> <issue id>" tell the Go test which audit outcome each issue
// must end with. It ends with "N passed, M failed".
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport, isInputRequiredResult } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { test, runTests, finish } from '../runner.mjs';

const url = new URL(process.env.AACMCP_URL);
const phase = process.env.AACMCP_PHASE;
const MODERN = '2026-07-28';

// person is whoever answers the form in the client: each test sets how.
let person = null;
let asked = [];

// connect opens a v2 client pinned to 2026-07-28. With form elicitation declared
// the SDK fulfils input_required results through the handler below, then retries.
async function connect(token, { elicit = true } = {}) {
  const client = new Client(
    { name: 'aacmcp-tssdk-v2-confirm', version: '1.0.0' },
    {
      capabilities: elicit ? { elicitation: { form: {} } } : {},
      versionNegotiation: { mode: { pin: MODERN } },
    },
  );
  if (elicit) {
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params);
      return person(req.params);
    });
  }
  await client.connect(new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  }));
  return client;
}

// typed answers the form by typing value into its one required field.
const typed = (value) => (params) => {
  const [field] = params.requestedSchema.required;
  return { action: 'accept', content: { [field]: value } };
};

function errorCode(res) {
  assert.equal(res.isError, true, `want an error result, got ${JSON.stringify(res)}`);
  return JSON.parse(res.content[0].text).code;
}

async function create(client, title) {
  const res = await client.callTool({ name: 'create_issue', arguments: { title } });
  assert.notEqual(res.isError, true, JSON.stringify(res));
  return res.structuredContent;
}

async function exists(client, issue) {
  const res = await client.callTool({ name: 'get_issue', arguments: { issue_id: issue.id } });
  if (!res.isError) return true;
  assert.equal(errorCode(res), 'not_found');
  return false;
}

const del = (issue) => ({ name: 'delete_issue', arguments: { issue_id: issue.id, confirm: true } });

// ask makes the first call in the SDK's manual mode and returns the
// input_required result: the requestState the server sealed and its form.
async function ask(client, issue) {
  const res = await client.callTool(del(issue), { allowInputRequired: true });
  assert.ok(isInputRequiredResult(res), `want input_required, got ${JSON.stringify(res)}`);
  assert.equal(typeof res.requestState, 'string');
  const form = res.inputRequests?.confirm;
  assert.equal(form?.method, 'elicitation/create');
  return res;
}

// retry sends the retry by hand: the call, the requestState and the answer.
function retry(client, issue, requestState, value) {
  return client.callTool({
    ...del(issue),
    requestState,
    inputResponses: { confirm: { action: 'accept', content: { confirmation: value } } },
  }, { allowInputRequired: true });
}

// tamper flips one character inside the sealed part of a requestState.
function tamper(state) {
  const i = Math.floor(state.length * 2 / 3);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const c = alphabet[(alphabet.indexOf(state[i]) + 1) % alphabet.length];
  return state.slice(0, i) + c + state.slice(i + 1);
}

const audit = (want, issue) => console.log(`AUDIT ${want} ${issue.id}`);

let dev;

if (phase === 'elicit') {
  test('accepted: the SDK asks through its elicitation handler and the delete is performed', async () => {
    dev = await connect(process.env.AACMCP_TOKEN);
    const issue = await create(dev, 'Login fails on Safari');
    asked = [];
    person = typed(issue.key);
    const res = await dev.callTool(del(issue));
    assert.notEqual(res.isError, true, JSON.stringify(res));
    assert.deepEqual(res.structuredContent, { deleted: true, issue_id: issue.id });
    assert.equal(asked.length, 1, 'asked once');
    assert.equal(asked[0].mode, 'form');
    assert.ok(asked[0].message.includes(issue.key) && asked[0].message.includes('Login fails on Safari'), asked[0].message);
    assert.equal(await exists(dev, issue), false, 'the issue is gone');
    audit('success', issue);
  });

  for (const [name, answer, reason] of [
    ['declined', () => ({ action: 'decline' }), 'confirmation_declined'],
    ['cancelled', () => ({ action: 'cancel' }), 'confirmation_declined'],
  ]) {
    test(`${name}: nothing is deleted (${reason})`, async () => {
      const issue = await create(dev, `To be ${name}`);
      person = answer;
      const res = await dev.callTool(del(issue));
      assert.equal(errorCode(res), reason);
      assert.equal(await exists(dev, issue), true, 'the issue is still there');
      audit(reason, issue);
    });
  }

  test('a wrong typed key: nothing is deleted (confirmation_declined)', async () => {
    const issue = await create(dev, 'Typed wrong');
    const other = await create(dev, 'Another issue');
    person = typed(other.key);
    const res = await dev.callTool(del(issue));
    assert.equal(errorCode(res), 'confirmation_declined');
    assert.equal(await exists(dev, issue), true);
    audit('confirmation_declined', issue);
  });

  test('a tampered requestState is confirmation_invalid; the genuine one still deletes', async () => {
    const issue = await create(dev, 'Tampered');
    const { requestState } = await ask(dev, issue);
    const bad = tamper(requestState);
    assert.notEqual(bad, requestState);
    assert.equal(errorCode(await retry(dev, issue, bad, issue.key)), 'confirmation_invalid');
    assert.equal(await exists(dev, issue), true);
    const ok = await retry(dev, issue, requestState, issue.key);
    assert.notEqual(ok.isError, true, JSON.stringify(ok));
    assert.equal(await exists(dev, issue), false);
  });

  test('a requestState reused for another issue_id is confirmation_invalid', async () => {
    const a = await create(dev, 'Asked about');
    const b = await create(dev, 'Not asked about');
    const { requestState } = await ask(dev, a);
    assert.equal(errorCode(await retry(dev, b, requestState, b.key)), 'confirmation_invalid');
    assert.equal(errorCode(await retry(dev, b, requestState, a.key)), 'confirmation_invalid');
    assert.equal(await exists(dev, b), true);
    assert.equal(await exists(dev, a), true);
    audit('confirmation_invalid', b);
  });

  test("a requestState reused by another user's token, or another token of the same user, is confirmation_invalid", async () => {
    const issue = await create(dev, 'Asked of dev');
    const { requestState } = await ask(dev, issue);
    for (const token of [process.env.AACMCP_OTHER_TOKEN, process.env.AACMCP_TOKEN2]) {
      const other = await connect(token);
      try {
        assert.equal(errorCode(await retry(other, issue, requestState, issue.key)), 'confirmation_invalid');
      } finally {
        await other.close();
      }
    }
    assert.equal(await exists(dev, issue), true);
    audit('confirmation_invalid', issue);
  });

  test('a replayed retry is refused and deletes nothing more; concurrent retries delete once', async () => {
    const issue = await create(dev, 'Replayed');
    const { requestState } = await ask(dev, issue);
    const first = await retry(dev, issue, requestState, issue.key);
    assert.notEqual(first.isError, true, JSON.stringify(first));
    // The item is gone: the server opens the state before it reads the item, so
    // the replay is told what it is.
    assert.equal(errorCode(await retry(dev, issue, requestState, issue.key)), 'confirmation_invalid');

    const raced = await create(dev, 'Raced');
    const ir = await ask(dev, raced);
    const results = await Promise.all([0, 1, 2].map(() => retry(dev, raced, ir.requestState, raced.key)));
    const done = results.filter((r) => !r.isError);
    assert.equal(done.length, 1, `exactly one retry deletes: ${JSON.stringify(results)}`);
    for (const r of results.filter((r) => r.isError)) {
      assert.equal(errorCode(r), 'confirmation_invalid', JSON.stringify(r));
    }
    assert.equal(await exists(dev, raced), false);
  });

  test('a state left to expire (the expired phase retries it after the restart)', async () => {
    const issue = await create(dev, 'Left to expire');
    const { requestState } = await ask(dev, issue);
    writeFileSync(process.env.AACMCP_STATE_FILE, JSON.stringify({ issue, requestState }));
    audit('confirmation_invalid', issue);
  });
}

if (phase === 'require') {
  test('require: a 2026-07-28 client without form elicitation is refused (human_confirmation_required)', async () => {
    const client = await connect(process.env.AACMCP_TOKEN, { elicit: false });
    dev = await connect(process.env.AACMCP_TOKEN);
    try {
      const issue = await create(dev, 'Needs a person');
      assert.equal(errorCode(await client.callTool(del(issue))), 'human_confirmation_required');
      assert.equal(await exists(dev, issue), true);
      audit('human_confirmation_required', issue);
    } finally {
      await client.close();
    }
  });

  test('require: a 2025-11-25 client (SDK v1) is refused (human_confirmation_required)', async () => {
    const client = new ClientV1({ name: 'aacmcp-tssdk-v1-confirm', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    await client.connect(new TransportV1(url, { requestInit: { headers: { Authorization: `Bearer ${process.env.AACMCP_TOKEN}` } } }));
    try {
      const issue = await create(dev, 'Needs a person too');
      assert.equal(errorCode(await client.callTool(del(issue))), 'human_confirmation_required');
      assert.equal(await exists(dev, issue), true);
    } finally {
      await client.close();
    }
  });

  test('require: the client that can elicit is asked and deletes', async () => {
    const issue = await create(dev, 'Confirmed under require');
    asked = [];
    person = typed(issue.key);
    const res = await dev.callTool(del(issue));
    assert.notEqual(res.isError, true, JSON.stringify(res));
    assert.equal(asked.length, 1);
    assert.equal(await exists(dev, issue), false);
    audit('success', issue);
  });
}

if (phase === 'expired') {
  test('an expired requestState is confirmation_invalid, and nothing is deleted', async () => {
    dev = await connect(process.env.AACMCP_TOKEN);
    const { issue, requestState } = JSON.parse(readFileSync(process.env.AACMCP_STATE_FILE, 'utf8'));
    assert.equal(errorCode(await retry(dev, issue, requestState, issue.key)), 'confirmation_invalid');
    assert.equal(await exists(dev, issue), true);
  });
}

const counts = await runTests();
await dev?.close();
finish(counts);

// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// test/package-lock.json) against one aacmcp endpoint: the five calls every client
// test makes (list with annotations, a read, a write, a destructive call without
// confirm and with it), then the scope challenge through the SDK's own OAuth
// handling. Run by clients_test.go with:
//
//   AACMCP_URL          the /mcp URL
//   AACMCP_TOKEN        a token with every scope
//   AACMCP_READ_TOKEN   a token with issues:read only
//   AACMCP_STEPUP_TOKEN a token with issues:read and issues:write (what the
//                       authorization server would grant after the step-up)
//   AACMCP_TOOLS        JSON: the catalog's tools, annotations and scopes
//
// It prints one line per test and ends with "N passed, M failed".
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { test, runTests, finish } from '../runner.mjs';

const url = new URL(process.env.AACMCP_URL);
const catalog = JSON.parse(process.env.AACMCP_TOOLS);
const CONFIRM = { error: 'confirm: true required for destructive operations', code: 'destructive_flag_missing' };


async function connect(token) {
  const client = new Client({ name: 'aacmcp-tssdk-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

// errorBody parses the error object of an isError tool result.
function errorBody(res) {
  assert.equal(res.isError, true, `want isError, got ${JSON.stringify(res)}`);
  assert.equal(res.structuredContent, undefined, 'error results carry no structuredContent');
  return JSON.parse(res.content[0].text);
}

test('list, read, write, denied and confirmed destructive call', async () => {
  const client = await connect(process.env.AACMCP_TOKEN);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), catalog.map((t) => t.name), 'every tool, in catalog order');
    for (const want of catalog) {
      const got = tools.find((t) => t.name === want.name);
      assert.deepEqual(
        {
          readOnlyHint: got.annotations?.readOnlyHint,
          destructiveHint: got.annotations?.destructiveHint,
          idempotentHint: got.annotations?.idempotentHint,
          openWorldHint: got.annotations?.openWorldHint,
        },
        want.annotations,
        `annotations of ${want.name}`,
      );
      assert.deepEqual(got._meta?.['aacmcp/scopes'], want.scopes, `scopes of ${want.name}`);
      assert.equal(got._meta?.['aacmcp/requires_confirm'], want.annotations.destructiveHint);
    }

    const page = await client.callTool({ name: 'list_issues', arguments: { limit: 5 } });
    assert.notEqual(page.isError, true, JSON.stringify(page));
    assert.ok(Array.isArray(page.structuredContent.issues), 'list_issues returns issues');

    const created = await client.callTool({ name: 'create_issue', arguments: { title: 'Filed by the TypeScript SDK client' } });
    assert.notEqual(created.isError, true, JSON.stringify(created));
    const issue = created.structuredContent;
    assert.match(issue.key, /^[A-Z]+-\d+$/);

    const denied = await client.callTool({ name: 'delete_issue', arguments: { issue_id: issue.id } });
    // The token may read and delete the issue: the refusal previews it.
    assert.deepEqual(errorBody(denied), { ...CONFIRM, preview: { kind: 'issue', id: issue.id, key: issue.key, title: issue.title, comment_count: 0 } });
    const still = await client.callTool({ name: 'get_issue', arguments: { issue_id: issue.key } });
    assert.equal(still.structuredContent?.id, issue.id, 'the refused delete changed nothing');

    const deleted = await client.callTool({ name: 'delete_issue', arguments: { issue_id: issue.id, confirm: true } });
    assert.notEqual(deleted.isError, true, JSON.stringify(deleted));
    assert.deepEqual(deleted.structuredContent, { deleted: true, issue_id: issue.id });

    const gone = await client.callTool({ name: 'get_issue', arguments: { issue_id: issue.id } });
    assert.equal(errorBody(gone).code, 'not_found');
  } finally {
    await client.close();
  }
});

test('the 403 challenge parses with the SDK helper: insufficient_scope and every scope the call needs', async () => {
  for (const tool of catalog.filter((t) => !t.scopes.every((s) => s === 'issues:read'))) {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${process.env.AACMCP_READ_TOKEN}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool.name, arguments: {} } }),
    });
    assert.equal(res.status, 403, `${tool.name} with issues:read only`);
    const { error, scope, resourceMetadataUrl } = extractWWWAuthenticateParams(res);
    assert.equal(error, 'insufficient_scope');
    assert.deepEqual(scope.split(' '), tool.scopes, `scope of ${tool.name}`);
    assert.equal(resourceMetadataUrl?.href, new URL('/.well-known/oauth-protected-resource/mcp', url).href);
    const body = await res.json();
    assert.deepEqual(body.error.data.required_scopes, tool.scopes);
  }
});

// A minimal OAuth client provider: tokens() hands out whatever the "authorization
// server" granted last; redirectToAuthorization records where the SDK would send the
// user instead of opening a browser.
class StepUpProvider {
  constructor(token) {
    this.current = { access_token: token, token_type: 'Bearer' };
    this.redirects = [];
  }
  get redirectUrl() { return 'http://127.0.0.1:1/callback'; }
  get clientMetadata() {
    return { client_name: 'aacmcp-tssdk-test', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code'], response_types: ['code'] };
  }
  clientInformation() { return { client_id: 'aacmcp-tssdk-test' }; }
  saveClientInformation() {}
  tokens() { return this.current; }
  saveTokens(t) { this.current = t; }
  redirectToAuthorization(u) { this.redirects.push(new URL(u)); }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

test('the SDK steps up on 403 insufficient_scope: it asks for exactly the challenged scopes', async () => {
  const provider = new StepUpProvider(process.env.AACMCP_READ_TOKEN);
  const client = new Client({ name: 'aacmcp-tssdk-stepup', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  try {
    const ok = await client.callTool({ name: 'list_issues', arguments: { limit: 1 } });
    assert.notEqual(ok.isError, true, 'the read-only token reads');

    const args = { title: 'Filed after a scope step-up' };
    await assert.rejects(client.callTool({ name: 'create_issue', arguments: args }), UnauthorizedError,
      'without an authorization server at hand the SDK must stop at the redirect');
    assert.equal(provider.redirects.length, 1, 'one authorization request');
    const auth = provider.redirects[0];
    assert.equal(auth.searchParams.get('scope'), 'issues:write', 'the scope of the challenge, verbatim');
    assert.equal(auth.searchParams.get('resource'), url.href, 'the resource is the /mcp endpoint (RFC 8707)');
    assert.equal(auth.searchParams.get('client_id'), 'aacmcp-tssdk-test');
    assert.equal(auth.searchParams.get('code_challenge_method'), 'S256');

    // The user consents; the authorization server issues a token with the scopes.
    provider.current = { access_token: process.env.AACMCP_STEPUP_TOKEN, token_type: 'Bearer' };
    const created = await client.callTool({ name: 'create_issue', arguments: args });
    assert.notEqual(created.isError, true, JSON.stringify(created));
    assert.equal(created.structuredContent.title, args.title);
    const cleanup = await client.callTool({ name: 'delete_issue', arguments: { issue_id: created.structuredContent.id, confirm: true } });
    assert.notEqual(cleanup.isError, true, JSON.stringify(cleanup));
  } finally {
    await client.close();
  }
});

const counts = await runTests();
finish(counts);

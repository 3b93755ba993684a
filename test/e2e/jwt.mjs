// The official TypeScript SDK v2 client (@modelcontextprotocol/client) with JWT
// access tokens of an external authorization server ("bring your own authorization
// server"), through the front door of the deployed-like stack.
//
// Input (environment):
//   AACMCP_URL          the /mcp endpoint (the distribution's root + /mcp)
//   AACMCP_JWT_ISSUER   the external issuer the resource metadata must name
//   AACMCP_E2E_TOKENS   JSON object: GOOD -> a JWT with issues:read and issues:write;
//                       WRONG_AUD -> the same, for another resource
//   AACMCP_E2E_EXPECT   file to write the (empty) expectations to
//   AACMCP_TOOLS        JSON: the catalog's tools and scopes
//
// Output: one line per failed check and "N passed, N failed"; exit 1 on failure.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import {
  Client,
  SdkHttpError,
  StreamableHTTPClientTransport,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from '@modelcontextprotocol/client';
import { test, runTests, finish } from '../runner.mjs';

const url = new URL(process.env.AACMCP_URL);
const issuer = process.env.AACMCP_JWT_ISSUER;
const tokens = JSON.parse(process.env.AACMCP_E2E_TOKENS);
const metadataURL = url.href.replace(/\/mcp$/, '') + '/.well-known/oauth-protected-resource/mcp';
const catalog = JSON.parse(process.env.AACMCP_TOOLS);
const granted = ['issues:read', 'issues:write'];
writeFileSync(process.env.AACMCP_E2E_EXPECT, '[]');

function connect(token) {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'aacmcp-e2e-jwt', version: '1.0.0' });
  return client.connect(transport).then(() => client);
}

test('the resource metadata at the distribution root names the external issuer', async () => {
  const md = await discoverOAuthProtectedResourceMetadata(url);
  assert.equal(md.resource, url.href);
  assert.ok(md.authorization_servers.includes(issuer), `authorization_servers ${md.authorization_servers}`);
});

test('a JWT of the external issuer lists and calls tools', async () => {
  const client = await connect(tokens.GOOD);
  try {
    const { tools } = await client.listTools();
    const want = catalog.filter((t) => t.scopes.every((s) => granted.includes(s))).map((t) => t.name);
    assert.deepEqual(tools.map((t) => t.name), want, 'the tools the scope claim unlocks');
    assert.ok(want.includes('create_issue') && want.length < catalog.length);
    const page = await client.callTool({ name: 'list_issues', arguments: { limit: 2 } });
    assert.notEqual(page.isError, true, JSON.stringify(page));
    assert.ok(Array.isArray(page.structuredContent.issues));
    const created = await client.callTool({ name: 'create_issue', arguments: { title: 'Filed with an external JWT' } });
    assert.notEqual(created.isError, true, JSON.stringify(created));
    assert.equal(created.structuredContent.title, 'Filed with an external JWT');
  } finally {
    await client.close();
  }
});

test('a JWT for another audience gets the 401 challenge with error="invalid_token"', async () => {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${tokens.WRONG_AUD}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  assert.equal(res.status, 401);
  const ch = extractWWWAuthenticateParams(res);
  assert.equal(ch.error, 'invalid_token');
  assert.equal(ch.resourceMetadataUrl?.href, metadataURL);
  // The SDK client refuses to go on with it (no OAuth provider to get another).
  await assert.rejects(connect(tokens.WRONG_AUD), (e) => e instanceof SdkHttpError && e.status === 401);
});

finish(await runTests());

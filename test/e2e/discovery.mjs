// OAuth discovery and the step-up challenge of a deployed-like URL, done by the
// official MCP TypeScript SDK's own functions (the ones its client and mcp-remote
// run), against `aacmcp gateway --stage prod`.
//
// Input (environment):
//   AACMCP_URL           the /mcp endpoint, e.g. http://127.0.0.1:8081/prod/mcp
//   AACMCP_E2E_TOKENS    JSON object: VIEWER -> a bearer secret holding issues:read only
//   AACMCP_E2E_EXPECT    file to write the (empty) expectations to
//   AACMCP_E2E_STEP_UP   "1": the 403 challenge must be readable (front door);
//                        "0": it must not be (bare API Gateway)
//   AACMCP_E2E_STAGED    "1": the URL has a stage path (the default execute-api URL);
//                        "0": served at the root (a custom domain)
//
// Output: one line per failed check and "N passed, N failed"; exit 1 on failure.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { test, runTests, finish } from '../runner.mjs';

const url = process.env.AACMCP_URL;
const tokens = JSON.parse(process.env.AACMCP_E2E_TOKENS);
const stepUp = process.env.AACMCP_E2E_STEP_UP === '1';
const staged = process.env.AACMCP_E2E_STAGED === '1';
const issuer = url.replace(/\/mcp$/, '');
writeFileSync(process.env.AACMCP_E2E_EXPECT, '[]');

const post = (body, token) => fetch(url, {
  method: 'POST',
  headers: {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'Mcp-Protocol-Version': '2025-11-25',
    ...(token ? { Authorization: `Bearer ${token}` } : {}),
  },
  body: JSON.stringify(body),
});

let resourceMetadataUrl;

test('401 without a token names the resource metadata under the stage', async () => {
  const res = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  assert.equal(res.status, 401);
  const p = extractWWWAuthenticateParams(res);
  assert.ok(p.resourceMetadataUrl, 'no resource_metadata in WWW-Authenticate');
  assert.equal(p.resourceMetadataUrl.href, `${issuer}/.well-known/oauth-protected-resource/mcp`);
  assert.equal(p.error, undefined, 'no error code without a token (RFC 6750 section 3.1)');
  resourceMetadataUrl = p.resourceMetadataUrl;
});

test('the SDK finds the resource metadata from the challenge', async () => {
  const md = await discoverOAuthProtectedResourceMetadata(url, { resourceMetadataUrl });
  assert.equal(md.resource, url);
  assert.deepEqual(md.authorization_servers, [issuer]);
});

if (staged) {
  // Path insertion (RFC 8414) lands outside the stage; the SDK's last candidate,
  // <issuer>/.well-known/openid-configuration, is answered with the OAuth metadata,
  // which the SDK parses as OpenID provider metadata and refuses (no jwks_uri, no
  // subject_types_supported: this server issues no ID tokens). Discovery stops here.
  test('on a stage path the SDK cannot get the authorization server metadata', async () => {
    await assert.rejects(discoverAuthorizationServerMetadata(issuer), (e) => e?.name === 'ZodError' || /jwks_uri/.test(String(e)));
  });
} else {
  test('at the root the SDK discovers the authorization server', async () => {
    const md = await discoverAuthorizationServerMetadata(issuer);
    assert.equal(md.issuer, issuer);
    assert.equal(md.token_endpoint, `${issuer}/oauth/token`);
    assert.ok(md.code_challenge_methods_supported.includes('S256'));
  });
}

if (staged) test('the host root is outside the stage (403), as on execute-api', async () => {
  const u = new URL(url);
  for (const p of [`/.well-known/oauth-authorization-server${u.pathname.replace(/\/mcp$/, '')}`,
    `/.well-known/oauth-protected-resource${u.pathname}`]) {
    const res = await fetch(new URL(p, u.origin));
    assert.equal(res.status, 403, p);
  }
});

test(stepUp ? 'a read-only token sees the 403 step-up challenge'
  : 'a read-only token gets a 403 whose challenge the SDK cannot read (bare API Gateway)', async () => {
  const res = await post({
    jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name: 'create_issue', arguments: { title: 'needs issues:write' } },
  }, tokens.VIEWER);
  assert.equal(res.status, 403);
  const p = extractWWWAuthenticateParams(res);
  if (stepUp) {
    assert.equal(p.error, 'insufficient_scope');
    assert.equal(p.scope, 'issues:write');
    assert.equal(p.resourceMetadataUrl?.href, `${issuer}/.well-known/oauth-protected-resource/mcp`);
  } else {
    assert.deepEqual(p, {});
    assert.match(res.headers.get('x-amzn-remapped-www-authenticate') ?? '', /insufficient_scope/);
  }
});

finish(await runTests());

// The official TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in
// test/package-lock.json) through aacmcp's OAuth authorization server, with the
// SDK's own OAuth machinery (OAuthClientProvider, auth(), the transport's 401 and
// 403 handling, finishAuth) and a real browser for the person's part. Run by
// tssdk_test.go with:
//
//   AACMCP_URL                 the /mcp URL (the protected resource)
//   AACMCP_CLIENT_METADATA_URL the client id metadata document (CIMD path); unset:
//                              the SDK registers dynamically (DCR path)
//   AACMCP_REDIRECT_FD/_URL    the redirect listener the Go test made
//   AACMCP_ANSWER              JSON: how the person signs in ({"user": "dev"} or
//                              {"login": {"username", "password"}})
//   AACMCP_STEPS               comma-separated, in order: authorize (first consent
//                              grants issues:read only), authorize-all (first
//                              consent as offered), stepup, refresh, expiry,
//                              revoke
//   AACMCP_TOOLS               JSON: the catalog's tools and scopes
//   AACMCP_SCOPES              JSON: every scope (auth.AllScopes)
//   AACMCP_RESULT_FILE         where to write what the Go test checks afterwards
//
// It prints one line per step and ends with "N passed, M failed".
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  auth,
  discoverAuthorizationServerMetadata,
  extractWWWAuthenticateParams,
} from '@modelcontextprotocol/client';
import { test, runTests, finish } from '../runner.mjs';
import { authorize, launchBrowser, redirectListener } from './browser.mjs';

const url = new URL(process.env.AACMCP_URL);
const cimd = process.env.AACMCP_CLIENT_METADATA_URL || undefined;
const answer = JSON.parse(process.env.AACMCP_ANSWER);
const steps = process.env.AACMCP_STEPS.split(',');
const catalog = JSON.parse(process.env.AACMCP_TOOLS);
const allScopes = JSON.parse(process.env.AACMCP_SCOPES);
const result = {};

const redirect = redirectListener();
const browser = await launchBrowser();

// toolsFor is the catalog's tools a token holding scopes may use, in catalog order.
const toolsFor = (scopes) => catalog.filter((t) => t.scopes.every((s) => scopes.includes(s))).map((t) => t.name);
const scopesOf = (tokens) => (tokens?.scope ?? '').split(' ').filter(Boolean).sort();

// BrowserProvider is an OAuthClientProvider whose redirectToAuthorization sends
// the browser to the authorization server and waits for the redirect back, as a
// desktop client with a loopback redirect does. What the person does on the pages
// is `this.answer`; null means nobody is there to answer (the redirect is recorded
// and nothing more happens).
class BrowserProvider {
  constructor() {
    this.clientMetadataUrl = cimd;
    this.answer = null;
    this.authorizations = []; // every authorization URL the SDK asked for
    this.consents = []; // what every consent page offered
    this.saved = []; // every token set saveTokens received
    this.callback = null; // the query of the last redirect back
    this._tokens = undefined;
    this._client = undefined;
  }
  get redirectUrl() { return redirect.url; }
  get clientMetadata() {
    return {
      client_name: cimd ? 'aacmcp e2e (CIMD)' : 'aacmcp e2e (DCR)',
      redirect_uris: [redirect.url],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    this._state = randomBytes(16).toString('base64url');
    return this._state;
  }
  clientInformation() { return this._client; }
  saveClientInformation(info) { this._client = info; }
  tokens() { return this._tokens; }
  saveTokens(t) {
    this._tokens = t;
    this.saved.push(t);
  }
  saveCodeVerifier(v) { this._verifier = v; }
  codeVerifier() { return this._verifier; }
  saveDiscoveryState(s) { this._discovery = s; }
  discoveryState() { return this._discovery; }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'client') this._client = undefined;
  }
  async redirectToAuthorization(authorizationUrl) {
    this.authorizations.push(new URL(authorizationUrl));
    this.callback = null;
    if (!this.answer) return;
    const { params, consents } = await authorize(browser, redirect, authorizationUrl, { ...this.answer, allScopes });
    this.consents.push(...consents);
    assert.equal(params.get('state'), this._state, 'the redirect carries the state the SDK sent');
    assert.equal(params.get('error'), null, `the authorization failed: ${params.get('error')} ${params.get('error_description')}`);
    this.callback = params;
  }
}

const provider = new BrowserProvider();
let client;
let transport;

async function connect() {
  transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  const c = new Client({ name: 'aacmcp-tssdk-oauth', version: '1.0.0' });
  await c.connect(transport);
  return c;
}

// post sends one JSON-RPC request to /mcp with token, past the SDK, to see what
// the server says about the token itself.
async function post(token, method, params = {}) {
  return fetch(url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

// stopsForAuthorization requires p to reject with the SDK's UnauthorizedError (it
// sent the person to the authorization server); any other failure is rethrown as
// it is, so that its own message shows.
async function stopsForAuthorization(p, what) {
  try {
    await p;
  } catch (e) {
    if (e instanceof UnauthorizedError) return;
    throw e;
  }
  assert.fail(`${what}: the SDK did not stop for an authorization`);
}

async function asMetadata() {
  return discoverAuthorizationServerMetadata(new URL(provider._discovery.authorizationServerUrl));
}

async function tokenRequest(form) {
  const md = await asMetadata();
  return fetch(md.token_endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
    body: new URLSearchParams(form),
  });
}

async function listNames() {
  const { tools } = await client.listTools();
  return tools.map((t) => t.name);
}

// firstAuthorization connects with no token: the SDK discovers the authorization
// server, registers (DCR) or uses the document URL as client id (CIMD), and sends
// the browser; the consent page offers every scope, and the person ticks `grant`
// (null: as offered).
async function firstAuthorization(grant) {
  provider.answer = { ...answer, scopes: grant };
  await stopsForAuthorization(connect(), 'connect with no token');
  assert.equal(provider.authorizations.length, 1, 'one authorization request');
  const az = provider.authorizations[0];
  assert.equal(az.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(az.searchParams.get('resource'), url.href, 'the resource is the /mcp endpoint (RFC 8707)');
  if (cimd) {
    assert.equal(az.searchParams.get('client_id'), cimd, 'CIMD: the client id is the document URL');
  } else {
    assert.ok(provider._client?.client_id, 'DCR: the SDK registered and got a client id');
    assert.notEqual(provider._client.client_id, cimd);
    assert.equal(az.searchParams.get('client_id'), provider._client.client_id);
  }
  assert.equal(provider.consents.length, 1, 'one consent page');
  assert.deepEqual(provider.consents[0].offered, allScopes, 'the SDK asked for every scope the resource supports, and the page offers each');
  assert.ok(provider.callback.get('code'), 'the redirect carries a code');
  assert.equal(provider.callback.get('iss'), provider._discovery.authorizationServerMetadata.issuer, 'RFC 9207 iss');

  await transport.finishAuth(provider.callback);
  const t = provider.tokens();
  assert.match(t.access_token, /^aao_/, 'an OAuth access token');
  assert.match(t.refresh_token, /^aar_/, 'a refresh token');
  assert.equal(t.token_type.toLowerCase(), 'bearer');
  assert.ok(t.expires_in > 0, 'expires_in');
  const want = grant ?? allScopes;
  assert.deepEqual(scopesOf(t), [...want].sort(), 'the token holds what the person allowed');

  client = await connect();
  assert.deepEqual(await listNames(), toolsFor(want), 'tools/list: the tools the granted scopes unlock');
  const page = await client.callTool({ name: 'list_issues', arguments: { limit: 3 } });
  assert.notEqual(page.isError, true, JSON.stringify(page));
  assert.ok(Array.isArray(page.structuredContent.issues), 'list_issues returns issues');
  result.client_id = provider._client.client_id;
}

if (steps.includes('authorize')) {
  test(`first use (${cimd ? 'CIMD' : 'DCR'}): authorize in the browser granting issues:read only, then tools/list and a call`, () => firstAuthorization(['issues:read']));
}
if (steps.includes('authorize-all')) {
  test(`first use (${cimd ? 'CIMD' : 'DCR'}): authorize in the browser as offered, then tools/list and a call`, () => firstAuthorization(null));
}

if (steps.includes('stepup')) {
  test('step-up: create_issue answers 403 insufficient_scope, the SDK re-authorizes, the page asks only for issues:write', async () => {
    const before = provider.tokens();
    const n = provider.authorizations.length;
    provider.answer = { ...answer };
    const args = { title: 'Filed after an OAuth step-up' };
    // What the SDK is about to read: the 403 and its challenge, as they reach
    // the client (through a front door, WWW-Authenticate and not a remapped copy).
    const refused = await post(before.access_token, 'tools/call', { name: 'create_issue', arguments: args });
    const ch = extractWWWAuthenticateParams(refused);
    result.stepup_challenge = {
      status: refused.status,
      error: ch.error ?? '',
      scope: ch.scope ?? '',
      resource_metadata: ch.resourceMetadataUrl?.href ?? '',
      remapped: refused.headers.get('x-amzn-remapped-www-authenticate') ?? '',
    };
    assert.equal(refused.status, 403, 'a read-only token calling create_issue');
    assert.equal(ch.error, 'insufficient_scope');
    assert.equal(ch.scope, 'issues:write', 'the challenge names the scope the tool needs');
    assert.equal(ch.resourceMetadataUrl?.href, url.href.replace(/\/mcp$/, '') + '/.well-known/oauth-protected-resource/mcp');
    await stopsForAuthorization(client.callTool({ name: 'create_issue', arguments: args }), 'create_issue with issues:read only');
    assert.equal(provider.authorizations.length, n + 1, 'one more authorization request');
    const az = provider.authorizations[n];
    assert.deepEqual(az.searchParams.get('scope').split(' ').sort(), ['issues:read', 'issues:write'],
      'the SDK asks for the union of what it holds and what the challenge names');
    const consent = provider.consents.at(-1);
    assert.deepEqual(consent.offered, ['issues:write'], 'the consent page offers only the scope not granted yet');

    await transport.finishAuth(provider.callback);
    const after = provider.tokens();
    assert.notEqual(after.access_token, before.access_token);
    assert.deepEqual(scopesOf(after), ['issues:read', 'issues:write']);
    const created = await client.callTool({ name: 'create_issue', arguments: args });
    assert.notEqual(created.isError, true, JSON.stringify(created));
    assert.equal(created.structuredContent.title, args.title);
    result.created_issue = { key: created.structuredContent.key, title: created.structuredContent.title };
    assert.deepEqual(await listNames(), toolsFor(['issues:read', 'issues:write']), 'tools/list grew with the grant');
  });
}

if (steps.includes('refresh')) {
  test('refresh: the SDK trades the refresh token without the browser; both tokens rotate and the scopes stay', async () => {
    const n = provider.authorizations.length;
    const a = provider.tokens();
    assert.equal(await auth(provider, { serverUrl: url }), 'AUTHORIZED');
    const b = provider.tokens();
    assert.equal(provider.authorizations.length, n, 'no authorization request: a refresh');
    assert.notEqual(b.access_token, a.access_token, 'a new access token');
    assert.match(b.refresh_token, /^aar_/);
    assert.notEqual(b.refresh_token, a.refresh_token, 'the refresh token rotated');
    assert.deepEqual(scopesOf(b), scopesOf(a), 'the refreshed token keeps the scopes');
    const page = await client.callTool({ name: 'list_issues', arguments: { limit: 1 } });
    assert.notEqual(page.isError, true, 'the refreshed access token works');
    result.refreshed_access = b.access_token; // used: the server has it cached now
    result.live_access = b.access_token;
  });
}

if (steps.includes('expiry')) {
  test('expiry: once the access token has expired, the next call gets 401 and the SDK refreshes by itself', async () => {
    const n = provider.authorizations.length;
    const a = provider.tokens();
    // The server runs with a short access-token lifetime; wait until it is over.
    await new Promise((r) => setTimeout(r, (a.expires_in + 1) * 1000));
    assert.equal((await post(a.access_token, 'tools/list')).status, 401, 'the expired token is refused');
    const page = await client.callTool({ name: 'list_issues', arguments: { limit: 1 } });
    assert.notEqual(page.isError, true, JSON.stringify(page));
    const b = provider.tokens();
    assert.equal(provider.authorizations.length, n, 'no authorization request: a refresh');
    assert.notEqual(b.access_token, a.access_token);
    assert.notEqual(b.refresh_token, a.refresh_token, 'the refresh token rotated');
    result.live_access = b.access_token;
  });
}

if (steps.includes('revoke')) {
  test('revocation (RFC 7009): the refresh token dies at once, so do access tokens of the grant not seen yet', async () => {
    // One more refresh: an access token the server has never verified, so no
    // cache can answer for it.
    assert.equal(await auth(provider, { serverUrl: url }), 'AUTHORIZED');
    const t = provider.tokens();
    const md = await asMetadata();
    assert.ok(md.revocation_endpoint, 'the metadata names a revocation endpoint');
    const rv = await fetch(md.revocation_endpoint, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: t.refresh_token, token_type_hint: 'refresh_token', client_id: provider._client.client_id }),
    });
    assert.equal(rv.status, 200, `revoke: ${rv.status} ${await rv.text()}`);

    const refresh = await tokenRequest({ grant_type: 'refresh_token', refresh_token: t.refresh_token, client_id: provider._client.client_id });
    assert.equal(refresh.status, 400, 'the revoked refresh token is refused');
    assert.equal((await refresh.json()).error, 'invalid_grant');
    const unseen = await post(t.access_token, 'tools/list');
    assert.equal(unseen.status, 401, 'an access token of the revoked grant is refused at once');

    const n = provider.authorizations.length;
    provider.answer = null; // nobody at the browser now
    provider._tokens = t;
    assert.equal(await auth(provider, { serverUrl: url }), 'REDIRECT', 'the SDK cannot refresh any more: it asks the person again');
    assert.equal(provider.authorizations.length, n + 1);
    delete result.live_access;
  });
}

const counts = await runTests();
if (process.env.AACMCP_RESULT_FILE) await writeFile(process.env.AACMCP_RESULT_FILE, JSON.stringify(result));
await client?.close().catch(() => {});
await browser.close();
await redirect.close();
finish(counts);

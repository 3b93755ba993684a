// The bench's TypeScript SDK peer: get_issue and list_issues on the official MCP
// SDK, stateless Streamable HTTP with JSON responses, the way the SDK documents a
// stateless server (a fresh McpServer and transport per request). Data comes from
// the bench's peer file: the workspace's issues in list order and, for each
// position, the cursor that the Go store would issue after it (Go's int64 cursor
// positions do not fit a JS number). Results are the same bytes aacmcp returns.
//
//   node server.mjs PEERFILE   -> prints "listening http://127.0.0.1:PORT"
import http from 'node:http';
import fs from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const data = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const sorted = data.issues;
const byID = new Map();
for (const is of sorted) {
  byID.set(is.id, is);
  byID.set(is.key, is);
}

function result(v) {
  return { content: [{ type: 'text', text: JSON.stringify(v) }], structuredContent: v };
}

function newServer() {
  const server = new McpServer({ name: 'tspeer', version: '1.0.0' });
  const annotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
  server.registerTool('get_issue', {
    description: 'Get one issue by UUID or key.',
    inputSchema: { issue_id: z.string() },
    annotations,
  }, async ({ issue_id }) => {
    const is = byID.get(issue_id);
    if (!is) {
      return { content: [{ type: 'text', text: '{"error":"issue not found","code":"not_found"}' }], isError: true };
    }
    return result(is);
  });
  server.registerTool('list_issues', {
    description: 'List issues, most recently updated first.',
    inputSchema: { limit: z.number().int().min(1).max(100).optional() },
    annotations,
  }, async ({ limit }) => {
    const n = Math.min(limit ?? 25, sorted.length);
    const next = sorted.length > n ? data.cursors[n - 1] : '';
    return result({ issues: sorted.slice(0, n), next_cursor: next });
  });
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.method !== 'POST' || req.url !== '/mcp') {
    res.writeHead(405).end();
    return;
  }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let body;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    res.writeHead(400).end();
    return;
  }
  const server = newServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});

httpServer.keepAliveTimeout = 120000;
httpServer.listen(0, '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${httpServer.address().port}`);
});

#!/bin/sh
# A full MCP exchange with plain curl against aacmcp.
#   MCP_URL  the /mcp endpoint, e.g. http://127.0.0.1:8080/mcp (make run prints it)
#   TOKEN    a bearer token, e.g. the full-scope token make run prints
set -eu

# post METHOD BODY [HEADER...]: one JSON-RPC message, answered with one JSON document.
post() {
  body=$1
  shift
  curl -sS -X POST "$MCP_URL" \
    -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    "$@" -d "$body"
  echo
}

echo '== 2025-11-25: initialize (the server is stateless: no session id comes back)'
post '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1.0"}}}'
V='MCP-Protocol-Version: 2025-11-25'
post '{"jsonrpc":"2.0","method":"notifications/initialized"}' -H "$V"

echo '== tools/list: every tool your token may call, with its annotations'
post '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' -H "$V"

echo '== tools/call: a read'
post '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_issues","arguments":{"limit":2}}}' -H "$V"

echo '== tools/call: a write'
created=$(post '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"create_issue","arguments":{"title":"Filed with curl"}}}' -H "$V")
echo "$created"
KEY=$(echo "$created" | grep -o '"key":"[A-Z]*-[0-9]*"' | head -n 1 | cut -d '"' -f 4)

echo "== tools/call: delete_issue $KEY without confirm is refused (isError, destructive_flag_missing)"
post '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"'"$KEY"'"}}}' -H "$V"

echo "== tools/call: delete_issue $KEY with confirm: true"
post '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"delete_issue","arguments":{"issue_id":"'"$KEY"'","confirm":true}}}' -H "$V"

echo '== 2026-07-28 (sessionless): no initialize; every request names its version in _meta and its method in headers'
M='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1.0"},"io.modelcontextprotocol/clientCapabilities":{}}'
N='MCP-Protocol-Version: 2026-07-28'
post '{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{'"$M"'}}' -H "$N" -H 'Mcp-Method: server/discover'
post '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list_issues","arguments":{"limit":1},'"$M"'}}' \
  -H "$N" -H 'Mcp-Method: tools/call' -H 'Mcp-Name: list_issues'

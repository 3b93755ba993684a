#!/bin/sh
# The MCP Inspector CLI against aacmcp: list the tools, a read, a write, a
# destructive call refused without confirm, and the same call with confirm: true.
#   MCP_URL    the /mcp endpoint, e.g. http://127.0.0.1:8080/mcp (make run prints it)
#   TOKEN      a bearer token, e.g. the full-scope token make run prints
#   INSPECTOR  the Inspector command (default: npx -y @modelcontextprotocol/inspector)
set -eu

inspector() {
  ${INSPECTOR:-npx -y @modelcontextprotocol/inspector} --cli "$MCP_URL" --transport http \
    --header "Authorization: Bearer $TOKEN" "$@"
  echo
}

echo '== tools/list'
inspector --method tools/list

echo '== a read'
inspector --method tools/call --tool-name list_issues --tool-arg limit=2

echo '== a write'
created=$(inspector --method tools/call --tool-name create_issue --tool-arg 'title=Filed from the Inspector')
echo "$created"
KEY=$(echo "$created" | grep -o '"key": "[A-Z]*-[0-9]*"' | head -n 1 | cut -d '"' -f 4)

echo "== delete_issue $KEY without confirm (refused)"
inspector --method tools/call --tool-name delete_issue --tool-arg "issue_id=$KEY"

echo "== delete_issue $KEY with confirm=true"
inspector --method tools/call --tool-name delete_issue --tool-arg "issue_id=$KEY" --tool-arg confirm=true

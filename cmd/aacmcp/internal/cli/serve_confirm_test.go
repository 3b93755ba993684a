package cli

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// typesKey answers every confirmation form by typing key.
type typesKey struct {
	key   string
	asked int
}

func (p *typesKey) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.asked++
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{confirm.Field: p.key}}}, nil
}

// TestServeHumanConfirmation: serve wires the workspace policy and its key. Under
// require, REST cannot delete; the mcp-go client at 2026-07-28 is asked and deletes.
func TestServeHumanConfirmation(t *testing.T) {
	data := t.TempDir()
	// The first run seeds the dev workspace, so its policy can be set.
	startServe(t, data, "--dev").stop(t)
	mustRun(t, "workspace", "set", "--workspace", devWorkspace, "--destructive-confirmation", "require", "--data", data)
	s := startServe(t, data, "--dev")
	full, _ := devTokensOf(t, s.stdout.String())

	if fi, err := os.Stat(filepath.Join(data, confirm.KeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", confirm.KeyFile, fi, err)
	}
	issue := func() (id, key string) {
		status, body := callREST(t, s.base, full, "create_issue", `{"title":"Doomed"}`)
		id, _ = body["id"].(string)
		key, _ = body["key"].(string)
		if status != http.StatusOK || id == "" || key == "" {
			t.Fatalf("create_issue: %d %v", status, body)
		}
		return id, key
	}

	id, key := issue()
	status, body := callREST(t, s.base, full, "delete_issue", `{"issue_id":"`+id+`","confirm":true}`)
	if status != http.StatusForbidden || body["code"] != "human_confirmation_required" {
		t.Fatalf("REST delete under require: %d %v", status, body)
	}

	person := &typesKey{key: key}
	tr, err := transport.NewStreamableHTTP(s.base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + full}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2026-07-28"), client.WithElicitationHandler(person))
	defer c.Close()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "delete_issue"
	req.Params.Arguments = map[string]any{"issue_id": id, "confirm": true}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || person.asked != 1 {
		t.Fatalf("delete_issue over MCP: err %v, result %+v, asked %d", err, res, person.asked)
	}
	status, body = callREST(t, s.base, full, "get_issue", `{"issue_id":"`+id+`"}`)
	if status != http.StatusNotFound {
		t.Fatalf("get_issue after the confirmed delete: %d %v", status, body)
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
)

// TestHumanConfirmationThroughGateway is issue 15 item 6 for the deployed path: the
// workspace policy set with `--backend dynamodb`, the MCP function's real code behind
// `aacmcp gateway` on dynalite, the nonce spent in DynamoDB, and the records read
// back from Kinesis. The mcp-go client at 2026-07-28 with an elicitation handler
// plays the person; the same behaviour on serve is test/clients' and shared/mcpserver's.
func TestHumanConfirmationThroughGateway(t *testing.T) {
	if mcp.LATEST_PROTOCOL_VERSION != "2026-07-28" {
		t.Fatalf("mcp-go's latest revision is %s; this test pins 2026-07-28", mcp.LATEST_PROTOCOL_VERSION)
	}
	bin, awsEnv, backend, data, cli := devOnDynalite(t)
	kin := emulator.StartT(t, emulator.Kinesalite)
	ctx := context.Background()
	const stream = "aacmcp-audit"
	kc := kinesis.NewFromConfig(kin.AWSConfig())
	if err := harness.CreateStream(ctx, kc, stream); err != nil {
		t.Fatal(err)
	}
	var tok createdToken
	if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", "dev",
		"--scopes", "issues:read,issues:write,comments:read,comments:write", "--name", "confirm", "--json"), &tok); err != nil {
		t.Fatal(err)
	}
	cli("workspace", "set", "--workspace", "demo", "--destructive-confirmation", "elicit")
	mcpURL := startGateway(t, bin, awsEnv, append(backend, "--data", data,
		"--audit-stream", stream, "--kinesis-endpoint-url", kin.Endpoint)...)

	create := func(t *testing.T, c *client.Client, title string) (id, key string) {
		t.Helper()
		res := call(t, c, "create_issue", map[string]any{"title": title})
		var is struct{ ID, Key string }
		if res.IsError || json.Unmarshal([]byte(text(res)), &is) != nil || is.ID == "" {
			t.Fatalf("create_issue: %s", text(res))
		}
		return is.ID, is.Key
	}
	exists := func(t *testing.T, c *client.Client, id string) bool {
		t.Helper()
		res := call(t, c, "get_issue", map[string]any{"issue_id": id})
		if res.IsError && errCode(res) != "not_found" {
			t.Fatalf("get_issue: %s", text(res))
		}
		return !res.IsError
	}

	cases := []struct {
		name    string
		action  mcp.ElicitationResponseAction
		typed   func(key string) string
		deleted bool
		code    string
	}{
		{"accepted", mcp.ElicitationResponseActionAccept, func(key string) string { return key }, true, ""},
		{"declined", mcp.ElicitationResponseActionDecline, nil, false, "confirmation_declined"},
		{"wrong key", mcp.ElicitationResponseActionAccept, func(string) string { return "AAC-0" }, false, "confirmation_declined"},
	}
	ids := map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &gatewayPerson{action: tc.action, typed: tc.typed}
			c := modernGatewayClient(t, mcpURL, tok.Token, p)
			id, key := create(t, c, "Doomed "+tc.name)
			ids[tc.name] = id
			p.key = key
			res := call(t, c, "delete_issue", map[string]any{"issue_id": id, "confirm": true})
			if len(p.asked) != 1 || !strings.Contains(p.asked[0].Message, key) {
				t.Fatalf("the person was asked %d times (%+v), want once about %s", len(p.asked), p.asked, key)
			}
			if got := errCode(res); got != tc.code {
				t.Fatalf("delete_issue: code %q, want %q: %s", got, tc.code, text(res))
			}
			if gone := !exists(t, c, id); gone != tc.deleted {
				t.Fatalf("deleted %v, want %v", gone, tc.deleted)
			}
		})
	}

	t.Run("require refuses a client that cannot ask, on /mcp and REST", func(t *testing.T) {
		cli("workspace", "set", "--workspace", "demo", "--destructive-confirmation", "require")
		c := modernGatewayClient(t, mcpURL, tok.Token, nil)
		id, _ := create(t, c, "Kept by require")
		ids["require"] = id
		if res := call(t, c, "delete_issue", map[string]any{"issue_id": id, "confirm": true}); errCode(res) != "human_confirmation_required" {
			t.Fatalf("/mcp: %s", text(res))
		}
		restURL := strings.TrimSuffix(mcpURL, "/mcp") + "/tools/delete_issue"
		req, _ := http.NewRequest(http.MethodPost, restURL, strings.NewReader(`{"issue_id":"`+id+`","confirm":true}`))
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Code string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || body.Code != "human_confirmation_required" {
			t.Fatalf("REST: %d %+v, want 403 human_confirmation_required", resp.StatusCode, body)
		}
		if !exists(t, c, id) {
			t.Fatal("require deleted the issue")
		}
	})

	// The stream holds, per issue, what the guard decided: the question (denied,
	// elicited) and then the verdict on the answer.
	type step struct{ outcome, reason, confirmation string }
	want := map[string][]step{
		"accepted":  {{"denied", "human_confirmation_required", "elicited"}, {"success", "", "elicited"}},
		"declined":  {{"denied", "human_confirmation_required", "elicited"}, {"denied", "confirmation_declined", "elicited"}},
		"wrong key": {{"denied", "human_confirmation_required", "elicited"}, {"denied", "confirmation_declined", "elicited"}},
		"require":   {{"denied", "human_confirmation_required", "flag"}, {"denied", "human_confirmation_required", "flag"}},
	}
	got := map[string][]step{}
	byID := map[string]string{}
	for name, id := range ids {
		byID[id] = name
	}
	for _, r := range readStream(t, kc, stream) {
		if r.Tool != "delete_issue" {
			continue
		}
		if name, ok := byID[r.ResourceID]; ok {
			got[name] = append(got[name], step{r.Outcome, r.Reason, r.Confirmation})
			if r.EventVersion != audit.EventVersion {
				t.Errorf("record %s: event version %q", r.EventID, r.EventVersion)
			}
		}
	}
	for name, w := range want {
		if len(got[name]) != len(w) {
			t.Errorf("%s: records %+v, want %+v", name, got[name], w)
			continue
		}
		for i := range w {
			if got[name][i] != w[i] {
				t.Errorf("%s: record %d %+v, want %+v", name, i, got[name][i], w[i])
			}
		}
	}
}

// gatewayPerson answers every confirmation form the way it is told and records it.
type gatewayPerson struct {
	action mcp.ElicitationResponseAction
	typed  func(key string) string
	key    string
	mu     sync.Mutex
	asked  []mcp.ElicitationParams
}

func (p *gatewayPerson) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, req.Params)
	res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: p.action}}
	if p.action == mcp.ElicitationResponseActionAccept {
		res.Content = map[string]any{confirm.Field: p.typed(p.key)}
	}
	return res, nil
}

// modernGatewayClient is the mcp-go client at 2026-07-28; with a handler it
// declares form elicitation in every request and fulfils input_required itself.
func modernGatewayClient(t *testing.T, mcpURL, secret string, h client.ElicitationHandler) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(mcpURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + secret}))
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_PROTOCOL_VERSION)}
	if h != nil {
		opts = append(opts, client.WithElicitationHandler(h))
	}
	c := client.NewClient(tr, opts...)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "confirm-gateway-test", Version: "1.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	return c
}

func call(t *testing.T, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// errCode is the stable code of an error result, "" for a success.
func errCode(r *mcp.CallToolResult) string {
	if !r.IsError {
		return ""
	}
	var body struct{ Code string }
	_ = json.Unmarshal([]byte(text(r)), &body)
	return body.Code
}

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
	"github.com/aacworkflow/aacmcp/test/mcpgotest"
)

// TestHumanConfirmationThroughGateway is issue 15 item 6 for the deployed path: the
// workspace policy set with `--backend dynamodb`, the MCP function's real code behind
// `aacmcp gateway` on dynalite, the nonce spent in DynamoDB, and the records read
// back from Kinesis. The mcp-go client at 2026-07-28 with an elicitation handler
// plays the person; the same behaviour on serve is test/clients' and shared/mcpserver's.
func TestHumanConfirmationThroughGateway(t *testing.T) {
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

	create := func(t *testing.T, c *mcpclient.Client, title string) (id, key string) {
		t.Helper()
		res := mcpgotest.Call(t, c, "create_issue", map[string]any{"title": title})
		var is struct{ ID, Key string }
		if res.IsError || json.Unmarshal([]byte(mcpgotest.Text(res)), &is) != nil || is.ID == "" {
			t.Fatalf("create_issue: %s", mcpgotest.Text(res))
		}
		return is.ID, is.Key
	}
	exists := func(t *testing.T, c *mcpclient.Client, id string) bool {
		t.Helper()
		res := mcpgotest.Call(t, c, "get_issue", map[string]any{"issue_id": id})
		if res.IsError && mcpgotest.ErrCode(res) != "not_found" {
			t.Fatalf("get_issue: %s", mcpgotest.Text(res))
		}
		return !res.IsError
	}

	cases := []struct {
		name    string
		action  mcp.ElicitationResponseAction
		typed   func(key string) func(message string) string
		deleted bool
		code    string
	}{
		{"accepted", mcp.ElicitationResponseActionAccept, func(key string) func(string) string { return func(string) string { return key } }, true, ""},
		{"declined", mcp.ElicitationResponseActionDecline, nil, false, "confirmation_declined"},
		{"wrong key", mcp.ElicitationResponseActionAccept, func(string) func(string) string { return func(string) string { return "AAC-0" } }, false, "confirmation_declined"},
	}
	ids := map[string]string{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &mcpgotest.Person{Action: tc.action}
			c := mcpgotest.Connect(t, mcpURL, tok.Token, p)
			id, key := create(t, c, "Doomed "+tc.name)
			ids[tc.name] = id
			if tc.typed != nil {
				p.Typed = tc.typed(key)
			}
			res := mcpgotest.Call(t, c, "delete_issue", map[string]any{"issue_id": id, "confirm": true})
			if asked := p.Asked(); len(asked) != 1 || !strings.Contains(asked[0].Message, key) {
				t.Fatalf("the person was asked %d times (%+v), want once about %s", len(asked), asked, key)
			}
			if got := mcpgotest.ErrCode(res); got != tc.code {
				t.Fatalf("delete_issue: code %q, want %q: %s", got, tc.code, mcpgotest.Text(res))
			}
			if gone := !exists(t, c, id); gone != tc.deleted {
				t.Fatalf("deleted %v, want %v", gone, tc.deleted)
			}
		})
	}

	t.Run("require refuses a client that cannot ask, on /mcp and REST", func(t *testing.T) {
		cli("workspace", "set", "--workspace", "demo", "--destructive-confirmation", "require")
		c := mcpgotest.Connect(t, mcpURL, tok.Token, nil)
		id, _ := create(t, c, "Kept by require")
		ids["require"] = id
		if res := mcpgotest.Call(t, c, "delete_issue", map[string]any{"issue_id": id, "confirm": true}); mcpgotest.ErrCode(res) != "human_confirmation_required" {
			t.Fatalf("/mcp: %s", mcpgotest.Text(res))
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

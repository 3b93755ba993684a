package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aacworkflow/aacmcp/shared/confirm"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// bearer adds the token to every request of the Go SDK's transport.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestHumanConfirmationGoSDKClient: the official Go SDK client at 2026-07-28
// fulfils input_required through its elicitation handler (its default MRTR
// middleware), for an accepted and a declined delete.
func TestHumanConfirmationGoSDKClient(t *testing.T) {
	s := newServer(t, withConfirmation(t))
	ctx := context.Background()
	if err := s.w.Store.SetDestructiveConfirmation(ctx, gt.WS, "elicit"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		action  string
		deleted bool
	}{{"accept", true}, {"decline", false}} {
		t.Run(tc.action, func(t *testing.T) {
			is, err := s.w.Store.CreateIssue(ctx, gt.WS, store.NewIssue{Title: "Doomed", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: gt.Member})
			if err != nil {
				t.Fatal(err)
			}
			asked := 0
			c := gosdk.NewClient(&gosdk.Implementation{Name: "confirm-gosdk", Version: "1.0.0"}, &gosdk.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
					asked++
					if !strings.Contains(req.Params.Message, is.Key) {
						t.Errorf("question %q does not name %s", req.Params.Message, is.Key)
					}
					res := &gosdk.ElicitResult{Action: tc.action}
					if tc.action == "accept" {
						res.Content = map[string]any{confirm.Field: is.Key}
					}
					return res, nil
				},
			})
			cs, err := c.Connect(ctx, &gosdk.StreamableClientTransport{
				Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(s.admin)},
				DisableStandaloneSSE: true, MaxRetries: -1,
			}, &gosdk.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "delete_issue", Arguments: map[string]any{"issue_id": is.ID, "confirm": true}})
			if err != nil {
				t.Fatal(err)
			}
			if asked != 1 {
				t.Fatalf("asked %d times, want 1", asked)
			}
			_, gerr := s.w.Store.GetIssue(ctx, gt.WS, is.ID)
			gone := gerr != nil && errors.Is(gerr, store.ErrNotFound)
			if gone != tc.deleted || res.IsError == tc.deleted {
				b, _ := json.Marshal(res)
				t.Fatalf("deleted %v (get: %v), result %s", gone, gerr, b)
			}
			if !tc.deleted {
				var body struct{ Code string }
				if tcnt, ok := res.Content[0].(*gosdk.TextContent); !ok || json.Unmarshal([]byte(tcnt.Text), &body) != nil || body.Code != "confirmation_declined" {
					t.Fatalf("declined result %+v", res.Content)
				}
			}
		})
	}
}

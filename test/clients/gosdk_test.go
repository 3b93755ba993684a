package clients_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gosdkSession adapts the official Go SDK client to the scenario.
type gosdkSession struct{ cs *mcp.ClientSession }

func (s gosdkSession) ListTools(ctx context.Context) ([]listedTool, error) {
	res, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		return nil, err
	}
	out := make([]listedTool, 0, len(res.Tools))
	for _, t := range res.Tools {
		lt := listedTool{Name: t.Name}
		if a := t.Annotations; a != nil {
			ro, idem := a.ReadOnlyHint, a.IdempotentHint
			lt.ReadOnly, lt.Idempotent = &ro, &idem
			lt.Destructive, lt.OpenWorld = a.DestructiveHint, a.OpenWorldHint
		}
		lt.Scopes, lt.RequiresConfirm = metaFacts(t.Meta)
		out = append(out, lt)
	}
	return out, nil
}

func (s gosdkSession) Call(ctx context.Context, name string, args map[string]any) (toolResult, error) {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return toolResult{}, err
	}
	out := toolResult{IsError: res.IsError}
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			out.Text = tc.Text
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return toolResult{}, err
		}
		out.Structured = b
	}
	return out, nil
}

// connectGoSDK opens an official Go SDK client session asking for version.
func connectGoSDK(t *testing.T, tg target, token, version string) (gosdkSession, *headerTransport) {
	t.Helper()
	rec := &headerTransport{headers: map[string]string{"Authorization": "Bearer " + token}}
	c := mcp.NewClient(&mcp.Implementation{Name: "aacmcp-gosdk-test", Version: "1.0.0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   tg.mcpURL,
		HTTPClient: &http.Client{Transport: rec},
		// The server is stateless and has nothing to push; GET /mcp is 405.
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect on %s: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return gosdkSession{cs}, rec
}

// TestGoSDKClient runs the official Go SDK client on every revision against every
// target.
func TestGoSDKClient(t *testing.T) {
	for _, tg := range targets(t) {
		for _, v := range revisions {
			t.Run(tg.name+"/"+v, func(t *testing.T) {
				s, rec := connectGoSDK(t, tg, tg.full, v)
				if got := s.cs.InitializeResult().ProtocolVersion; got != v {
					t.Fatalf("negotiated %s, want %s", got, v)
				}
				runScenario(t, s, "go-sdk "+v)
				checkWire(t, rec.requests(), v)
			})
		}
	}
}

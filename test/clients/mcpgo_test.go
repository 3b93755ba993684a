package clients_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// revisions are the MCP protocol revisions every Go client is run on.
var revisions = []string{
	mcp.ProtocolVersion20250326,
	mcp.ProtocolVersion20250618,
	mcp.ProtocolVersion20251125,
	mcp.ProtocolVersion20260728,
}

// mcpgoSession adapts mcp-go's client to the scenario.
type mcpgoSession struct{ c *client.Client }

func (s mcpgoSession) ListTools(ctx context.Context) ([]listedTool, error) {
	res, err := s.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	out := make([]listedTool, 0, len(res.Tools))
	for _, t := range res.Tools {
		lt := listedTool{
			Name:        t.Name,
			ReadOnly:    t.Annotations.ReadOnlyHint,
			Destructive: t.Annotations.DestructiveHint,
			Idempotent:  t.Annotations.IdempotentHint,
			OpenWorld:   t.Annotations.OpenWorldHint,
		}
		if t.Meta != nil {
			lt.Scopes, lt.RequiresConfirm = metaFacts(t.Meta.AdditionalFields)
		}
		out = append(out, lt)
	}
	return out, nil
}

// metaFacts reads aacmcp's _meta keys from a decoded _meta object.
func metaFacts(m map[string]any) (scopes []string, requiresConfirm *bool) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, nil
	}
	var v struct {
		Scopes          []string `json:"aacmcp/scopes"`
		RequiresConfirm *bool    `json:"aacmcp/requires_confirm"`
	}
	if json.Unmarshal(b, &v) != nil {
		return nil, nil
	}
	return v.Scopes, v.RequiresConfirm
}

func (s mcpgoSession) Call(ctx context.Context, name string, args map[string]any) (toolResult, error) {
	res, err := s.c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		return toolResult{}, err
	}
	out := toolResult{IsError: res.IsError}
	if len(res.Content) > 0 {
		if tc, ok := mcp.AsTextContent(res.Content[0]); ok {
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

// connectMCPGo opens an mcp-go client pinned to version.
func connectMCPGo(t *testing.T, tg target, token, version string) (mcpgoSession, *headerTransport, *mcp.InitializeResult) {
	t.Helper()
	rec := &headerTransport{headers: map[string]string{"Authorization": "Bearer " + token}}
	tr, err := transport.NewStreamableHTTP(tg.mcpURL, transport.WithHTTPBasicClient(&http.Client{Transport: rec}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(version))
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcp.Implementation{Name: "aacmcp-mcpgo-test", Version: "1.0.0"},
	}})
	if err != nil {
		t.Fatalf("initialize on %s: %v", version, err)
	}
	return mcpgoSession{c}, rec, init
}

// TestMCPGoClient runs mcp-go's client on every revision against every target.
func TestMCPGoClient(t *testing.T) {
	for _, tg := range targets(t) {
		for _, v := range revisions {
			t.Run(tg.name+"/"+v, func(t *testing.T) {
				s, rec, init := connectMCPGo(t, tg, tg.full, v)
				if init.ProtocolVersion != v {
					t.Fatalf("negotiated %s, want %s", init.ProtocolVersion, v)
				}
				if init.ServerInfo.Name != "aacmcp" {
					t.Errorf("server name %q", init.ServerInfo.Name)
				}
				runScenario(t, s, "mcp-go "+v)
				checkWire(t, rec.requests(), v)
			})
		}
	}
}

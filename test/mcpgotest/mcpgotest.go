// Package mcpgotest drives aacmcp with the mcp-go client in tests: a client at the
// newest revision with an elicitation handler that plays the person, and the few
// helpers every such test needs to read a tool result.
package mcpgotest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// Revision is the protocol revision Connect pins: the first with MRTR.
const Revision = "2026-07-28"

// Person is an elicitation handler that answers every form as it is told (Typed
// gives the confirmation field's value from the form's message) and keeps what it
// was asked.
type Person struct {
	Action mcp.ElicitationResponseAction
	Typed  func(message string) string
	mu     sync.Mutex
	asked  []mcp.ElicitationParams
}

// Elicit implements client.ElicitationHandler.
func (p *Person) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.mu.Lock()
	p.asked = append(p.asked, req.Params)
	typed := p.Typed
	p.mu.Unlock()
	res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: p.Action}}
	if p.Action == mcp.ElicitationResponseActionAccept && typed != nil {
		res.Content = map[string]any{confirm.Field: typed(req.Params.Message)}
	}
	return res, nil
}

// Asked returns the forms the person was shown, in order.
func (p *Person) Asked() []mcp.ElicitationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]mcp.ElicitationParams(nil), p.asked...)
}

// Connect starts the mcp-go client against mcpURL (the /mcp endpoint) with a bearer
// token, at Revision: server/discover, no initialize. With a handler it declares
// form elicitation in every request's client capabilities and fulfils
// input_required itself. The test fails unless Revision is negotiated.
func Connect(t testing.TB, mcpURL, secret string, h client.ElicitationHandler) *client.Client {
	t.Helper()
	if mcp.LATEST_PROTOCOL_VERSION != Revision {
		t.Fatalf("mcp-go's latest revision is %s; these tests pin %s", mcp.LATEST_PROTOCOL_VERSION, Revision)
	}
	tr, err := transport.NewStreamableHTTP(mcpURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + secret}))
	if err != nil {
		t.Fatal(err)
	}
	opts := []client.ClientOption{client.WithProtocolVersion(Revision)}
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
	init.Params.ClientInfo = mcp.Implementation{Name: "aacmcp-test", Version: "1.0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != Revision {
		t.Fatalf("negotiated %q, want %s", v, Revision)
	}
	return c
}

// Call calls tool and fails the test on a protocol error (a tool error is a result).
func Call(t testing.TB, c *client.Client, tool string, args map[string]any) *mcp.CallToolResult {
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

// Text is the result's text content.
func Text(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// ErrCode is the stable code of an error result, "" for a success.
func ErrCode(r *mcp.CallToolResult) string {
	if r == nil || !r.IsError {
		return ""
	}
	var body struct{ Code string }
	_ = json.Unmarshal([]byte(Text(r)), &body)
	return body.Code
}

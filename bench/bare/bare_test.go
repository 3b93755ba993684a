package bare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/aacworkflow/aacmcp/bench/bare"
	"github.com/aacworkflow/aacmcp/bench/fixture"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/store/sqlite"
)

type discard struct{}

func (discard) Write(context.Context, audit.Record) error { return nil }

// world is a seeded data folder with aacmcp's handler and the bare peer over it.
type world struct {
	ds           fixture.Dataset
	aacmcp, bare http.Handler
}

func newWorld(t testing.TB, size int) world {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	ds, err := fixture.Seed(ctx, dir, size, 1)
	if err != nil {
		t.Fatal(err)
	}
	pfPath := filepath.Join(dir, "peer.json")
	if err := fixture.WritePeerFile(ctx, ds, pfPath); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, fixture.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cat := catalog.New(catalog.Deps{})
	g := guard.New(guard.Config{Catalog: cat, Store: st, Audit: discard{}})
	h := mcpserver.New(mcpserver.Config{}, g, cat, mcpserver.BearerSource{Verifier: &auth.Verifier{Store: st}})
	var pf fixture.PeerFile
	b, err := os.ReadFile(pfPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pf); err != nil {
		t.Fatal(err)
	}
	return world{ds: ds, aacmcp: h, bare: bare.New(pf.Workspace, pf.Issues).Handler()}
}

func call(t testing.TB, h http.Handler, token, tool string, args map[string]any) (text string, isError bool) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	req := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
	req.Host = "127.0.0.1"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: status %d: %s", tool, rec.Code, rec.Body.Bytes())
	}
	var msg struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &msg); err != nil || len(msg.Result.Content) != 1 {
		t.Fatalf("%s: unexpected answer %s (%v)", tool, rec.Body.Bytes(), err)
	}
	return msg.Result.Content[0].Text, msg.Result.IsError
}

// TestSameBytesAsAacmcp: the bare peer answers get_issue and list_issues with the
// bytes aacmcp answers for the same seeded data (the bench compares like with like).
func TestSameBytesAsAacmcp(t *testing.T) {
	w := newWorld(t, 60)
	id := fixture.IssueID(w.ds.Workspace, 17)
	tests := []struct {
		name string
		tool string
		args map[string]any
	}{
		{"get_issue by key", "get_issue", map[string]any{"issue_id": w.ds.Keys[41]}},
		{"get_issue by id", "get_issue", map[string]any{"issue_id": id}},
		{"list_issues first page of 25", "list_issues", map[string]any{"limit": 25}},
		{"list_issues default limit", "list_issues", map[string]any{}},
		{"list_issues larger than the workspace", "list_issues", map[string]any{"limit": 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, aErr := call(t, w.aacmcp, w.ds.Token, tc.tool, tc.args)
			got, bErr := call(t, w.bare, "", tc.tool, tc.args)
			if aErr || bErr {
				t.Fatalf("tool errors: aacmcp %v %s, bare %v %s", aErr, want, bErr, got)
			}
			if got != want {
				t.Errorf("bare answers\n%s\naacmcp answers\n%s", got, want)
			}
		})
	}
	if _, isErr := call(t, w.bare, "", "get_issue", map[string]any{"issue_id": "BEN-9999"}); !isErr {
		t.Error("an unknown issue must be a tool error")
	}
}

// BenchmarkGetIssue is goal 4's reference: one tools/call get_issue through the bare
// peer's handler (compare with shared/mcpserver's BenchmarkToolsCallGetIssue).
func BenchmarkGetIssue(b *testing.B) {
	w := newWorld(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, isErr := call(b, w.bare, "", "get_issue", map[string]any{"issue_id": w.ds.Keys[500]}); isErr {
			b.Fatal("tool error")
		}
	}
}

// Package bare is the benchmark's ceiling: a minimal mcp-go stateless Streamable
// HTTP server with get_issue and list_issues over issues held in memory (a map by
// id and key, and a slice pre-sorted in list order), with no auth, no store and no
// audit. It answers with the same bytes as aacmcp: the same store.Issue encoding,
// the same result shape (text content plus structuredContent) and the same cursor.
package bare

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// Server holds the issues of one workspace.
type Server struct {
	ws     string
	byID   map[string]*store.Issue
	sorted []store.Issue // list order: updated_at desc, id desc (the store's order)
}

// New returns a Server over issues, which must already be in list order (as
// store.Reader.ListIssues returns them). ws is the workspace the cursors name.
func New(ws string, issues []store.Issue) *Server {
	s := &Server{ws: ws, byID: make(map[string]*store.Issue, 2*len(issues)), sorted: issues}
	for i := range s.sorted {
		is := &s.sorted[i]
		if is.Labels == nil {
			is.Labels = []string{}
		}
		s.byID[is.ID] = is
		s.byID[is.Key] = is
	}
	return s
}

// Handler is the HTTP handler serving POST /mcp.
func (s *Server) Handler() http.Handler {
	m := server.NewMCPServer("bare", "1.0.0", server.WithToolCapabilities(false))
	ro := func(name, desc string, opts ...mcp.ToolOption) mcp.Tool {
		opts = append([]mcp.ToolOption{
			mcp.WithDescription(desc),
			mcp.WithReadOnlyHintAnnotation(true),
			mcp.WithDestructiveHintAnnotation(false),
			mcp.WithIdempotentHintAnnotation(true),
			mcp.WithOpenWorldHintAnnotation(false),
		}, opts...)
		return mcp.NewTool(name, opts...)
	}
	m.AddTool(ro("get_issue", "Get one issue by UUID or key.",
		mcp.WithString("issue_id", mcp.Required())), s.getIssue)
	m.AddTool(ro("list_issues", "List issues, most recently updated first.",
		mcp.WithNumber("limit")), s.listIssues)
	return Transport(m)
}

func (s *Server) getIssue(_ context.Context, in mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, _ := in.GetArguments()["issue_id"].(string)
	is, ok := s.byID[id]
	if !ok {
		return mcp.NewToolResultError(`{"error":"issue not found","code":"not_found"}`), nil
	}
	return Result(is)
}

func (s *Server) listIssues(_ context.Context, in mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	limit := store.PageLimit(int(in.GetFloat("limit", 0)))
	page := store.IssuePage{Issues: s.sorted[:min(limit, len(s.sorted))]}
	if len(s.sorted) > limit {
		last := s.sorted[limit-1]
		c, err := store.EncodeCursor(store.IssueFilter{}.Fingerprint(s.ws), cursorPos{U: last.UpdatedAt.UnixNano(), I: last.ID})
		if err != nil {
			return nil, err
		}
		page.NextCursor = c
	}
	return Result(page)
}

// cursorPos is the SQLite store's ListIssues position, so that cursors match.
type cursorPos struct {
	U int64  `json:"u"`
	I string `json:"i"`
}

// Result encodes v once, as aacmcp's guard does, and returns it as text and as
// structured content. Package barewrite answers with it too, so both ceilings pay
// the same encoding.
func Result(v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:              []mcp.Content{mcp.NewTextContent(string(b))},
		RawStructuredContent: b,
	}, nil
}

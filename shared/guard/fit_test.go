package guard

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
)

// TestRecordFitsTheBound: caller-chosen texts, each within its own cap, together
// (and with characters that take six bytes when escaped) must not push an audit
// line past 1 KB, and the identity, outcome and digest fields survive whole.
func TestRecordFitsTheBound(t *testing.T) {
	w := gt.NewWorld(t)
	sink := &gt.MemorySink{}
	g := New(Config{Catalog: w.Catalog, Store: w.Store, Audit: sink})
	for _, filler := range []string{"u", "\u0001", "é", "\""} {
		long := strings.Repeat(filler, 500)
		p := gt.Principal(gt.WS, gt.Admin, "issues:write")
		// An OAuth client id at its bound, which must survive whole.
		p.ClientID = "https://connector.example/" + strings.Repeat("m", maxClientID-len("https://connector.example/"))
		args := `{"title":"t","idempotency_key":"` + strings.Repeat("k", 128) + `"}`
		res := g.Call(context.Background(), Request{
			Principal: p, Tool: "create_issue", Args: json.RawMessage(args), Transport: audit.TransportMCP,
			RequestID: strings.Repeat("r", 128), JSONRPCID: long, ClientName: long, ClientVersion: long,
			ProtocolVersion: long, UserAgent: long, SourceIP: "203.0.113.9",
		})
		if res.Err != nil {
			t.Fatalf("filler %q: %v", filler, res.Err)
		}
		line, err := audit.MarshalLine(res.Record)
		if err != nil {
			t.Fatal(err)
		}
		if len(line) >= maxRecordBytes {
			t.Errorf("filler %q: record line is %d bytes, want < %d", filler, len(line), maxRecordBytes)
		}
		r := res.Record
		if r.WorkspaceID != gt.WS || r.UserID != gt.Admin || r.TokenID != p.TokenID || r.Tool != "create_issue" ||
			r.Outcome != "success" || len(r.ArgsHMAC) != 64 || len(r.IdempotencyKeyHMAC) != 64 || r.SourceIP != "203.0.113.9" || r.ClientID != p.ClientID {
			t.Errorf("filler %q: a protected field was cut: %+v", filler, r)
		}
		if !json.Valid(line) {
			t.Errorf("filler %q: line is not valid JSON", filler)
		}
	}
}

// TestClientIDBounded: a client id past its bound is cut (on a rune boundary), so
// the line still fits; one within it is kept as it is.
func TestClientIDBounded(t *testing.T) {
	w := gt.NewWorld(t)
	g := New(Config{Catalog: w.Catalog, Store: w.Store, Audit: &gt.MemorySink{}})
	for _, tt := range []struct {
		name, id, want string
	}{
		{"at the bound", strings.Repeat("a", maxClientID), strings.Repeat("a", maxClientID)},
		{"past the bound", strings.Repeat("a", 5000), strings.Repeat("a", maxClientID)},
		{"multi-byte at the cut", strings.Repeat("a", maxClientID-1) + "é", strings.Repeat("a", maxClientID-1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := gt.Principal(gt.WS, gt.Admin, "issues:read")
			p.ClientID = tt.id
			res := g.Call(context.Background(), Request{Principal: p, Tool: "list_issues", Args: json.RawMessage(`{}`),
				Transport: audit.TransportMCP, UserAgent: strings.Repeat("u", 500)})
			if res.Record.ClientID != tt.want {
				t.Errorf("client_id of %d bytes, want %d", len(res.Record.ClientID), len(tt.want))
			}
			if line, _ := audit.MarshalLine(res.Record); len(line) >= maxRecordBytes {
				t.Errorf("line of %d bytes", len(line))
			}
		})
	}
}

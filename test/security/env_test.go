// Package security attacks aacmcp from the outside: cross-tenant ids on every tool
// that takes one, every malformed or foreign token, hostile bodies and headers, the
// rate limiter end to end, and a grep for token secrets in everything the server
// writes. The matrices run in process (the real guard, HTTP handler, token verifier
// and SQLite store behind an httptest server on 127.0.0.1); the leak and rate-limit
// tests run the built `aacmcp serve`.
package security

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/test/load/server"
)

// discard drops the in-process server's access log: the tests read audit records,
// and a line per request would bury a failure's output.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestMain(m *testing.M) {
	slog.SetDefault(discard)
	server.Main(m)
}

var transports = []string{server.MCP, server.REST}

// env is the whole HTTP surface over a seeded world (guardtest: workspaces acme and
// other, users of every role, an issue with a comment in each of them).
type env struct {
	w    *gt.World
	sink *gt.MemorySink
	c    *server.Client
	// admin holds every scope in acme; outsider every scope in other.
	admin, outsider string
}

func newEnv(t *testing.T, cfg mcpserver.Config) *env {
	t.Helper()
	w := gt.NewWorld(t)
	sink := &gt.MemorySink{}
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink})
	if errs := g.SchemaErrors(); len(errs) > 0 {
		t.Fatalf("schemas: %v", errs)
	}
	h := mcpserver.New(cfg, g, w.Catalog, mcpserver.BearerSource{Verifier: &auth.Verifier{Store: w.Store}})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &env{
		w: w, sink: sink, c: server.NewClient(ts.URL, 4),
		admin:    w.Token(t, gt.WS, gt.Admin, auth.AllScopes...),
		outsider: w.Token(t, gt.OtherWS, gt.Outsider, auth.AllScopes...),
	}
}

// call makes one tool call and returns the answer and the one audit record it must
// have left.
func (e *env) call(t *testing.T, transport, token, tool string, args any) (server.Response, audit.Record) {
	t.Helper()
	before := len(e.sink.Records())
	r, err := e.c.Call(context.Background(), transport, token, tool, args, "")
	if err != nil {
		t.Fatalf("%s %s: %v", transport, tool, err)
	}
	recs := e.sink.Records()
	if n := len(recs) - before; n != 1 {
		t.Fatalf("%s %s: %d audit records, want exactly 1", transport, tool, n)
	}
	return r, recs[len(recs)-1]
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

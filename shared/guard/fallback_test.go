package guard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/kinesis"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
)

// TestAuditFailureLogsAForwardableRecord: when the sink fails, the guard's log line is
// the same fallback shape the Kinesis sink writes, so in Lambda the forwarder's
// subscription puts the record back on the stream and nothing is lost.
func TestAuditFailureLogsAForwardableRecord(t *testing.T) {
	w := gt.NewWorld(t)
	sink := &gt.MemorySink{Fail: errors.New("stream and stdout both gone")}
	var logs bytes.Buffer
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	p := gt.Principal(gt.WS, gt.Admin, all...)
	res := g.Call(context.Background(), guard.Request{Principal: p, Tool: "list_issues",
		Args: json.RawMessage(`{}`), Transport: audit.TransportREST})

	var found int
	for line := range bytes.Lines(logs.Bytes()) {
		rec, ok := kinesis.ParseFallbackLine(line)
		if !ok {
			continue
		}
		found++
		if rec.EventID != res.Record.EventID || rec.Tool != "list_issues" || rec.WorkspaceID != gt.WS {
			t.Errorf("forwarded record = %+v, want the call's record %+v", rec, res.Record)
		}
	}
	if found != 1 {
		t.Fatalf("%d forwardable fallback lines, want 1; logs:\n%s", found, logs.String())
	}
}

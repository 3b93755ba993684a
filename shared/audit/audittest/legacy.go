package audittest

import (
	"bytes"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// LegacyLine encodes r as a version 1.0 writer did: event_version "1.0" and no
// client_id, event_type or action (the three fields 1.1 appended to the line).
func LegacyLine(r audit.Record) []byte {
	r.EventVersion = audit.EventVersion10
	line := audit.AppendLine(nil, r)
	i := bytes.LastIndex(line, []byte(`,"client_id":`))
	return append(line[:i], "}\n"...)
}

// legacyRow is the Parquet row of a version 1.0 compaction: the columns before
// client_id, event_type and action existed.
type legacyRow struct {
	EventID          string   `parquet:"event_id"`
	EventVersion     string   `parquet:"event_version"`
	Timestamp        string   `parquet:"timestamp"`
	Tool             string   `parquet:"tool"`
	Outcome          string   `parquet:"outcome"`
	Reason           string   `parquet:"reason"`
	ScopesProvided   []string `parquet:"scopes_provided,list"`
	ScopesRequired   []string `parquet:"scopes_required,list"`
	WorkspaceID      string   `parquet:"workspace_id"`
	UserID           string   `parquet:"user_id"`
	TokenID          string   `parquet:"token_id"`
	ReadOnly         bool     `parquet:"read_only"`
	Destructive      bool     `parquet:"destructive"`
	ConfirmPresent   bool     `parquet:"confirm_present"`
	ResourceID       string   `parquet:"resource_id"`
	IdempotencyKey   string   `parquet:"idempotency_key"`
	IdempotentReplay bool     `parquet:"idempotent_replay"`
	RequestID        string   `parquet:"request_id"`
	JSONRPCID        string   `parquet:"jsonrpc_id"`
	ClientName       string   `parquet:"client_name"`
	ClientVersion    string   `parquet:"client_version"`
	ProtocolVersion  string   `parquet:"protocol_version"`
	UserAgent        string   `parquet:"user_agent"`
	SourceIP         string   `parquet:"source_ip"`
	ArgsSHA256       string   `parquet:"args_sha256"`
	DurationMS       int64    `parquet:"duration_ms"`
	Transport        string   `parquet:"transport"`
}

// WriteLegacyParquet writes recs to path as a version 1.0 compaction wrote them:
// event_version "1.0" and no client_id, event_type or action columns, and no
// manifest (it replaces no JSON file).
func WriteLegacyParquet(t testing.TB, path string, recs []audit.Record) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[legacyRow](f, parquet.Compression(&parquet.Zstd))
	rows := make([]legacyRow, len(recs))
	for i, r := range recs {
		rows[i] = legacyRow{
			EventID: r.EventID, EventVersion: audit.EventVersion10, Timestamp: r.Timestamp, Tool: r.Tool,
			Outcome: r.Outcome, Reason: r.Reason, ScopesProvided: r.ScopesProvided, ScopesRequired: r.ScopesRequired,
			WorkspaceID: r.WorkspaceID, UserID: r.UserID, TokenID: r.TokenID, ReadOnly: r.ReadOnly,
			Destructive: r.Destructive, ConfirmPresent: r.ConfirmPresent, ResourceID: r.ResourceID,
			IdempotencyKey: r.IdempotencyKey, IdempotentReplay: r.IdempotentReplay, RequestID: r.RequestID,
			JSONRPCID: r.JSONRPCID, ClientName: r.ClientName, ClientVersion: r.ClientVersion,
			ProtocolVersion: r.ProtocolVersion, UserAgent: r.UserAgent, SourceIP: r.SourceIP,
			ArgsSHA256: r.ArgsSHA256, DurationMS: r.DurationMS, Transport: r.Transport,
		}
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

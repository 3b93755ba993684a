package audittest

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/aacworkflow/aacmcp/shared/audit"
)

// AsLegacy is r as a reader sees it once a writer of version (audit.EventVersion10
// or audit.EventVersion11) wrote it: the digests in their legacy fields (r's args
// HMAC stands in for the plain SHA-256 a legacy writer computed, r's
// IdempotencyKey, if any, is the key in clear) and no HMACs; a 1.0 record has no
// client_id or action and is a tool call.
func AsLegacy(r audit.Record, version string) audit.Record {
	r.EventVersion = version
	if r.ArgsSHA256 == "" {
		r.ArgsSHA256 = r.ArgsHMAC
	}
	r.ArgsHMAC, r.IdempotencyKeyHMAC = "", ""
	if version == audit.EventVersion10 {
		r.ClientID, r.EventType, r.Action = "", audit.EventToolCall, ""
	}
	return r
}

// v11Line is the field order of a version 1.1 line.
type v11Line struct {
	EventID          string   `json:"event_id"`
	EventVersion     string   `json:"event_version"`
	Timestamp        string   `json:"timestamp"`
	Tool             string   `json:"tool"`
	Outcome          string   `json:"outcome"`
	Reason           string   `json:"reason"`
	ScopesProvided   []string `json:"scopes_provided"`
	ScopesRequired   []string `json:"scopes_required"`
	WorkspaceID      string   `json:"workspace_id"`
	UserID           string   `json:"user_id"`
	TokenID          string   `json:"token_id"`
	ReadOnly         bool     `json:"read_only"`
	Destructive      bool     `json:"destructive"`
	ConfirmPresent   bool     `json:"confirm_present"`
	ResourceID       string   `json:"resource_id"`
	IdempotencyKey   string   `json:"idempotency_key"`
	IdempotentReplay bool     `json:"idempotent_replay"`
	RequestID        string   `json:"request_id"`
	JSONRPCID        string   `json:"jsonrpc_id"`
	ClientName       string   `json:"client_name"`
	ClientVersion    string   `json:"client_version"`
	ProtocolVersion  string   `json:"protocol_version"`
	UserAgent        string   `json:"user_agent"`
	SourceIP         string   `json:"source_ip"`
	ArgsSHA256       string   `json:"args_sha256"`
	DurationMS       int64    `json:"duration_ms"`
	Transport        string   `json:"transport"`
	ClientID         string   `json:"client_id"`
	EventType        string   `json:"event_type"`
	Action           string   `json:"action"`
}

func legacyLine(r audit.Record, version string) []byte {
	r = AsLegacy(r, version)
	if r.ScopesProvided == nil {
		r.ScopesProvided = []string{}
	}
	if r.ScopesRequired == nil {
		r.ScopesRequired = []string{}
	}
	b, err := json.Marshal(v11Line{
		EventID: r.EventID, EventVersion: r.EventVersion, Timestamp: r.Timestamp, Tool: r.Tool,
		Outcome: r.Outcome, Reason: r.Reason, ScopesProvided: r.ScopesProvided, ScopesRequired: r.ScopesRequired,
		WorkspaceID: r.WorkspaceID, UserID: r.UserID, TokenID: r.TokenID, ReadOnly: r.ReadOnly,
		Destructive: r.Destructive, ConfirmPresent: r.ConfirmPresent, ResourceID: r.ResourceID,
		IdempotencyKey: r.IdempotencyKey, IdempotentReplay: r.IdempotentReplay, RequestID: r.RequestID,
		JSONRPCID: r.JSONRPCID, ClientName: r.ClientName, ClientVersion: r.ClientVersion,
		ProtocolVersion: r.ProtocolVersion, UserAgent: r.UserAgent, SourceIP: r.SourceIP,
		ArgsSHA256: r.ArgsSHA256, DurationMS: r.DurationMS, Transport: r.Transport,
		ClientID: r.ClientID, EventType: r.EventType, Action: r.Action,
	})
	if err != nil {
		panic(err) // strings, bools and an int64 always encode
	}
	return append(b, '\n')
}

// LegacyLine encodes r as a version 1.0 writer did: event_version "1.0", the plain
// args_sha256 and idempotency_key, and no client_id, event_type or action (the three
// fields 1.1 appended to the line). See AsLegacy for what a reader makes of it.
func LegacyLine(r audit.Record) []byte {
	line := legacyLine(r, audit.EventVersion10)
	i := bytes.LastIndex(line, []byte(`,"client_id":`))
	return append(line[:i], "}\n"...)
}

// V11Line encodes r as a version 1.1 writer did: args_sha256 and idempotency_key
// where 1.2 has their HMACs.
func V11Line(r audit.Record) []byte { return legacyLine(r, audit.EventVersion11) }

// V12Line encodes r as a version 1.2 writer did: no confirmation (added in 1.3).
func V12Line(r audit.Record) []byte {
	r.EventVersion, r.Confirmation = audit.EventVersion12, ""
	line := audit.AppendLine(nil, r)
	return bytes.Replace(line, []byte(`,"confirmation":""`), nil, 1)
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
			ArgsSHA256: AsLegacy(r, audit.EventVersion10).ArgsSHA256, DurationMS: r.DurationMS, Transport: r.Transport,
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

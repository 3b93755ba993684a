package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	schema "github.com/aacworkflow/aacmcp/events/audit"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

func TestExamplesValidate(t *testing.T) {
	paths, err := filepath.Glob("examples/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 3 {
		t.Fatalf("only %d examples", len(paths))
	}
	kinds := map[string]bool{}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(b); err != nil {
				t.Fatalf("schema: %v", err)
			}
			// An example is a real record: the Go decoder reads it too.
			var line bytes.Buffer
			if err := json.Compact(&line, b); err != nil {
				t.Fatal(err)
			}
			r, err := audit.UnmarshalLine(line.Bytes())
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			checkULIDTime(t, r)
			kinds[r.EventVersion+" "+r.EventType] = true
			if r.EventVersion == audit.EventVersion10 {
				// The rule for records written before 1.1: a tool call, of a
				// personal token, naming no action.
				if r.EventType != audit.EventToolCall || r.ClientID != "" || r.Action != "" {
					t.Errorf("1.0 record decoded as event_type %q, client_id %q, action %q", r.EventType, r.ClientID, r.Action)
				}
				return
			}
			if r.EventVersion == audit.EventVersion11 {
				// Before the keyed digests: the plain digest and the key in clear,
				// kept as they were, and no HMACs.
				if r.ArgsHMAC != "" || r.IdempotencyKeyHMAC != "" || r.ArgsSHA256 == "" {
					t.Errorf("1.1 record decoded with args_hmac %q, idempotency_key_hmac %q, args_sha256 %q", r.ArgsHMAC, r.IdempotencyKeyHMAC, r.ArgsSHA256)
				}
				return
			}
			if r.EventVersion == audit.EventVersion12 {
				// Before confirmation: none on the line, "" when read.
				if r.Confirmation != "" || bytes.Contains(line.Bytes(), []byte(`"confirmation"`)) {
					t.Errorf("1.2 record with a confirmation: %q", r.Confirmation)
				}
				return
			}
			// A current example is exactly what the encoder writes: same fields,
			// same order.
			again, err := audit.MarshalLine(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(bytes.TrimSuffix(again, []byte("\n")), line.Bytes()) {
				t.Errorf("example is not in the encoder's form\n got %s\nwant %s", line.Bytes(), again)
			}
		})
	}
	for _, k := range []string{
		audit.EventVersion10 + " " + audit.EventToolCall,
		audit.EventVersion11 + " " + audit.EventToolCall,
		audit.EventVersion12 + " " + audit.EventToolCall,
		audit.EventVersion + " " + audit.EventToolCall,
		audit.EventVersion + " " + audit.EventAuthorization,
	} {
		if !kinds[k] {
			t.Errorf("no example of version and event type %q", k)
		}
	}
}

// checkULIDTime checks that the event id's time part is the record's timestamp, as
// audit.NewEventIDAt makes it.
func checkULIDTime(t *testing.T, r audit.Record) {
	t.Helper()
	id, err := ulid.ParseStrict(r.EventID)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := audit.ParseTime(r.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	if !ulid.Time(id.Time()).Equal(ts) {
		t.Errorf("event_id time %s, timestamp %s", ulid.Time(id.Time()).UTC(), ts)
	}
}

// TestSchemaMatchesRecord keeps the schema and audit.Record from drifting: the same
// names, in the same order, with matching JSON types.
func TestSchemaMatchesRecord(t *testing.T) {
	var doc struct {
		AdditionalProperties *bool                      `json:"additionalProperties"`
		Required             []string                   `json:"required"`
		Properties           map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema.Schema, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.AdditionalProperties == nil || *doc.AdditionalProperties {
		t.Error("additionalProperties must be false")
	}
	rt := reflect.TypeFor[audit.Record]()
	var tags []string
	for f := range rt.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		tags = append(tags, name)
		raw, ok := doc.Properties[name]
		if !ok {
			t.Errorf("field %s (%s) is not in the schema", f.Name, name)
			continue
		}
		var p struct {
			Type  string `json:"type"`
			Enum  []any  `json:"enum"`
			Const any    `json:"const"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		want := map[reflect.Kind]string{
			reflect.String: "string", reflect.Bool: "boolean", reflect.Int64: "integer", reflect.Slice: "array",
		}[f.Type.Kind()]
		switch {
		case p.Type != "":
			if p.Type != want {
				t.Errorf("%s: schema type %s, Go kind %s", name, p.Type, f.Type.Kind())
			}
		case p.Enum != nil || p.Const != nil:
			if want != "string" {
				t.Errorf("%s: enum/const on a %s field", name, f.Type.Kind())
			}
		default:
			t.Errorf("%s: no type, enum or const", name)
		}
	}
	props, err := schema.Properties()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(props, tags) {
		t.Errorf("schema required (column order) %v\nRecord json tags %v", props, tags)
	}
	if len(doc.Properties) != len(tags) {
		t.Errorf("schema has %d properties, Record %d fields", len(doc.Properties), len(tags))
	}
}

func TestReasonEnumIsTheErrorCodes(t *testing.T) {
	var doc struct {
		Properties struct {
			Reason struct {
				Enum []string `json:"enum"`
			} `json:"reason"`
			Outcome struct {
				Enum []string `json:"enum"`
			} `json:"outcome"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema.Schema, &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{""}
	for _, c := range apperr.Codes {
		want = append(want, string(c))
	}
	if !slices.Equal(doc.Properties.Reason.Enum, want) {
		t.Errorf("reason enum %v, want %v", doc.Properties.Reason.Enum, want)
	}
	outcomes := []string{string(apperr.OutcomeSuccess), string(apperr.OutcomeDenied), string(apperr.OutcomeError)}
	if !slices.Equal(doc.Properties.Outcome.Enum, outcomes) {
		t.Errorf("outcome enum %v, want %v", doc.Properties.Outcome.Enum, outcomes)
	}
}

// TestSinkRecordsValidate writes records of every outcome and reason through the
// file sink and validates the lines as they are on disk.
func TestSinkRecordsValidate(t *testing.T) {
	dir := t.TempDir()
	s, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	recs := []audit.Record{
		audittest.Record(ts),
		audittest.Record(ts, func(r *audit.Record) { r.ScopesProvided, r.ScopesRequired = nil, nil }),
		audittest.Record(ts, func(r *audit.Record) { r.Transport, r.ArgsHMAC = audit.TransportREST, "" }),
		audittest.Record(ts, audittest.Client("https://claude.ai/oauth/mcp-client-metadata")),
		audittest.Record(ts, audittest.Tool("delete_issue"), audittest.Confirmed(true), audittest.Confirmation(audit.ConfirmationFlag)),
		audittest.Record(ts, audittest.Tool("delete_issue"), audittest.Confirmed(true), audittest.Confirmation(audit.ConfirmationElicited),
			audittest.Denied(string(apperr.HumanConfirmationRequired))),
	}
	for _, a := range audit.Actions {
		recs = append(recs, audittest.Record(ts, audittest.Authorization(a), audittest.Client("c_1")))
	}
	for _, c := range apperr.Codes {
		recs = append(recs, audittest.Record(ts, func(r *audit.Record) {
			r.Outcome, r.Reason = string(c.Outcome()), string(c)
		}))
	}
	for _, r := range recs {
		if err := s.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "audit", "dt=*", "hour=*", "*.json"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("files %v, %v", paths, err)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(lines) != len(recs) {
		t.Fatalf("%d lines, wrote %d", len(lines), len(recs))
	}
	for i, l := range lines {
		if err := schema.Validate(l); err != nil {
			t.Errorf("line %d: %v\n%s", i, err, l)
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	good, err := audit.MarshalLine(audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(good); err != nil {
		t.Fatalf("good record rejected: %v", err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		doc  []byte
	}{
		{"extra field", edit(func(m map[string]any) { m["arguments"] = map[string]any{"confirm": true} })},
		{"missing field", edit(func(m map[string]any) { delete(m, "transport") })},
		{"event_id not a ULID", edit(func(m map[string]any) { m["event_id"] = "550e8400-e29b-41d4-a716-446655440000" })},
		{"timestamp without ms", edit(func(m map[string]any) { m["timestamp"] = "2025-06-22T15:30:00Z" })},
		{"timestamp with offset", edit(func(m map[string]any) { m["timestamp"] = "2025-06-22T17:30:00.000+02:00" })},
		{"unknown outcome", edit(func(m map[string]any) { m["outcome"] = "allowed" })},
		{"unknown reason", edit(func(m map[string]any) { m["reason"] = "forbidden" })},
		{"unknown transport", edit(func(m map[string]any) { m["transport"] = "grpc" })},
		{"uppercase digest", edit(func(m map[string]any) { m["args_sha256"] = strings.Repeat("A", 64) })},
		{"short digest", edit(func(m map[string]any) { m["args_sha256"] = "abc" })},
		{"negative duration", edit(func(m map[string]any) { m["duration_ms"] = -1 })},
		{"fractional duration", edit(func(m map[string]any) { m["duration_ms"] = 1.5 })},
		{"null scopes", edit(func(m map[string]any) { m["scopes_provided"] = nil })},
		{"bool as string", edit(func(m map[string]any) { m["confirm_present"] = "true" })},
		{"other version", edit(func(m map[string]any) { m["event_version"] = "2.0" })},
		{"1.1 without event_type", edit(func(m map[string]any) { delete(m, "event_type") })},
		{"1.1 without client_id", edit(func(m map[string]any) { delete(m, "client_id") })},
		{"1.1 without action", edit(func(m map[string]any) { delete(m, "action") })},
		{"unknown event_type", edit(func(m map[string]any) { m["event_type"] = "login" })},
		{"empty event_type", edit(func(m map[string]any) { m["event_type"] = "" })},
		{"tool call with an action", edit(func(m map[string]any) { m["action"] = "token_issued" })},
		{"authorization without action", edit(func(m map[string]any) { m["event_type"] = "authorization" })},
		{"authorization with no action field", edit(func(m map[string]any) {
			m["event_type"] = "authorization"
			delete(m, "action")
		})},
		{"unknown action", edit(func(m map[string]any) { m["event_type"], m["action"] = "authorization", "logged_in" })},
		{"null client_id", edit(func(m map[string]any) { m["client_id"] = nil })},
		{"1.3 without confirmation", edit(func(m map[string]any) { delete(m, "confirmation") })},
		{"unknown confirmation", edit(func(m map[string]any) { m["confirmation"] = "human" })},
		{"null confirmation", edit(func(m map[string]any) { m["confirmation"] = nil })},
		{"confirmation on a read", edit(func(m map[string]any) { m["confirmation"] = "flag" })},
		{"confirmation on an authorization event", edit(func(m map[string]any) {
			m["event_type"], m["action"], m["transport"], m["tool"] = "authorization", "grant_revoked", "oauth", ""
			m["destructive"], m["confirmation"] = true, "elicited"
		})},
		{"1.2 with a confirmation", edit(func(m map[string]any) {
			m["event_version"], m["destructive"], m["confirmation"] = "1.2", true, "flag"
		})},
		{"1.0 with an action", edit(func(m map[string]any) {
			m["event_version"] = "1.0"
			delete(m, "event_type")
			delete(m, "client_id")
			m["action"] = "consent_granted"
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := schema.Validate(tt.doc); err == nil {
				t.Fatalf("schema accepted %s", tt.doc)
			}
		})
	}

	accepted := []struct {
		name string
		doc  []byte
	}{
		{"1.0 record without the 1.1 fields", edit(func(m map[string]any) {
			m["event_version"] = "1.0"
			delete(m, "client_id")
			delete(m, "event_type")
			delete(m, "action")
			m["args_sha256"], m["idempotency_key"] = m["args_hmac"], "k1"
			delete(m, "args_hmac")
			delete(m, "idempotency_key_hmac")
		})},
		{"1.1 record with its plain digest", edit(func(m map[string]any) {
			m["event_version"] = "1.1"
			m["args_sha256"], m["idempotency_key"] = m["args_hmac"], "k1"
			delete(m, "args_hmac")
			delete(m, "idempotency_key_hmac")
		})},
		{"1.2 record without confirmation", edit(func(m map[string]any) {
			m["event_version"] = "1.2"
			delete(m, "confirmation")
		})},
		{"destructive call confirmed by flag", edit(func(m map[string]any) {
			m["tool"], m["read_only"], m["destructive"], m["confirmation"] = "delete_issue", false, true, "flag"
		})},
		{"destructive call elicited", edit(func(m map[string]any) {
			m["tool"], m["read_only"], m["destructive"], m["confirmation"] = "delete_issue", false, true, "elicited"
			m["outcome"], m["reason"] = "denied", "human_confirmation_required"
		})},
		{"oauth client's tool call", edit(func(m map[string]any) { m["client_id"] = "https://claude.ai/oauth/mcp-client-metadata" })},
		{"authorization event", edit(func(m map[string]any) {
			m["event_type"], m["action"], m["transport"], m["tool"] = "authorization", "consent_granted", "oauth", ""
		})},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			if err := schema.Validate(tt.doc); err != nil {
				t.Fatalf("schema rejected %s: %v", tt.doc, err)
			}
		})
	}
}

// TestSchemaVersions: the schema's versions are 1.0, 1.1 and the one written now;
// the columns every version has are required unconditionally, the 1.1 fields and
// the HMACs of every record past 1.1, and a record past 1.1 never carries the plain
// digest or the key in clear.
func TestSchemaVersions(t *testing.T) {
	var doc struct {
		Required   []string `json:"required"`
		Properties struct {
			EventVersion struct {
				Enum []string `json:"enum"`
			} `json:"event_version"`
		} `json:"properties"`
		AllOf []struct {
			If struct {
				Properties struct {
					EventVersion struct {
						Enum []string `json:"enum"`
					} `json:"event_version"`
				} `json:"properties"`
			} `json:"if"`
			Else struct {
				Required []string `json:"required"`
			} `json:"else"`
		} `json:"allOf"`
	}
	if err := json.Unmarshal(schema.Schema, &doc); err != nil {
		t.Fatal(err)
	}
	if want := []string{audit.EventVersion10, audit.EventVersion11, audit.EventVersion12, audit.EventVersion}; !slices.Equal(doc.Properties.EventVersion.Enum, want) {
		t.Errorf("event_version enum %v, want %v", doc.Properties.EventVersion.Enum, want)
	}
	props, err := schema.Properties()
	if err != nil {
		t.Fatal(err)
	}
	since12 := []string{"idempotency_key_hmac", "args_hmac", "client_id", "event_type", "action"}
	since13 := []string{"confirmation"}
	legacy := []string{"args_sha256", "idempotency_key"}
	var conditional12, conditional13 []string
	for _, a := range doc.AllOf {
		switch {
		case slices.Equal(a.If.Properties.EventVersion.Enum, []string{audit.EventVersion10, audit.EventVersion11}):
			conditional12 = append(conditional12, a.Else.Required...)
		case slices.Equal(a.If.Properties.EventVersion.Enum, []string{audit.EventVersion10, audit.EventVersion11, audit.EventVersion12}):
			conditional13 = append(conditional13, a.Else.Required...)
		}
	}
	if !slices.Equal(conditional12, since12) {
		t.Errorf("required of records past 1.1: %v, want %v", conditional12, since12)
	}
	if !slices.Equal(conditional13, since13) {
		t.Errorf("required of records past 1.2: %v, want %v", conditional13, since13)
	}
	want := slices.DeleteFunc(slices.Clone(props), func(p string) bool {
		return slices.Contains(since12, p) || slices.Contains(since13, p) || slices.Contains(legacy, p)
	})
	if !slices.Equal(doc.Required, want) {
		t.Errorf("required %v\nwant     %v (the columns of every version)", doc.Required, want)
	}
	// A 1.2 record with the plain digest or the key in clear is refused.
	rec := audittest.Record(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	line, _ := audit.MarshalLine(rec)
	for _, leak := range []string{`,"args_sha256":"` + rec.ArgsHMAC + `"}`, `,"idempotency_key":"k1"}`} {
		bad := append(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("}")), leak...)
		if err := schema.Validate(bad); err == nil {
			t.Errorf("schema accepted a 1.2 record with %s", leak)
		}
	}
}

// TestLegacyLinesAreTheExamples: the lines audittest writes as the 1.0 and 1.1
// writers did, which the tests of every reader use, are those writers' lines: the
// examples of those versions, byte for byte once compacted.
func TestLegacyLinesAreTheExamples(t *testing.T) {
	for _, tc := range []struct {
		example string
		line    func(audit.Record) []byte
	}{
		{"examples/get_issue_success_v1_0.json", audittest.LegacyLine},
		{"examples/get_issue_success_v1_1.json", audittest.V11Line},
	} {
		b, err := os.ReadFile(tc.example)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, b); err != nil {
			t.Fatal(err)
		}
		r, err := audit.UnmarshalLine(b)
		if err != nil {
			t.Fatalf("%s: %v", tc.example, err)
		}
		if got := bytes.TrimSuffix(tc.line(r), []byte("\n")); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s:\n got %s\nwant %s", tc.example, got, want.Bytes())
		}
	}
}

// TestEventEnumsAreTheConstants keeps the schema's event_type, action and transport
// enums equal to the Go constants the writers use.
func TestEventEnumsAreTheConstants(t *testing.T) {
	var doc struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema.Schema, &doc); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"event_type":   {audit.EventToolCall, audit.EventAuthorization},
		"action":       append([]string{""}, audit.Actions...),
		"transport":    {audit.TransportMCP, audit.TransportREST, audit.TransportOAuth},
		"confirmation": audit.Confirmations,
	} {
		if got := doc.Properties[name].Enum; !slices.Equal(got, want) {
			t.Errorf("%s enum %v, want %v", name, got, want)
		}
	}
}

// TestGoValidateAgreesWithSchema: the Go check a sink runs and the schema agree on
// the event fields, for every event type and action and the edge cases between them.
func TestGoValidateAgreesWithSchema(t *testing.T) {
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	var recs []audit.Record
	for _, et := range []string{"", audit.EventToolCall, audit.EventAuthorization, "other"} {
		for _, action := range append([]string{"", "other"}, audit.Actions...) {
			for _, tr := range []string{audit.TransportMCP, audit.TransportOAuth, "grpc"} {
				recs = append(recs, audittest.Record(ts, func(r *audit.Record) {
					r.EventType, r.Action, r.Transport, r.ClientID = et, action, tr, "client-1"
				}))
			}
		}
	}
	for _, r := range recs {
		goErr := r.Validate()
		schemaErr := schema.ValidateRecord(r)
		if (goErr == nil) != (schemaErr == nil) {
			t.Errorf("event_type %q action %q transport %q: Validate %v, schema %v",
				r.EventType, r.Action, r.Transport, goErr, schemaErr)
		}
	}
	// confirmation: every value, on every kind of record and version that may or
	// may not carry one.
	for _, c := range append([]string{"other"}, audit.Confirmations...) {
		for _, destructive := range []bool{false, true} {
			for _, et := range []string{audit.EventToolCall, audit.EventAuthorization} {
				for _, v := range []string{audit.EventVersion12, audit.EventVersion} {
					r := audittest.Record(ts, audittest.Tool("delete_issue"), func(r *audit.Record) {
						r.Destructive, r.Confirmation, r.EventVersion = destructive, c, v
						if et == audit.EventAuthorization {
							r.EventType, r.Action, r.Transport = et, audit.ActionGrantRevoked, audit.TransportOAuth
						}
					})
					goErr := r.Validate()
					schemaErr := schema.ValidateRecord(r)
					if (goErr == nil) != (schemaErr == nil) {
						t.Errorf("confirmation %q destructive %v event_type %q version %s: Validate %v, schema %v",
							c, destructive, et, v, goErr, schemaErr)
					}
				}
			}
		}
	}
}

// TestSpecExampleGolden builds the spec's own audit example (a delete_issue denied
// for destructive_flag_missing) the way the guard does, and compares the encoded
// line with testdata/spec_example.golden.json.
func TestSpecExampleGolden(t *testing.T) {
	const issueID = "550e8400-e29b-41d4-a716-446655440000"
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	code := apperr.DestructiveFlagMissing
	canonicalArgs := `{"issue_id":"` + issueID + `"}` // the spec's call without confirm
	sum := sha256.Sum256([]byte(canonicalArgs))
	rec := audit.Record{
		EventID:         "01JYC45F604AFAE8ATNFBXZBSG",
		EventVersion:    audit.EventVersion,
		Timestamp:       audit.FormatTime(ts),
		Tool:            "delete_issue",
		Outcome:         string(code.Outcome()),
		Reason:          string(code),
		ScopesProvided:  []string{"issues:write"},
		ScopesRequired:  []string{"issues:write"},
		WorkspaceID:     "demo",
		UserID:          "dev",
		TokenID:         "tok_spec_example",
		ReadOnly:        false,
		Destructive:     true,
		ConfirmPresent:  false,
		ResourceID:      issueID,
		JSONRPCID:       "1",
		ProtocolVersion: "2025-11-25",
		ArgsHMAC:        hex.EncodeToString(sum[:]),
		Transport:       audit.TransportMCP,
		EventType:       audit.EventToolCall,
	}
	checkULIDTime(t, rec)
	line, err := audit.MarshalLine(rec)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "spec_example.golden.json")
	if *update {
		if err := os.WriteFile(golden, line, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(line, want) {
		t.Errorf("encoded record differs from %s (go test -update to accept)\ngot  %s\nwant %s", golden, line, want)
	}
	if err := schema.Validate(want); err != nil {
		t.Fatalf("golden record breaks the schema: %v", err)
	}

	// The spec's five fields, with the spec's names and values.
	var m map[string]any
	if err := json.Unmarshal(want, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{
		"tool":            "delete_issue",
		"outcome":         "denied",
		"reason":          "destructive_flag_missing",
		"scopes_provided": []any{"issues:write"},
	} {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %#v, spec says %#v", k, m[k], v)
		}
	}
	// The spec writes 2025-06-22T15:30:00Z; records always carry milliseconds, so the
	// same instant is 2025-06-22T15:30:00.000Z.
	specTime, err := time.Parse(time.RFC3339, "2025-06-22T15:30:00Z")
	if err != nil {
		t.Fatal(err)
	}
	got, err := time.Parse(time.RFC3339, m["timestamp"].(string))
	if err != nil || !got.Equal(specTime) {
		t.Errorf("timestamp = %v (%v), spec says %s", m["timestamp"], err, specTime)
	}
}

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
		})
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
		audittest.Record(ts, func(r *audit.Record) { r.Transport, r.ArgsSHA256 = audit.TransportREST, "" }),
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := schema.Validate(tt.doc); err == nil {
				t.Fatalf("schema accepted %s", tt.doc)
			}
		})
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
		ArgsSHA256:      hex.EncodeToString(sum[:]),
		Transport:       audit.TransportMCP,
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

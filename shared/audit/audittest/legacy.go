package audittest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
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

// The columns of the records of the old versions, in the order their writers put
// them, in a JSON line and in a compacted Parquet file alike. They are frozen: they
// are what the files of those versions hold, whatever Record becomes (the examples
// of 1.0 and 1.1 records in events/audit are lines of those writers, and a test there
// holds LegacyLine and V11Line to them). Each names a field of audit.Record by its
// JSON name, whose type it has.
var (
	v10Columns = []string{
		"event_id", "event_version", "timestamp", "tool", "outcome", "reason",
		"scopes_provided", "scopes_required", "workspace_id", "user_id", "token_id",
		"read_only", "destructive", "confirm_present", "resource_id", "idempotency_key",
		"idempotent_replay", "request_id", "jsonrpc_id", "client_name", "client_version",
		"protocol_version", "user_agent", "source_ip", "args_sha256", "duration_ms",
		"transport",
	}
	// 1.1 appended the OAuth client, the event type and the action.
	v11Columns = append(slices.Clip(v10Columns), "client_id", "event_type", "action")

	v10Row, v11Row = rowType(v10Columns), rowType(v11Columns)
)

// rowType is the struct an old writer encoded: one field per column, in order, with
// the type and the Parquet tag of Record's field of that JSON name, so that
// encoding/json and parquet-go write it as that writer did.
func rowType(columns []string) reflect.Type {
	fields := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[audit.Record]()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = f
	}
	row := make([]reflect.StructField, len(columns))
	for i, c := range columns {
		f, ok := fields[c]
		if !ok {
			panic("audittest: audit.Record has no field for the legacy column " + c)
		}
		tag := fmt.Sprintf(`json:%q parquet:%q`, c, f.Tag.Get("parquet"))
		row[i] = reflect.StructField{Name: f.Name, Type: f.Type, Tag: reflect.StructTag(tag)}
	}
	return reflect.StructOf(row)
}

// asRow is r as a value of the row type typ: the fields of r that typ has.
func asRow(typ reflect.Type, r audit.Record) any {
	src, row := reflect.ValueOf(r), reflect.New(typ).Elem()
	for i := range typ.NumField() {
		row.Field(i).Set(src.FieldByName(typ.Field(i).Name))
	}
	return row.Interface()
}

func legacyLine(r audit.Record, version string, typ reflect.Type) []byte {
	r = AsLegacy(r, version)
	if r.ScopesProvided == nil {
		r.ScopesProvided = []string{}
	}
	if r.ScopesRequired == nil {
		r.ScopesRequired = []string{}
	}
	b, err := json.Marshal(asRow(typ, r))
	if err != nil {
		panic(err) // strings, bools and an int64 always encode
	}
	return append(b, '\n')
}

// LegacyLine encodes r as a version 1.0 writer did: event_version "1.0", the plain
// args_sha256 and idempotency_key, and no client_id, event_type or action (the three
// fields 1.1 appended to the line). See AsLegacy for what a reader makes of it.
func LegacyLine(r audit.Record) []byte { return legacyLine(r, audit.EventVersion10, v10Row) }

// V11Line encodes r as a version 1.1 writer did: args_sha256 and idempotency_key
// where 1.2 has their HMACs.
func V11Line(r audit.Record) []byte { return legacyLine(r, audit.EventVersion11, v11Row) }

// V12Line encodes r as a version 1.2 writer did: no confirmation (added in 1.3).
func V12Line(r audit.Record) []byte {
	r.EventVersion, r.Confirmation = audit.EventVersion12, ""
	line := audit.AppendLine(nil, r)
	return bytes.Replace(line, []byte(`,"confirmation":""`), nil, 1)
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
	w := parquet.NewWriter(f, parquet.SchemaOf(reflect.Zero(v10Row).Interface()), parquet.Compression(&parquet.Zstd))
	for _, r := range recs {
		if err := w.Write(asRow(v10Row, AsLegacy(r, audit.EventVersion10))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

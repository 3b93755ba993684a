package audit_test

import (
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

func TestFormatTime(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC), "2025-06-22T15:30:00.000Z"},
		{time.Date(2025, 6, 22, 17, 30, 0, 123456789, time.FixedZone("CEST", 2*3600)), "2025-06-22T15:30:00.123Z"},
		{time.Date(2025, 12, 31, 23, 59, 59, 999999999, time.UTC), "2025-12-31T23:59:59.999Z"},
	}
	for _, tt := range tests {
		got := audit.FormatTime(tt.in)
		if got != tt.want {
			t.Errorf("FormatTime(%v) = %s, want %s", tt.in, got, tt.want)
		}
		back, err := audit.ParseTime(got)
		if err != nil || !back.Equal(tt.in.Truncate(time.Millisecond)) {
			t.Errorf("ParseTime(%s) = %v, %v", got, back, err)
		}
	}
	for _, bad := range []string{"", "2025-06-22T15:30:00Z", "2025-06-22T15:30:00.000+02:00", "2025-06-22 15:30:00.000Z"} {
		if _, err := audit.ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

func TestNewEventIDConcurrentUniqueAndOrdered(t *testing.T) {
	const goroutines, perG = 16, 500
	at := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	var mu sync.Mutex
	var all []string
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			var mine []string
			for range perG {
				mine = append(mine, audit.NewEventIDAt(at))
			}
			// Within one goroutine, ids minted in the same millisecond increase.
			if !sort.StringsAreSorted(mine) {
				t.Error("ids of one millisecond are not monotonic")
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	seen := make(map[string]bool, len(all))
	for _, id := range all {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		u, err := ulid.ParseStrict(id)
		if err != nil {
			t.Fatal(err)
		}
		if !ulid.Time(u.Time()).Equal(at) {
			t.Fatalf("id %s has time %v", id, ulid.Time(u.Time()))
		}
	}
	if _, err := ulid.ParseStrict(audit.NewEventID()); err != nil {
		t.Fatal(err)
	}
}

// TestNewEventIDAtOutOfRange: a time ULID cannot hold is not a panic and not an
// invalid id; the id falls back to the current time. Ids of times in range carry
// them exactly and increase within the millisecond.
func TestNewEventIDAtOutOfRange(t *testing.T) {
	tests := []struct {
		name    string
		at      time.Time
		wantNow bool
	}{
		{"epoch", time.Unix(0, 0), false},
		{"recent", time.Date(2025, 6, 22, 15, 30, 0, 123e6, time.UTC), false},
		{"before 1970", time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC), true},
		{"after 10889", time.Date(10890, 1, 1, 0, 0, 0, 0, time.UTC), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev string
			for range 300 {
				before := time.Now().Truncate(time.Millisecond)
				id := audit.NewEventIDAt(tt.at)
				after := time.Now()
				u, err := ulid.ParseStrict(id)
				if err != nil {
					t.Fatalf("id %q: %v", id, err)
				}
				got := ulid.Time(u.Time())
				switch {
				case tt.wantNow && (got.Before(before) || got.After(after)):
					t.Fatalf("id %s has time %v, want the current time", id, got)
				case !tt.wantNow && !got.Equal(tt.at):
					t.Fatalf("id %s has time %v, want %v", id, got, tt.at)
				case !tt.wantNow && id <= prev:
					t.Fatalf("id %s after %s: not monotonic", id, prev)
				}
				prev = id
			}
		})
	}
}

func TestMarshalUnmarshalLine(t *testing.T) {
	r := audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC), func(r *audit.Record) {
		r.ScopesProvided, r.ScopesRequired = nil, nil
		r.UserAgent = "line\nbreak \u2028 <html>"
	})
	line, err := audit.MarshalLine(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(line), "\n") != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("not one line: %q", line)
	}
	if !strings.Contains(string(line), `"scopes_provided":[]`) {
		t.Errorf("nil scopes not written as []: %s", line)
	}
	back, err := audit.UnmarshalLine(line)
	if err != nil {
		t.Fatal(err)
	}
	r.ScopesProvided, r.ScopesRequired = []string{}, []string{}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip\n got %+v\nwant %+v", back, r)
	}
}

func TestUnmarshalLineRejects(t *testing.T) {
	good, err := audit.MarshalLine(audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	body := strings.TrimSuffix(string(good), "\n")
	tests := map[string]string{
		"empty":            "",
		"not json":         "hello",
		"array":            "[]",
		"trailing record":  body + body,
		"trailing garbage": body + "x",
		"unknown field":    strings.Replace(body, `"tool"`, `"extra":1,"tool"`, 1),
		"bad outcome":      strings.Replace(body, `"outcome":"success"`, `"outcome":"ok"`, 1),
		"bad reason":       strings.Replace(body, `"reason":""`, `"reason":"nope"`, 1),
		"bad timestamp":    strings.Replace(body, ".000Z", "Z", 1),
		"truncated":        body[:len(body)/2],
		"bad transport":    strings.Replace(body, `"transport":"mcp"`, `"transport":"grpc"`, 1),
		// A 1.1 writer must say what the record is; only 1.0 records imply it.
		"1.1 without event_type": strings.Replace(body, `,"event_type":"tool_call"`, ``, 1),
		"empty event_type":       strings.Replace(body, `"event_type":"tool_call"`, `"event_type":""`, 1),
		"unknown event_type":     strings.Replace(body, `"event_type":"tool_call"`, `"event_type":"login"`, 1),
		"tool call with action":  strings.Replace(body, `"action":""`, `"action":"token_issued"`, 1),
		"authorization without action": strings.Replace(body, `"event_type":"tool_call"`,
			`"event_type":"authorization"`, 1),
		"unknown action": strings.Replace(strings.Replace(body, `"event_type":"tool_call"`,
			`"event_type":"authorization"`, 1), `"action":""`, `"action":"logged_in"`, 1),
		"1.0 with an action": legacyLine + `,"action":"consent_granted"}`,
	}
	for name, line := range tests {
		if _, err := audit.UnmarshalLine([]byte(line)); err == nil {
			t.Errorf("%s: accepted %q", name, line)
		}
	}
}

// legacyLine is a version 1.0 record as the 1.0 encoder wrote it (the spec's
// example), without its closing brace: no client_id, event_type or action.
const legacyLine = `{"event_id":"01JYC45F604AFAE8ATNFBXZBSG","event_version":"1.0","timestamp":"2025-06-22T15:30:00.000Z",` +
	`"tool":"delete_issue","outcome":"denied","reason":"destructive_flag_missing","scopes_provided":["issues:write"],` +
	`"scopes_required":["issues:write"],"workspace_id":"demo","user_id":"dev","token_id":"tok_spec_example",` +
	`"read_only":false,"destructive":true,"confirm_present":false,"resource_id":"550e8400-e29b-41d4-a716-446655440000",` +
	`"idempotency_key":"","idempotent_replay":false,"request_id":"","jsonrpc_id":"1","client_name":"","client_version":"",` +
	`"protocol_version":"2025-11-25","user_agent":"","source_ip":"",` +
	`"args_sha256":"5bf39f2c20280c775cace0f9fe635fe0e99a3c0c925ee278b54e0ea70e28b509","duration_ms":0,"transport":"mcp"`

// TestUnmarshalLegacyLine: a 1.0 line decodes as the tool call it was, of a personal
// token, and keeps its version.
func TestUnmarshalLegacyLine(t *testing.T) {
	for name, line := range map[string]string{
		"as written":              legacyLine + "}\n",
		"with explicit tool_call": legacyLine + `,"event_type":"tool_call","client_id":""}`,
	} {
		t.Run(name, func(t *testing.T) {
			r, err := audit.UnmarshalLine([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			if r.EventVersion != audit.EventVersion10 || r.EventType != audit.EventToolCall || r.ClientID != "" || r.Action != "" {
				t.Errorf("decoded version %q event_type %q client_id %q action %q", r.EventVersion, r.EventType, r.ClientID, r.Action)
			}
			if r.Tool != "delete_issue" || r.Reason != "destructive_flag_missing" || !r.Destructive {
				t.Errorf("1.0 fields lost: %+v", r)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	tests := []struct {
		name          string
		in            audit.Record
		wantEventType string
	}{
		{"1.0 without event_type is a tool call", audittest.Record(ts, func(r *audit.Record) {
			*r = audittest.AsLegacy(*r, audit.EventVersion10)
			r.EventType = ""
		}), audit.EventToolCall},
		{"1.0 keeps an explicit event_type", audittest.Record(ts, audittest.Authorization(audit.ActionTokenIssued), func(r *audit.Record) {
			r.EventVersion = audit.EventVersion10
		}), audit.EventAuthorization},
		{"1.1 without event_type stays empty (and fails Validate)", audittest.Record(ts, func(r *audit.Record) {
			r.EventType = ""
		}), ""},
		{"nil arrays", audittest.Record(ts, func(r *audit.Record) { r.ScopesProvided, r.ScopesRequired = nil, nil }),
			audit.EventToolCall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := audit.Normalize(tt.in)
			if got.EventType != tt.wantEventType {
				t.Errorf("event_type %q, want %q", got.EventType, tt.wantEventType)
			}
			if got.ScopesProvided == nil || got.ScopesRequired == nil {
				t.Error("nil arrays kept")
			}
			if got.EventVersion != tt.in.EventVersion {
				t.Errorf("event_version changed to %q", got.EventVersion)
			}
			if (got.Validate() == nil) != (tt.wantEventType != "") {
				t.Errorf("Validate() = %v", got.Validate())
			}
		})
	}
}

func FuzzUnmarshalLine(f *testing.F) {
	good, _ := audit.MarshalLine(audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)))
	f.Add(good)
	f.Add([]byte(legacyLine + "}"))
	authz, _ := audit.MarshalLine(audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC),
		audittest.Authorization(audit.ActionRefreshReuseDetected), audittest.Client("https://c.example/m")))
	f.Add(authz)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"event_id":null}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := audit.UnmarshalLine(line)
		if err != nil {
			return
		}
		// Whatever decodes is a valid record that survives a round trip unchanged.
		if err := r.Validate(); err != nil {
			t.Fatalf("decoded an invalid record: %v", err)
		}
		again, err := audit.MarshalLine(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := audit.UnmarshalLine(again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the record")
		}
	})
}

// BenchmarkNewEventIDAtParallel mints ids from many goroutines at once, as a
// loaded server does (one per finished call).
func BenchmarkNewEventIDAtParallel(b *testing.B) {
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = audit.NewEventIDAt(time.Now())
		}
	})
}

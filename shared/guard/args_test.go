package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

func TestCanonicalDigest(t *testing.T) {
	cases := []struct {
		a, b string
		same bool
	}{
		{`{"a":1,"b":[1,2]}`, `{ "b" : [1,2], "a" : 1 }`, true},
		{`{"a":1}`, `{"a":1,"idempotency_key":"k"}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":"<&>"}`, `{"a":"\u003c\u0026\u003e"}`, true},
		{`{"a":1}`, `{"a":1.0}`, false}, // literal numbers are kept as written
	}
	for _, c := range cases {
		da := parseArgs([]byte(c.a), false).digestWithout(idempotencyKeyArg)
		db := parseArgs([]byte(c.b), false).digestWithout(idempotencyKeyArg)
		if (da == db) != c.same {
			t.Errorf("digest(%s) == digest(%s) is %v, want %v", c.a, c.b, da == db, c.same)
		}
	}
}

func TestDepthExceeds(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{strings.Repeat("[", 32) + strings.Repeat("]", 32), false},
		{strings.Repeat("[", 33) + strings.Repeat("]", 33), true},
		{`{"a":"` + strings.Repeat("[", 100) + `"}`, false}, // brackets inside strings do not nest
		{`{"a":"\"` + strings.Repeat("{", 100) + `"}`, false},
	}
	for _, c := range cases {
		if got := depthExceeds([]byte(c.in), MaxArgsDepth); got != c.want {
			t.Errorf("depthExceeds(%.40s...) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestIdempotencyInProgress: a key claimed by a call still running answers
// conflict, with a message that says so.
func TestIdempotencyInProgress(t *testing.T) {
	w := gt.NewWorld(t)
	sink := &gt.MemorySink{}
	g := New(Config{Catalog: w.Catalog, Store: w.Store, Audit: sink})
	args := `{"title":"Slow","idempotency_key":"busy"}`
	now := time.Now().UTC()
	err := w.Store.CreateIdempotency(context.Background(), store.IdempotencyRecord{
		IdempotencyKey: store.IdempotencyKey{WorkspaceID: gt.WS, UserID: gt.Admin, Tool: "create_issue", KeyHash: sha256Hex([]byte("busy"))},
		State:          store.IdemPending,
		ArgsDigest:     parseArgs([]byte(args), false).digestWithout(idempotencyKeyArg),
		CreatedAt:      now,
		ExpiresAt:      now.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	res := g.Call(context.Background(), Request{Principal: gt.Principal(gt.WS, gt.Admin, "issues:write"), Tool: "create_issue", Args: json.RawMessage(args), Transport: audit.TransportREST})
	if res.Err == nil || res.Err.Code != apperr.Conflict || res.Err.Message != "a call with this idempotency key is in progress" {
		t.Fatalf("result = %v, want conflict in progress", res.Err)
	}
}

// FuzzParseArgs: any bytes give either a decoded object or a problem, never a
// panic, and an object's canonical form decodes back to the same object.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{}`, `null`, ``, `[1]`, `{"a":{"b":[1,"x",null,true]}}`, `{"confirm":true}`, `{"a":1e400}`, `"\u0000"`, `{"a":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a := parseArgs(b, false)
		if (a.obj == nil) == (a.problem == "") {
			t.Fatalf("obj=%v problem=%q: exactly one must be set", a.obj != nil, a.problem)
		}
		_ = a.confirmed()
		_ = a.digestWithout(idempotencyKeyArg)
		if a.obj != nil {
			again := parseArgs(a.canonical, false)
			if again.obj == nil || !bytes.Equal(again.canonical, a.canonical) {
				t.Fatalf("canonical form is not stable: %q -> %q", a.canonical, again.canonical)
			}
		}
	})
}

// quotedRE matches a Go-quoted string, as %q writes one.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// FuzzCall drives whole calls with arbitrary argument bytes: one audit record each,
// only documented codes, and invalid_arguments messages free of Go syntax.
func FuzzCall(f *testing.F) {
	for _, s := range []string{`{}`, `{"title":"x"}`, `{"title":5}`, `{"issue_id":"ACME-1"}`, `{"limit":-1}`, `[]`, `{"labels":[[[]]]}`} {
		f.Add("create_issue", []byte(s))
		f.Add("list_issues", []byte(s))
		f.Add("update_issue", []byte(s))
	}
	w := gt.NewWorld(f)
	sink := &gt.MemorySink{}
	g := New(Config{Catalog: w.Catalog, Store: w.Store, Audit: sink})
	p := gt.Principal(gt.WS, gt.Admin, "issues:read", "issues:write")
	f.Fuzz(func(t *testing.T, tool string, b []byte) {
		before := len(sink.Records())
		res := g.Call(context.Background(), Request{Principal: p, Tool: tool, Args: b, Transport: audit.TransportREST})
		if n := len(sink.Records()) - before; n != 1 {
			t.Fatalf("%d records", n)
		}
		if res.Err != nil {
			if res.Err.Code == apperr.InternalError {
				t.Fatalf("internal error for %s %q: %v", tool, b, res.Err)
			}
			// The message quotes the caller's own field names (%q); Go syntax may
			// appear only inside those.
			if own := quotedRE.ReplaceAllString(res.Err.Message, `""`); strings.Contains(own, "&{") || strings.Contains(own, "urn:") {
				t.Fatalf("Go-ish message: %q", res.Err.Message)
			}
		}
	})
}

// TestNamesCheckedSkipsTheRepeat: the repeated-name check runs once per request. A
// transport that has checked the whole message (/mcp) says so, and the guard does
// not look again; without it (REST, whose body is the arguments) the guard looks.
func TestNamesCheckedSkipsTheRepeat(t *testing.T) {
	const dup = `{"title":"a","title":"b"}`
	if a := parseArgs([]byte(dup), false); !a.ambiguous {
		t.Errorf("unchecked: %q not refused as ambiguous (problem %q)", dup, a.problem)
	}
	if a := parseArgs([]byte(dup), true); a.ambiguous || a.problem != "" {
		t.Errorf("checked by the transport: ambiguous %v, problem %q", a.ambiguous, a.problem)
	}
}

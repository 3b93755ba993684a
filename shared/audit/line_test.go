package audit_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

// marshalLineJSON is MarshalLine as it was before AppendLine: encoding/json plus a
// newline, nil arrays as []. It is the oracle the hand-written encoder must match
// byte for byte.
func marshalLineJSON(t testing.TB, r audit.Record) []byte {
	t.Helper()
	if r.ScopesProvided == nil {
		r.ScopesProvided = []string{}
	}
	if r.ScopesRequired == nil {
		r.ScopesRequired = []string{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return append(b, '\n')
}

// distinctFields returns a record whose every string field holds its own JSON name
// and whose flags are all true, so a field written under the wrong key or in the
// wrong place shows as a difference.
func distinctFields() audit.Record {
	var r audit.Record
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		name := v.Type().Field(i).Tag.Get("json")
		switch f.Kind() {
		case reflect.String:
			f.SetString(name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int64:
			f.SetInt(int64(i))
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{name, name + "-2"}))
		}
	}
	return r
}

func TestAppendLineMatchesJSON(t *testing.T) {
	ts := time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC)
	var allASCII strings.Builder
	for b := range 0x80 {
		allASCII.WriteByte(byte(b))
	}
	tests := []struct {
		name string
		rec  audit.Record
	}{
		{"zero record", audit.Record{}},
		{"typical", audittest.Record(ts)},
		{"every field distinct", distinctFields()},
		{"authorization event", audittest.Record(ts, audittest.Authorization(audit.ActionConsentGranted),
			audittest.Client("https://claude.ai/oauth/mcp-oauth-client-metadata"))},
		{"oauth client id needing escapes", audittest.Record(ts, audittest.Client("https://c.example/<m>?a=1&b=\u2028"))},
		{"denied with empty scopes", audittest.Record(ts, audittest.Denied("insufficient_scope"), func(r *audit.Record) {
			r.ScopesProvided, r.ScopesRequired = []string{}, nil
		})},
		{"one empty scope", audittest.Record(ts, func(r *audit.Record) { r.ScopesProvided = []string{""} })},
		{"scopes needing escapes", audittest.Record(ts, func(r *audit.Record) {
			r.ScopesProvided = []string{`a"b`, `c\d`, "e<f>&g", "\x00"}
		})},
		{"every ASCII byte", audittest.Record(ts, func(r *audit.Record) { r.UserAgent = allASCII.String() })},
		{"html", audittest.Record(ts, func(r *audit.Record) { r.ClientName = `</script><script>alert(1)&x=1</script>` })},
		{"line and paragraph separators", audittest.Record(ts, func(r *audit.Record) {
			r.UserAgent = "a\u2028b\u2029c\u2027d\u202ae"
		})},
		{"valid multi-byte", audittest.Record(ts, func(r *audit.Record) { r.ClientName = "café 東京 🦀 \u00a0\ufeff\U0010ffff" })},
		{"invalid UTF-8", audittest.Record(ts, func(r *audit.Record) {
			r.UserAgent = "a\x80b\xffc\xc0\xafd\xed\xa0\x80e\xe2\x80"
			r.JSONRPCID = "\xf4\x90\x80\x80" // above U+10FFFF
			r.RequestID = "\xe2"             // truncated at the end
		})},
		{"replacement character itself", audittest.Record(ts, func(r *audit.Record) { r.ClientVersion = "\ufffd" })},
		{"escapes at both ends", audittest.Record(ts, func(r *audit.Record) { r.IdempotencyKey = "\n\"x\"\t" })},
		{"max duration", audittest.Record(ts, func(r *audit.Record) { r.DurationMS = math.MaxInt64 })},
		{"min duration", audittest.Record(ts, func(r *audit.Record) { r.DurationMS = math.MinInt64 })},
		{"negative duration", audittest.Record(ts, func(r *audit.Record) { r.DurationMS = -1 })},
		{"long user agent", audittest.Record(ts, func(r *audit.Record) { r.UserAgent = strings.Repeat("Mozilla/5.0 <&> ", 200) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := marshalLineJSON(t, tt.rec)
			got, err := audit.MarshalLine(tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("MarshalLine differs from encoding/json\n got %q\nwant %q", got, want)
			}
			// Appending keeps what dst held, with or without spare capacity.
			for _, prefix := range [][]byte{[]byte("prefix\n"), make([]byte, 3, 4096)} {
				app := audit.AppendLine(bytes.Clone(prefix), tt.rec)
				if !bytes.Equal(app, append(bytes.Clone(prefix), want...)) {
					t.Fatalf("AppendLine after %q\n got %q\nwant %q", prefix, app, want)
				}
			}
		})
	}
}

// TestAppendLineNoAllocations pins the point of AppendLine: with room in dst, encoding
// a record allocates nothing.
func TestAppendLineNoAllocations(t *testing.T) {
	r := audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC), func(r *audit.Record) {
		r.UserAgent = "escapes <&> \n \u2028 \xff"
	})
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = audit.AppendLine(buf[:0], r) }); n != 0 {
		t.Errorf("AppendLine allocates %v times per record, want 0", n)
	}
}

func FuzzAppendLineMatchesJSON(f *testing.F) {
	f.Add("01JYC45F604AFAE8ATNFBXZBSG", "get_issue", "issues:read,issues:write", int64(3), uint8(0b1010))
	f.Add("<script>&amp;</script>", "a\u2028b\u2029", "", int64(-1), uint8(0xff))
	f.Add("\x00\x1f\x7f\"\\", "\xff\xfe\xed\xa0\x80\xc0\xaf", ",,", int64(math.MinInt64), uint8(1))
	f.Add("", "", "\xe2\x80", int64(math.MaxInt64), uint8(0))
	f.Fuzz(func(t *testing.T, a, b, scopes string, duration int64, flags uint8) {
		// Each string field gets a different mix of the inputs, so that the fuzzer's
		// strings land in every position, next to each other and alone.
		pick := func(i int) string {
			switch i % 4 {
			case 0:
				return a
			case 1:
				return b
			case 2:
				return a + b
			}
			return b + a
		}
		var r audit.Record
		v := reflect.ValueOf(&r).Elem()
		for i := range v.NumField() {
			switch fv := v.Field(i); fv.Kind() {
			case reflect.String:
				fv.SetString(pick(i))
			case reflect.Bool:
				fv.SetBool(flags&(1<<(i%8)) != 0)
			case reflect.Int64:
				fv.SetInt(duration)
			case reflect.Slice:
				// nil, empty and non-empty arrays all occur.
				switch {
				case flags&0x10 != 0 && i%2 == 0:
					fv.Set(reflect.ValueOf([]string{}))
				case scopes != "":
					fv.Set(reflect.ValueOf(strings.Split(scopes, ",")))
				}
			}
		}
		want := marshalLineJSON(t, r)
		got, err := audit.MarshalLine(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("MarshalLine differs from encoding/json\n got %q\nwant %q", got, want)
		}
	})
}

func BenchmarkMarshalLine(b *testing.B) {
	r := audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC))
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := audit.MarshalLine(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			marshalLineJSON(b, r)
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	r := audittest.Record(time.Date(2025, 6, 22, 15, 30, 0, 0, time.UTC))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

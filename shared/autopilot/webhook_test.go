package autopilot

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var testSecret = []byte("s3cret-for-tests")

func testJob() Job {
	return Job{
		RunID: "01JRUN0000000000000000000A", WorkspaceID: "demo", IssueID: "8f0e2c1a-0000-4000-8000-000000000001",
		IssueKey: "AAC-7", Instructions: "fix the flaky test", RequestedBy: "dev",
		CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
	}
}

// receiver is a loopback agent runner that checks every request the way a real one
// must (signature over the raw body, idempotency key, content type) and answers with
// the scripted statuses in order, repeating the last one.
type receiver struct {
	t        *testing.T
	mu       sync.Mutex
	statuses []int
	header   http.Header // extra response headers
	requests int
	bodies   [][]byte
	keys     []string
	badSig   int
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rv.t.Errorf("read body: %v", err)
	}
	rv.mu.Lock()
	n := rv.requests
	rv.requests++
	rv.bodies = append(rv.bodies, body)
	rv.keys = append(rv.keys, r.Header.Get(HeaderIdempotencyKey))
	if Verify(testSecret, body, r.Header.Get(HeaderSignature), time.Now()) != nil {
		rv.badSig++
	}
	status := rv.statuses[min(n, len(rv.statuses)-1)]
	rv.mu.Unlock()

	if r.Method != http.MethodPost {
		rv.t.Errorf("method = %s, want POST", r.Method)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		rv.t.Errorf("Content-Type = %q", ct)
	}
	for k, v := range rv.header {
		w.Header()[k] = v
	}
	if status == http.StatusTemporaryRedirect {
		w.Header().Set("Location", "/elsewhere")
	}
	w.WriteHeader(status)
}

func (rv *receiver) count() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.requests
}

func newReceiver(t *testing.T, statuses ...int) (*receiver, string) {
	t.Helper()
	rv := &receiver{t: t, statuses: statuses, header: http.Header{}}
	srv := httptest.NewServer(rv)
	t.Cleanup(srv.Close)
	return rv, srv.URL + "/jobs"
}

func fastWebhook(url string, opts ...Option) *Webhook {
	return NewWebhook(url, testSecret, nil, append([]Option{WithBackoff(time.Millisecond, 2*time.Millisecond)}, opts...)...)
}

func TestWebhookDispatch(t *testing.T) {
	tests := []struct {
		name         string
		statuses     []int
		retryAfter   string
		wantRequests int
		wantErr      bool
		wantStatus   int
	}{
		{name: "accepted first time", statuses: []int{202}, wantRequests: 1},
		{name: "5xx then success", statuses: []int{503, 500, 200}, wantRequests: 3},
		{name: "5xx every time gives up after 3", statuses: []int{502}, wantRequests: 3, wantErr: true, wantStatus: 502},
		{name: "429 without hint is retried", statuses: []int{429, 204}, wantRequests: 2},
		{name: "429 asking to wait past the cap stops", statuses: []int{429}, retryAfter: "3600", wantRequests: 1, wantErr: true, wantStatus: 429},
		{name: "400 is not retried", statuses: []int{400}, wantRequests: 1, wantErr: true, wantStatus: 400},
		{name: "401 is not retried", statuses: []int{401}, wantRequests: 1, wantErr: true, wantStatus: 401},
		{name: "redirect is not followed", statuses: []int{307}, wantRequests: 1, wantErr: true, wantStatus: 307},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rv, url := newReceiver(t, tc.statuses...)
			if tc.retryAfter != "" {
				rv.header.Set("Retry-After", tc.retryAfter)
			}
			err := fastWebhook(url).Dispatch(t.Context(), testJob())

			if got := rv.count(); got != tc.wantRequests {
				t.Errorf("requests = %d, want %d", got, tc.wantRequests)
			}
			if rv.badSig != 0 {
				t.Errorf("%d request(s) with a bad signature", rv.badSig)
			}
			for i, k := range rv.keys {
				if k != testJob().RunID {
					t.Errorf("request %d Idempotency-Key = %q, want the run id", i, k)
				}
			}
			// Every retry carries the same bytes, so the runner can deduplicate.
			for i, b := range rv.bodies {
				var got Job
				if err := json.Unmarshal(b, &got); err != nil {
					t.Fatalf("request %d body: %v", i, err)
				}
				if got != testJob() {
					t.Errorf("request %d job = %+v, want %+v", i, got, testJob())
				}
			}
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("Dispatch: %v", err)
				}
				return
			}
			var de *DispatchError
			if !errors.As(err, &de) {
				t.Fatalf("error = %v, want *DispatchError", err)
			}
			if de.StatusCode != tc.wantStatus || de.Attempts != tc.wantRequests {
				t.Errorf("DispatchError = {status %d, attempts %d}, want {%d, %d}", de.StatusCode, de.Attempts, tc.wantStatus, tc.wantRequests)
			}
		})
	}
}

func TestWebhookUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more

	err := fastWebhook(url).Dispatch(t.Context(), testJob())
	var de *DispatchError
	if !errors.As(err, &de) {
		t.Fatalf("error = %v, want *DispatchError", err)
	}
	if de.Attempts != 3 || de.StatusCode != 0 {
		t.Errorf("DispatchError = {status %d, attempts %d}, want {0, 3}", de.StatusCode, de.Attempts)
	}
	// The message may reach the caller: no address, no library text.
	if msg := de.Error(); strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "dial") {
		t.Errorf("message leaks internals: %q", msg)
	}
	if errors.Unwrap(err) == nil {
		t.Error("the cause is not kept for logs")
	}
}

func TestWebhookStopsAtDeadline(t *testing.T) {
	rv, url := newReceiver(t, 503)
	// The first retry would start an hour from now, after the deadline: not tried.
	w := NewWebhook(url, testSecret, nil, WithBackoff(time.Hour, time.Hour))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := w.Dispatch(ctx, testJob()); err == nil {
		t.Fatal("Dispatch succeeded against a failing runner")
	}
	if got := rv.count(); got != 1 {
		t.Errorf("requests = %d, want 1", got)
	}
}

func TestWebhookCancelledContext(t *testing.T) {
	rv, url := newReceiver(t, 200)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := fastWebhook(url).Dispatch(ctx, testJob())
	var de *DispatchError
	if !errors.As(err, &de) || de.Attempts != 1 {
		t.Fatalf("error = %v, want a DispatchError after 1 attempt", err)
	}
	if got := rv.count(); got != 0 {
		t.Errorf("requests = %d, want 0", got)
	}
}

func TestWebhookAttemptsOption(t *testing.T) {
	rv, url := newReceiver(t, 500)
	_ = fastWebhook(url, WithAttempts(5)).Dispatch(t.Context(), testJob())
	if got := rv.count(); got != 5 {
		t.Errorf("requests = %d, want 5", got)
	}
}

func TestWebhookConfig(t *testing.T) {
	tests := []struct {
		url     string
		secret  string
		wantErr bool
	}{
		{url: "https://runner.example.com/hook", secret: "k"},
		{url: "http://127.0.0.1:9000/hook", secret: "k"},
		{url: "http://localhost:9000/hook", secret: "k"},
		{url: "http://[::1]:9000/hook", secret: "k"},
		{url: "http://runner.example.com/hook", secret: "k", wantErr: true},
		{url: "http://10.0.0.1/hook", secret: "k", wantErr: true},
		{url: "ftp://runner.example.com/hook", secret: "k", wantErr: true},
		{url: "https://", secret: "k", wantErr: true},
		{url: "runner.example.com/hook", secret: "k", wantErr: true},
		{url: "", secret: "k", wantErr: true},
		{url: "https://runner.example.com/hook", secret: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.url+"/"+tc.secret, func(t *testing.T) {
			w := NewWebhook(tc.url, []byte(tc.secret), nil)
			if err := w.Validate(); (err != nil) != tc.wantErr {
				t.Fatalf("Validate() = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr {
				return
			}
			// A misconfigured webhook never sends, and says so without the URL.
			err := w.Dispatch(t.Context(), testJob())
			var de *DispatchError
			if !errors.As(err, &de) || de.Attempts != 0 {
				t.Fatalf("Dispatch = %v, want a DispatchError with 0 attempts", err)
			}
			if tc.url != "" && strings.Contains(de.Error(), tc.url) {
				t.Errorf("message leaks the URL: %q", de.Error())
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"5", 5 * time.Second},
		{" 2 ", 2 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"soon", 0},
		{"99999999999999999999", 0},
		{"9999999999", 24 * time.Hour},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tc := range tests {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "1", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "1e9", "9223372036854775807"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d := parseRetryAfter(s, now); d < 0 {
			t.Errorf("parseRetryAfter(%q) = %v, negative", s, d)
		}
	})
}

func FuzzVerify(f *testing.F) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Add([]byte(`{"a":1}`), Sign(testSecret, at, []byte(`{"a":1}`)))
	f.Add([]byte(""), "t=1772366400,v1=")
	f.Add([]byte("x"), "t=,v1=00,v1=zz")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		err := Verify(testSecret, body, header, at)
		if err == nil && !strings.Contains(strings.ToLower(header), strings.TrimPrefix(Sign(testSecret, at, body), "t=1772366400,")) {
			// Accepted: the header must carry the one MAC of this body (a time
			// within the tolerance gives another MAC, found by the same search).
			ok := false
			for _, p := range strings.Split(header, ",") {
				if k, v, _ := strings.Cut(strings.TrimSpace(p), "="); k == "t" {
					if sec, e := strconv.ParseInt(v, 10, 64); e == nil && strings.Contains(strings.ToLower(header), strings.TrimPrefix(Sign(testSecret, time.Unix(sec, 0), body), "t="+v+",")) {
						ok = true
					}
				}
			}
			if !ok {
				t.Errorf("Verify accepted %q for body %q", header, body)
			}
		}
	})
}

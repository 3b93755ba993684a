package clientmeta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/test/harness"
)

// TestStaleOnOutage: a document that expired is still used for StaleOnOutage when
// its host is down (unreachable, 5xx, 429), with a warning in the log; it is not when
// the host answers that the document is gone or broken, nor once that time is over;
// and a document never fetched is refused whatever the failure.
func TestStaleOnOutage(t *testing.T) {
	// mode is what /doc.json answers: "ok", "503", "429", "404", "invalid", "hang".
	var mode atomic.Value
	mode.Store("ok")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s := newDocServer(t, map[string]http.HandlerFunc{
		"/doc.json": func(w http.ResponseWriter, r *http.Request) {
			switch mode.Load().(string) {
			case "503":
				http.Error(w, "down", http.StatusServiceUnavailable)
			case "429":
				http.Error(w, "slow down", http.StatusTooManyRequests)
			case "404":
				http.NotFound(w, r)
			case "invalid":
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"client_id":"https://elsewhere.example/x","redirect_uris":["https://a.example/cb"]}`))
			case "hang":
				select {
				case <-r.Context().Done():
				case <-release:
				}
			default:
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "max-age=300")
				_, _ = w.Write([]byte(docFor(r, "Doc")))
			}
		},
	})
	id := s.URL + "/doc.json"

	type step struct {
		advance  time.Duration
		mode     string
		wantErr  bool
		wantHit  bool // the host was asked
		wantWarn bool // the log says a stale copy was used
	}
	fresh := step{0, "ok", false, true, false}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"503 after expiry: the copy, with a warning", []step{fresh,
			{301 * time.Second, "503", false, true, true},
			// Within staleRetry the copy is served without asking the host again.
			{30 * time.Second, "503", false, false, false},
			{31 * time.Second, "503", false, true, true},
			// Back up: the new document replaces the copy and is fresh again.
			{0, "ok", false, false, false},
			{staleRetry, "ok", false, true, false},
			{time.Minute, "503", false, false, false},
		}},
		{"429 after expiry: the copy", []step{fresh, {301 * time.Second, "429", false, true, true}}},
		{"unreachable after expiry: the copy", []step{fresh, {301 * time.Second, "hang", false, true, true}}},
		{"just before the bound: the copy", []step{fresh, {300*time.Second + StaleOnOutage - time.Second, "503", false, true, true}}},
		{"past the bound: refused", []step{fresh,
			{301 * time.Second, "503", false, true, true},
			{StaleOnOutage, "503", true, true, false},
			// And the copy is gone: the host coming back is a first fetch.
			{0, "ok", false, true, false},
		}},
		{"404 after expiry: refused, and the copy is dropped", []step{fresh,
			{301 * time.Second, "404", true, true, false},
			{0, "503", true, true, false},
		}},
		{"invalid document after expiry: refused", []step{fresh, {301 * time.Second, "invalid", true, true, false}}},
		{"first fetch, 503: refused", []step{{0, "503", true, true, false}, {0, "503", true, true, false}}},
		{"first fetch, unreachable: refused", []step{{0, "hang", true, true, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &clock{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
			var logs harness.Buffer
			seen := 0
			f := NewFetcher(Options{AllowLoopback: true, RootCAs: s.pool, Now: clk.Now, Timeout: 300 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			s.mu.Lock()
			s.hits = map[string]int{}
			s.mu.Unlock()
			for i, st := range tc.steps {
				mode.Store(st.mode)
				clk.Advance(st.advance)
				before := s.hitsOf("/doc.json")
				c, err := f.Fetch(t.Context(), id)
				if (err != nil) != st.wantErr || (err == nil && (c.ClientID != id || c.Name != "Doc")) {
					t.Fatalf("step %d (%s): %+v, %v; want error %v", i, st.mode, c, err, st.wantErr)
				}
				if hit := s.hitsOf("/doc.json") > before; hit != st.wantHit {
					t.Fatalf("step %d (%s): host asked %v, want %v", i, st.mode, hit, st.wantHit)
				}
				all := logs.String()
				log := all[seen:]
				seen = len(all)
				warned := strings.Contains(log, "level=WARN") && strings.Contains(log, "using the copy that expired") &&
					strings.Contains(log, "client_id="+id) && strings.Contains(log, "usable_until=")
				if warned != st.wantWarn {
					t.Fatalf("step %d (%s): warned %v, want %v; log:\n%s", i, st.mode, warned, st.wantWarn, log)
				}
			}
		})
	}
}

// TestStaleWhenBusy: while every fetch slot is taken (a flood of new client ids), a
// known client whose copy expired gets the copy, with the warning, and a client
// never fetched is refused.
func TestStaleWhenBusy(t *testing.T) {
	release := make(chan struct{})
	s := newDocServer(t, map[string]http.HandlerFunc{
		"/doc.json": serveJSON(http.Header{"Cache-Control": {"max-age=300"}}, func(r *http.Request) string { return docFor(r, "Doc") }),
		"/hang/": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
	})
	clk := &clock{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	var logs harness.Buffer
	f := NewFetcher(Options{AllowLoopback: true, RootCAs: s.pool, Now: clk.Now, Timeout: 20 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	id := s.URL + "/doc.json"
	if _, err := f.Fetch(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	clk.Advance(301 * time.Second)

	ctx, cancel := context.WithCancel(t.Context())
	for i := range maxInflight {
		go func() { _, _ = f.Fetch(ctx, fmt.Sprintf("%s/hang/%d.json", s.URL, i)) }()
	}
	t.Cleanup(func() { cancel(); close(release) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.inflight)
		f.mu.Unlock()
		if n == maxInflight {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d fetches under way, want %d", n, maxInflight)
		}
		time.Sleep(10 * time.Millisecond)
	}

	c, err := f.Fetch(t.Context(), id)
	if err != nil || c.Name != "Doc" {
		t.Fatalf("the known client while busy: %+v, %v; want its copy", c, err)
	}
	if s.hitsOf("/doc.json") != 1 {
		t.Errorf("the host was asked %d times, want once (the first fetch)", s.hitsOf("/doc.json"))
	}
	if log := logs.String(); !strings.Contains(log, "using the copy that expired") || !strings.Contains(log, "client_id="+id) {
		t.Errorf("no warning for the copy; log:\n%s", log)
	}
	var e *Error
	if _, err := f.Fetch(t.Context(), s.URL+"/never.json"); !errors.As(err, &e) || e.Description != descBusy {
		t.Errorf("a client never fetched while busy: %v, want %q", err, descBusy)
	}
}

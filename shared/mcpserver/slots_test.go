package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
	"github.com/aacworkflow/aacmcp/test/harness"
)

// stallingSink holds the first record's Write until released, without giving up
// its call's CPU slot: that call keeps the one slot while the test looks at the
// queue behind it.
type stallingSink struct {
	gt.MemorySink
	once     sync.Once
	stalled  chan struct{} // closed when the first Write has begun
	release  chan struct{}
	released func()
}

func (s *stallingSink) Write(ctx context.Context, r audit.Record) error {
	s.once.Do(func() {
		close(s.stalled)
		<-s.release
	})
	return s.MemorySink.Write(ctx, r)
}

// waitStats polls the gate until want holds.
func waitStats(t *testing.T, h *handler, what string, want func(s cpuslot.Stats) bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		st := h.slots.Stats()
		if want(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the gate stayed at %+v", what, st)
		}
	}
}

// TestCPUSlots: with Config.CPUSlots a tool call waits for a slot once its body is
// read; a call whose client gives up while queued leaves the queue and never runs
// (no audit record: nothing was decided); the queue moves on when the slot frees.
func TestCPUSlots(t *testing.T) {
	w := gt.NewWorld(t)
	sink := &stallingSink{stalled: make(chan struct{}), release: make(chan struct{})}
	sink.released = sync.OnceFunc(func() { close(sink.release) })
	defer sink.released()
	g := guard.New(guard.Config{Catalog: w.Catalog, Store: w.Store, Audit: sink})
	var logs harness.Buffer // the server's goroutines write to it at once
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	h := New(Config{CPUSlots: 1, Logger: logger}, g, w.Catalog, BearerSource{Verifier: &auth.Verifier{Store: w.Store}}).(*handler)
	ts := httptest.NewServer(h)
	defer ts.Close()
	token := w.Token(t, gt.WS, gt.Admin, auth.AllScopes...)
	call := func(ctx context.Context) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/tools/list_issues", strings.NewReader(`{}`))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	first := make(chan int, 1)
	go func() {
		code, err := call(context.Background())
		if err != nil {
			t.Error(err)
		}
		first <- code
	}()
	<-sink.stalled // the first call holds the one slot, in its audit write
	waitStats(t, h, "the first call holds the slot", func(s cpuslot.Stats) bool { return s.Free == 0 })

	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := call(ctx)
		gone <- err
	}()
	waitStats(t, h, "a second call queues", func(s cpuslot.Stats) bool { return s.Waiting == 1 })
	cancel()
	if err := <-gone; err == nil {
		t.Fatal("the cancelled call was answered")
	}
	waitStats(t, h, "the cancelled call leaves the queue", func(s cpuslot.Stats) bool { return s.Waiting == 0 })

	// A call that queues behind the held slot and is answered: its access log line
	// says how long it queued.
	const hold = 30 * time.Millisecond
	third := make(chan int, 1)
	go func() {
		code, err := call(context.Background())
		if err != nil {
			t.Error(err)
		}
		third <- code
	}()
	waitStats(t, h, "a third call queues", func(s cpuslot.Stats) bool { return s.Waiting == 1 })
	time.Sleep(hold)

	sink.released()
	if code := <-first; code != http.StatusOK {
		t.Fatalf("first call: status %d, want 200", code)
	}
	if code := <-third; code != http.StatusOK {
		t.Fatalf("third call: status %d, want 200", code)
	}
	if code, err := call(context.Background()); err != nil || code != http.StatusOK {
		t.Fatalf("a call after the queue moved on: %d, %v", code, err)
	}
	recs := sink.Records()
	if len(recs) != 3 {
		t.Fatalf("%d audit records, want 3 (every call but the cancelled one, which never ran)", len(recs))
	}
	// The access log line is written after the answer: wait for all four.
	for deadline := time.Now().Add(time.Minute); strings.Count(logs.String(), `"msg":"request"`) < 4; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("access log after a minute:\n%s", logs.String())
		}
	}
	var queuedMs []int64
	dec := json.NewDecoder(strings.NewReader(logs.String()))
	for {
		var line struct {
			Msg      string `json:"msg"`
			Outcome  string `json:"outcome"`
			QueuedMs *int64 `json:"queued_ms"`
		}
		if err := dec.Decode(&line); err != nil {
			break
		}
		if line.Msg != "request" || line.Outcome == "client_gone" {
			continue
		}
		if line.QueuedMs == nil {
			t.Fatalf("access log line without queued_ms: %+v", line)
		}
		queuedMs = append(queuedMs, *line.QueuedMs)
	}
	slices.Sort(queuedMs)
	// The first and the last found the slot free; the third waited at least hold.
	if len(queuedMs) != 3 || queuedMs[0] != 0 || queuedMs[1] != 0 || queuedMs[2] < hold.Milliseconds() {
		t.Errorf("queued_ms of the answered calls = %v, want [0 0 >=%d]", queuedMs, hold.Milliseconds())
	}
	waitStats(t, h, "every call ended", func(s cpuslot.Stats) bool { return s.Free == 1 && s.Waiting == 0 })
}

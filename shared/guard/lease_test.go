package guard

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestAbandonedClaim: a pending claim left by a process that died between claiming
// a key and settling it must not refuse the client's retry for the record's whole
// lifetime. Within the lease the key is still "in progress" (the first call may be
// running); past it, the retry runs.
func TestAbandonedClaim(t *testing.T) {
	for _, tc := range []struct {
		name     string
		age      time.Duration
		wantCode apperr.Code
	}{
		{"live claim", time.Second, apperr.Conflict},
		{"just inside the lease", PendingLease - time.Second, apperr.Conflict},
		{"abandoned", PendingLease + time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := gt.NewWorld(t)
			sink := &gt.MemorySink{}
			g := New(Config{Catalog: w.Catalog, Store: w.Store, Audit: sink})
			args := `{"title":"Crashed","idempotency_key":"k1"}`
			claimed := time.Now().UTC().Add(-tc.age)
			err := w.Store.CreateIdempotency(context.Background(), store.IdempotencyRecord{
				IdempotencyKey: store.IdempotencyKey{WorkspaceID: gt.WS, UserID: gt.Admin, Tool: "create_issue", KeyHash: sha256Hex([]byte("k1"))},
				State:          store.IdemPending,
				ArgsDigest:     parseArgs([]byte(args), false).digestWithout(idempotencyKeyArg),
				CreatedAt:      claimed,
				ExpiresAt:      claimed.Add(DefaultIdempotencyTTL),
			})
			if err != nil {
				t.Fatal(err)
			}
			p := gt.Principal(gt.WS, gt.Admin, "issues:write")
			res := g.Call(context.Background(), Request{Principal: p, Tool: "create_issue", Args: json.RawMessage(args), Transport: audit.TransportREST})
			var got apperr.Code
			if res.Err != nil {
				got = res.Err.Code
			}
			if got != tc.wantCode {
				t.Fatalf("retry after a claim %v old: code %q (%v), want %q", tc.age, got, res.Err, tc.wantCode)
			}
			if tc.wantCode != "" {
				return
			}
			// The retry settled the key: a second retry replays it.
			again := g.Call(context.Background(), Request{Principal: p, Tool: "create_issue", Args: json.RawMessage(args), Transport: audit.TransportREST})
			if again.Err != nil || !again.Replay || string(again.JSON) != string(res.JSON) {
				t.Fatalf("second retry: err %v replay %v, want the first result replayed", again.Err, again.Replay)
			}
		})
	}
}

// meetingStore stages the race the takeover must settle, so that it happens every run
// rather than now and then, and in its worst order:
//   - the first idempotency read of each of the n retries waits until all n are
//     reading, and none goes on before all have read: every retry sees the same
//     abandoned claim;
//   - then the retries go on one at a time, each until it either runs the handler or
//     returns: every retry acts on what it read after another one already took the
//     key over (a plain release and re-claim would now delete the winner's claim);
//   - the handler (CreateIssue) of the winner waits until the n-1 others have
//     returned, so they can only find its claim pending, never settled (a replay is
//     right for a later duplicate, not for this race).
//
// A second CreateIssue is the bug itself: it is counted and lets everyone go on.
type meetingStore struct {
	store.Queries
	n            int
	participants atomic.Int32
	reading      *barrier
	read         *barrier
	// turn holds the token of the retry that may go on. Its buffer takes every token
	// ever passed (the first, one per handler run, one per return) so that passing
	// never blocks, even when the bug under test runs the handler n times.
	turn chan struct{}

	created  atomic.Int32
	others   *barrier // the n-1 retries that do not run the handler have returned
	twice    sync.Once
	ranTwice chan struct{}
}

func newMeetingStore(q store.Queries, n int) *meetingStore {
	s := &meetingStore{Queries: q, n: n, reading: newBarrier(n), read: newBarrier(n),
		turn: make(chan struct{}, 2*n+1), others: newBarrier(n - 1), ranTwice: make(chan struct{})}
	s.turn <- struct{}{}
	return s
}

func (s *meetingStore) GetIdempotency(ctx context.Context, k store.IdempotencyKey) (store.IdempotencyRecord, error) {
	if int(s.participants.Add(1)) > s.n {
		return s.Queries.GetIdempotency(ctx, k)
	}
	if err := s.reading.meet(ctx); err != nil {
		return store.IdempotencyRecord{}, err
	}
	rec, err := s.Queries.GetIdempotency(ctx, k)
	if err := s.read.meet(ctx); err != nil {
		return store.IdempotencyRecord{}, err
	}
	select {
	case <-s.turn:
	case <-ctx.Done():
		return store.IdempotencyRecord{}, ctx.Err()
	}
	return rec, err
}

func (s *meetingStore) CreateIssue(ctx context.Context, ws string, in store.NewIssue) (store.Issue, error) {
	s.turn <- struct{}{}
	if s.created.Add(1) > 1 {
		s.twice.Do(func() { close(s.ranTwice) })
	}
	select {
	case <-s.others.done:
	case <-s.ranTwice:
	case <-ctx.Done():
		return store.Issue{}, ctx.Err()
	}
	return s.Queries.CreateIssue(ctx, ws, in)
}

// callReturned records that one retry's call has returned and passes the turn on.
func (s *meetingStore) callReturned() {
	s.turn <- struct{}{}
	s.others.arrive()
}

// barrier opens once n parties have arrived.
type barrier struct {
	mu   sync.Mutex
	left int
	done chan struct{}
}

func newBarrier(n int) *barrier {
	b := &barrier{left: n, done: make(chan struct{})}
	if n <= 0 {
		close(b.done)
	}
	return b
}

func (b *barrier) arrive() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left > 0 {
		if b.left--; b.left == 0 {
			close(b.done)
		}
	}
}

// meet arrives and waits for the others.
func (b *barrier) meet(ctx context.Context) error {
	b.arrive()
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestAbandonedClaimRace: retries of one abandoned key arriving at the same moment
// all read the dead claim and all try to take it over. Exactly one runs the handler;
// each of the others is refused with conflict exactly as a duplicate of a running
// call is, and once the winner settled, a further retry replays its result.
func TestAbandonedClaimRace(t *testing.T) {
	const inProgress = "a call with this idempotency key is in progress"
	const reused = "idempotency key reused with different arguments"
	for _, tc := range []struct {
		name string
		// args of each retry; the abandoned claim was made with the first.
		args    []string
		wantMsg string // the refusal every loser gets
	}{
		{"two retries", []string{`{"title":"Crashed","idempotency_key":"k1"}`, `{"title":"Crashed","idempotency_key":"k1"}`}, inProgress},
		{"five retries", slices.Repeat([]string{`{"title":"Crashed","idempotency_key":"k1"}`}, 5), inProgress},
		{"retries with other arguments", []string{`{"title":"One","idempotency_key":"k1"}`, `{"title":"Two","idempotency_key":"k1"}`}, reused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := gt.NewWorld(t)
			st := newMeetingStore(w.Store, len(tc.args))
			g := New(Config{Catalog: w.Catalog, Store: st, Audit: &gt.MemorySink{}})
			claimed := time.Now().UTC().Add(-PendingLease - time.Minute)
			err := w.Store.CreateIdempotency(context.Background(), store.IdempotencyRecord{
				IdempotencyKey: store.IdempotencyKey{WorkspaceID: gt.WS, UserID: gt.Admin, Tool: "create_issue", KeyHash: sha256Hex([]byte("k1"))},
				State:          store.IdemPending,
				ArgsDigest:     parseArgs([]byte(tc.args[0]), false).digestWithout(idempotencyKeyArg),
				CreatedAt:      claimed,
				ExpiresAt:      claimed.Add(DefaultIdempotencyTTL),
			})
			if err != nil {
				t.Fatal(err)
			}
			p := gt.Principal(gt.WS, gt.Admin, "issues:write")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a broken meeting fails instead of hanging
			defer cancel()
			results := make([]Result, len(tc.args))
			var wg sync.WaitGroup
			for i, args := range tc.args {
				wg.Go(func() {
					results[i] = g.Call(ctx, Request{Principal: p, Tool: "create_issue", Args: json.RawMessage(args), Transport: audit.TransportREST})
					st.callReturned()
				})
			}
			wg.Wait()

			if n := st.created.Load(); n != 1 {
				t.Fatalf("the handler ran %d times, want exactly once", n)
			}
			winner := -1
			for i, res := range results {
				switch {
				case res.Err == nil && !res.Replay:
					if winner >= 0 {
						t.Fatalf("retries %d and %d both ran", winner, i)
					}
					winner = i
				case res.Err == nil:
					t.Errorf("retry %d: replayed %s while the winner was still running", i, res.JSON)
				case res.Err.Code != apperr.Conflict || res.Err.Message != tc.wantMsg:
					t.Errorf("retry %d: %v, want conflict %q", i, res.Err, tc.wantMsg)
				}
			}
			if winner < 0 {
				t.Fatal("no retry ran")
			}
			again := g.Call(context.Background(), Request{Principal: p, Tool: "create_issue", Args: json.RawMessage(tc.args[winner]), Transport: audit.TransportREST})
			if again.Err != nil || !again.Replay || string(again.JSON) != string(results[winner].JSON) {
				t.Fatalf("retry after the race: err %v replay %v, want the winner's result replayed", again.Err, again.Replay)
			}
		})
	}
}

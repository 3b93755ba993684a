package guard

import (
	"context"
	"encoding/json"
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
				ArgsDigest:     parseArgs([]byte(args)).digestWithout(idempotencyKeyArg),
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

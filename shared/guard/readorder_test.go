package guard_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/guard"
	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/memory"
)

// readLog is a store that records its member and issue reads and declares whether
// its reads gain from running side by side (the guard's concurrentReader).
type readLog struct {
	*memory.Store
	parallel bool

	mu    sync.Mutex
	reads []string
}

func (s *readLog) ConcurrentReads() bool { return s.parallel }

func (s *readLog) log(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(s.reads, what)
}

func (s *readLog) GetMember(ctx context.Context, ws, user string) (store.Member, error) {
	s.log("member")
	return s.Store.GetMember(ctx, ws, user)
}

func (s *readLog) GetIssue(ctx context.Context, ws, idOrKey string) (store.Issue, error) {
	s.log("issue")
	return s.Store.GetIssue(ctx, ws, idOrKey)
}

// TestReadOnlyMemberCheck: whether the member record is read before a read-only
// handler (in-process store) or beside it (network store), a refused caller gets
// permission_denied and never the data, and an admitted one gets the result. On a
// store that does not gain from parallel reads the check runs first and a refused
// caller's handler never runs.
func TestReadOnlyMemberCheck(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		for _, tc := range []struct {
			name, user string
			want       apperr.Code
		}{
			{"admin", gt.Admin, ""},
			{"viewer", gt.Viewer, ""},
			{"removed", gt.Removed, apperr.PermissionDenied},
			{"outsider", gt.Outsider, apperr.PermissionDenied},
		} {
			name := tc.name + "/sequential"
			if parallel {
				name = tc.name + "/parallel"
			}
			t.Run(name, func(t *testing.T) {
				w := gt.NewWorld(t)
				st := &readLog{Store: w.Store, parallel: parallel}
				sink := &gt.MemorySink{}
				g := guard.New(guard.Config{Catalog: w.Catalog, Store: st, Audit: sink})
				args, _ := json.Marshal(map[string]string{"issue_id": w.Issue.Key})
				res := g.Call(context.Background(), guard.Request{
					Principal: gt.Principal(gt.WS, tc.user, "issues:read"), Tool: "get_issue",
					Args: args, Transport: audit.TransportMCP,
				})
				if code(res) != tc.want {
					t.Fatalf("code = %q, want %q (%v)", code(res), tc.want, res.Err)
				}
				if tc.want != "" && res.JSON != nil {
					t.Fatalf("refused call carries data: %s", res.JSON)
				}
				if tc.want == "" && !json.Valid(res.JSON) {
					t.Fatalf("result is not JSON: %q", res.JSON)
				}
				if n := len(sink.Records()); n != 1 {
					t.Fatalf("%d audit records, want 1", n)
				}
				st.mu.Lock()
				defer st.mu.Unlock()
				switch {
				case !parallel && tc.want == "":
					if len(st.reads) != 2 || st.reads[0] != "member" || st.reads[1] != "issue" {
						t.Fatalf("reads %v, want [member issue]", st.reads)
					}
				case !parallel:
					if len(st.reads) != 1 || st.reads[0] != "member" {
						t.Fatalf("reads %v, want [member]: the handler must not run for a refused caller", st.reads)
					}
				default:
					if len(st.reads) != 2 {
						t.Fatalf("reads %v, want the member and the issue read", st.reads)
					}
				}
			})
		}
	}
}

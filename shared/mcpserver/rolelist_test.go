package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	gt "github.com/aacworkflow/aacmcp/shared/guard/guardtest"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// listed is what tools/list and GET /tools offer a token: the tools/list names and
// the names GET /tools marks allowed.
func (s *server) listed(t *testing.T, token string) (mcpNames, allowed []string) {
	t.Helper()
	r := s.do(t, "POST", "/mcp", token, rpcBody(1, "tools/list", nil))
	var rr rpcResponse
	r.json(t, &rr)
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(rr.Result, &res); err != nil {
		t.Fatalf("tools/list %d %s", r.status, r.body)
	}
	for _, tl := range res.Tools {
		mcpNames = append(mcpNames, tl.Name)
	}
	r = s.do(t, "GET", "/tools", token, "")
	var list mcpserver.ToolList
	r.json(t, &list)
	if r.status != http.StatusOK {
		t.Fatalf("GET /tools %d %s", r.status, r.body)
	}
	for _, ti := range list.Tools {
		if ti.Allowed {
			allowed = append(allowed, ti.Name)
		}
	}
	return mcpNames, allowed
}

// tools/list and GET /tools's allowed reflect the caller's role, read from the
// member record at list time, as well as the token's scopes: a viewer holding every
// scope is offered only the read-only tools, which are the only ones it can call.
func TestToolListsReflectTheRole(t *testing.T) {
	s := newServer(t)
	var readOnly, all []string
	for _, tl := range s.w.Catalog.Tools() {
		all = append(all, tl.Name)
		if tl.Annotations.ReadOnly {
			readOnly = append(readOnly, tl.Name)
		}
	}
	check := func(t *testing.T, token string, want []string) {
		t.Helper()
		names, allowed := s.listed(t, token)
		if !slices.Equal(names, want) {
			t.Errorf("tools/list = %v, want %v", names, want)
		}
		if !slices.Equal(allowed, want) {
			t.Errorf("GET /tools allowed = %v, want %v", allowed, want)
		}
	}
	t.Run("viewer", func(t *testing.T) { check(t, s.viewer, readOnly) })
	t.Run("member", func(t *testing.T) { check(t, s.member, all) })
	t.Run("demoted at once", func(t *testing.T) {
		ctx := context.Background()
		if _, err := s.w.Store.UpdateMember(ctx, store.Member{WorkspaceID: gt.WS, UserID: gt.Member, Role: store.RoleViewer}); err != nil {
			t.Fatal(err)
		}
		check(t, s.member, readOnly)
	})
	t.Run("removed", func(t *testing.T) {
		if err := s.w.Store.DeleteMember(context.Background(), gt.WS, gt.Member); err != nil {
			t.Fatal(err)
		}
		check(t, s.member, nil)
	})
}

package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

func oauthID(prefix string) string { return prefix + "_" + strings.ToLower(store.NewULID()) }

func testGrant(ws, user string, at time.Time) store.OAuthGrant {
	return store.OAuthGrant{ID: oauthID("grant"), ClientID: "https://client.example/meta.json", ClientName: "Client",
		WorkspaceID: ws, UserID: user, Scopes: []string{"issues:read"}, Resource: "https://mcp.example/mcp",
		CreatedAt: at, LastUsedAt: at, ExpiresAt: at.Add(30 * 24 * time.Hour)}
}

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestOAuthLostResponseAppliesOnce: every conditional OAuth write whose response is
// lost is resent by the SDK, and the resent request must not turn the caller's win
// into a loss (or apply twice). Each case drops the response of exactly one request.
func TestOAuthLostResponseAppliesOnce(t *testing.T) {
	dr := &dropper{next: http.DefaultTransport.(*http.Transport).Clone()}
	e := newEnv(t, envConfig{transport: func(cfg *aws.Config) {
		cfg.HTTPClient = &http.Client{Transport: dr}
	}})
	ctx := t.Context()
	s := e.store
	at := time.Now().UTC().Truncate(time.Millisecond)

	tests := []struct {
		name  string
		op    string
		parts []string
		act   func(t *testing.T) (check func(t *testing.T))
	}{
		{
			// The winner's resent redemption finds the code used, by its own nonce:
			// it is still the first redemption (UsedAt nil), or the caller would
			// revoke the grant it just created.
			name: "ConsumeOAuthCode", op: "UpdateItem", parts: []string{"used_by"},
			act: func(t *testing.T) func(t *testing.T) {
				c := store.OAuthCode{Hash: auth.Hash(oauthID("code")), GrantID: oauthID("grant"), ClientID: "c",
					WorkspaceID: "ws", UserID: "u", CreatedAt: at, ExpiresAt: at.Add(time.Minute)}
				mustOK(t, "CreateOAuthCode", s.CreateOAuthCode(ctx, c))
				got, err := s.ConsumeOAuthCode(ctx, c.Hash, at.Add(time.Second))
				mustOK(t, "ConsumeOAuthCode", err)
				if got.UsedAt != nil {
					t.Errorf("first redemption whose response was lost: UsedAt %v, want nil", got.UsedAt)
				}
				return func(t *testing.T) {
					again, err := s.ConsumeOAuthCode(ctx, c.Hash, at.Add(time.Minute/2))
					if err != nil || again.UsedAt == nil || !again.UsedAt.Equal(at.Add(time.Second)) {
						t.Errorf("second redemption = UsedAt %v, %v; want the first's %v", again.UsedAt, err, at.Add(time.Second))
					}
				}
			},
		},
		{
			name: "DeleteOAuthPending", op: "UpdateItem", parts: []string{"SET consumed_by"},
			act: func(t *testing.T) func(t *testing.T) {
				p := store.OAuthPending{ID: oauthID("pend"), Purpose: "authorize", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
				mustOK(t, "CreateOAuthPending", s.CreateOAuthPending(ctx, p))
				mustOK(t, "DeleteOAuthPending whose response was lost", s.DeleteOAuthPending(ctx, p.ID))
				return func(t *testing.T) {
					if _, err := s.GetOAuthPending(ctx, p.ID); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("GetOAuthPending after the consumption: %v, want not_found", err)
					}
				}
			},
		},
		{
			name: "UpdateOAuthPending", op: "PutItem", parts: []string{"attribute_not_exists(consumed_by) AND"},
			act: func(t *testing.T) func(t *testing.T) {
				p := store.OAuthPending{ID: oauthID("pend"), Purpose: "authorize", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
				mustOK(t, "CreateOAuthPending", s.CreateOAuthPending(ctx, p))
				p.Subject = "dev:alice"
				mustOK(t, "UpdateOAuthPending whose response was lost", s.UpdateOAuthPending(ctx, p))
				return func(t *testing.T) {
					if got, err := s.GetOAuthPending(ctx, p.ID); err != nil || got.Subject != "dev:alice" {
						t.Errorf("GetOAuthPending = %+v, %v", got, err)
					}
				}
			},
		},
		{
			name: "UpdateOAuthGrantRotate commit", op: "UpdateItem", parts: []string{"rot_nonce"},
			act: func(t *testing.T) func(t *testing.T) { return rotateOnce(t, s, at) },
		},
		{
			name: "UpdateOAuthGrantRotate new hash", op: "PutItem", parts: []string{`"REFRESH"`, `"current"`},
			act: func(t *testing.T) func(t *testing.T) { return rotateOnce(t, s, at) },
		},
		{
			name: "CreateOAuthGrant", op: "PutItem", parts: []string{"list_until"},
			act: func(t *testing.T) func(t *testing.T) {
				g := testGrant("ws_lost", oauthID("u"), at)
				mustOK(t, "CreateOAuthGrant whose response was lost", s.CreateOAuthGrant(ctx, g))
				return func(t *testing.T) {
					if _, err := s.GetOAuthGrant(ctx, g.ID); err != nil {
						t.Errorf("GetOAuthGrant: %v", err)
					}
				}
			},
		},
		{
			name: "CreateOAuthClient", op: "PutItem", parts: []string{"token_endpoint_auth_method"},
			act: func(t *testing.T) func(t *testing.T) {
				c := store.OAuthClient{ClientID: oauthID("client"), Name: "c", TokenEndpointAuthMethod: "none", CreatedAt: at}
				mustOK(t, "CreateOAuthClient whose response was lost", s.CreateOAuthClient(ctx, c))
				return func(t *testing.T) {
					if _, err := s.GetOAuthClient(ctx, c.ClientID); err != nil {
						t.Errorf("GetOAuthClient: %v", err)
					}
				}
			},
		},
		{
			name: "UpdateOAuthClientUsed", op: "UpdateItem", parts: []string{"SET last_used_at"},
			act: func(t *testing.T) func(t *testing.T) {
				c := store.OAuthClient{ClientID: oauthID("client"), Name: "c", CreatedAt: at}
				mustOK(t, "CreateOAuthClient", s.CreateOAuthClient(ctx, c))
				mustOK(t, "UpdateOAuthClientUsed whose response was lost", s.UpdateOAuthClientUsed(ctx, c.ClientID, at.Add(time.Hour)))
				return func(t *testing.T) {
					if got, err := s.GetOAuthClient(ctx, c.ClientID); err != nil || !got.LastUsedAt.Equal(at.Add(time.Hour)) {
						t.Errorf("GetOAuthClient = %+v, %v", got, err)
					}
				}
			},
		},
		{
			name: "UpdateMember record", op: "UpdateItem", parts: []string{"mnonce", "#role"},
			act: func(t *testing.T) func(t *testing.T) {
				ws := memberWorkspace(t, s)
				email := oauthID("m") + "@example.com"
				_, err := s.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleAdmin, Email: email})
				mustOK(t, "UpdateMember whose response was lost", err)
				return func(t *testing.T) { wantByEmail(t, s, email, ws+"/alice") }
			},
		},
		{
			name: "DeleteMember record", op: "DeleteItem", parts: []string{`WS#`, "mnonce"},
			act: func(t *testing.T) func(t *testing.T) {
				ws := memberWorkspace(t, s)
				email := oauthID("m") + "@example.com"
				_, err := s.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleAdmin, Email: email})
				mustOK(t, "UpdateMember", err)
				mustOK(t, "DeleteMember whose response was lost", s.DeleteMember(ctx, ws, "alice"))
				return func(t *testing.T) {
					wantByEmail(t, s, email)
					if _, err := s.GetMember(ctx, ws, "alice"); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("GetMember after delete: %v", err)
					}
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.calls.Reset()
			dr.arm(tc.op, tc.parts...)
			check := tc.act(t)
			if err := s.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if got := dr.firedOps(); len(got) != 1 {
				t.Fatalf("dropped responses = %v, want one %s (the test did not exercise a retry)", got, tc.op)
			}
			if calls, attempts := e.calls.Calls()[tc.op], e.calls.Attempts()[tc.op]; attempts != calls+1 {
				t.Errorf("%s: %d calls, %d attempts; want exactly one retry", tc.op, calls, attempts)
			}
			dr.arm("none")
			check(t)
		})
	}
}

// rotateOnce creates a grant and rotates it twice (redemption, then a refresh); the
// check wants the refresh current and the redemption's hash rotated.
func rotateOnce(t *testing.T, s *dynamo.Store, at time.Time) func(t *testing.T) {
	ctx := t.Context()
	g := testGrant("ws_lost", oauthID("u"), at)
	g.RefreshHash = auth.Hash(oauthID("r"))
	mustOK(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, g))
	h1 := auth.Hash(oauthID("r"))
	got, err := s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, OldRefreshHash: g.RefreshHash, NewRefreshHash: h1,
		AccessTokenID: "tok_1", At: at.Add(time.Minute), ExpiresAt: g.ExpiresAt.Add(time.Minute)})
	mustOK(t, "UpdateOAuthGrantRotate whose response was lost", err)
	if got.RefreshHash != h1 || !slices.Equal(got.AccessTokenIDs, []string{"tok_1"}) {
		t.Errorf("rotation returned refresh %q tokens %v", got.RefreshHash, got.AccessTokenIDs)
	}
	return func(t *testing.T) {
		if _, current, err := s.GetOAuthGrantByRefresh(ctx, h1); err != nil || !current {
			t.Errorf("new hash: current=%v %v, want current", current, err)
		}
		if _, current, err := s.GetOAuthGrantByRefresh(ctx, g.RefreshHash); err != nil || current {
			t.Errorf("old hash: current=%v %v, want rotated", current, err)
		}
	}
}

func memberWorkspace(t *testing.T, s *dynamo.Store) string {
	t.Helper()
	ws := oauthID("ws")
	_, err := s.CreateWorkspace(t.Context(), store.Workspace{ID: ws, Key: "AAC", Name: ws})
	mustOK(t, "CreateWorkspace", err)
	return ws
}

// wantByEmail checks which members (ws/user) ListMembersByEmail finds.
func wantByEmail(t *testing.T, s *dynamo.Store, email string, want ...string) {
	t.Helper()
	list, err := s.ListMembersByEmail(t.Context(), email)
	mustOK(t, "ListMembersByEmail", err)
	got := []string{}
	for _, m := range list {
		got = append(got, m.WorkspaceID+"/"+m.UserID)
	}
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("ListMembersByEmail(%s) = %v, want %v", email, got, want)
	}
}

// TestOAuthRotationCrashPoints: a rotation that died after claiming its new hash, or
// after also marking the old one rotated, leaves the grant as it was: the old token
// still current, the new one unknown, and the next rotation works.
func TestOAuthRotationCrashPoints(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx, s := t.Context(), e.store
	at := time.Now().UTC().Truncate(time.Millisecond)
	for _, marked := range []bool{false, true} {
		t.Run("marked="+strconv.FormatBool(marked), func(t *testing.T) {
			g := testGrant("ws_crash", oauthID("u"), at)
			g.RefreshHash = auth.Hash(oauthID("r"))
			mustOK(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, g))
			lost := auth.Hash(oauthID("r"))
			mustOK(t, "crashed rotation", dynamo.CrashRotation(ctx, s, g.ID, lost, marked))

			if got, current, err := s.GetOAuthGrantByRefresh(ctx, g.RefreshHash); err != nil || !current || got.ID != g.ID {
				t.Errorf("old hash after the crash: current=%v %v, want current", current, err)
			}
			if _, _, err := s.GetOAuthGrantByRefresh(ctx, lost); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the crashed rotation's hash: %v, want not_found (it was never handed out)", err)
			}
			next := auth.Hash(oauthID("r"))
			_, err := s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, OldRefreshHash: g.RefreshHash, NewRefreshHash: next, At: at})
			mustOK(t, "rotation after the crash", err)
			if _, current, err := s.GetOAuthGrantByRefresh(ctx, next); err != nil || !current {
				t.Errorf("new hash: current=%v %v", current, err)
			}
			if _, current, err := s.GetOAuthGrantByRefresh(ctx, g.RefreshHash); err != nil || current {
				t.Errorf("old hash after the real rotation: current=%v %v, want rotated", current, err)
			}
			if _, _, err := s.GetOAuthGrantByRefresh(ctx, lost); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the crashed rotation's hash after a real one: %v, want not_found", err)
			}
		})
	}
}

// TestOAuthRefreshHashOfAnEarlierGrant: a grant that expired and was created again
// under the same id does not inherit the old grant's refresh hashes: a rotated hash of
// the old one must not read as a reused token of the new one (which would revoke it).
func TestOAuthRefreshHashOfAnEarlierGrant(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Now().UTC().Truncate(time.Millisecond)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := dynamo.New(e.client, e.main, e.tokens, dynamo.WithClock(clock))
	at := clock()
	// Two rotations, the second to a shorter lifetime (a server restarted with a
	// shorter refresh TTL): the first hash, rotated, then outlives its grant.
	old := testGrant("ws_reuse", "alice", at)
	old.RefreshHash = auth.Hash(oauthID("r"))
	mustOK(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, old))
	h1 := auth.Hash(oauthID("r"))
	_, err := s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: old.ID, OldRefreshHash: old.RefreshHash,
		NewRefreshHash: h1, At: at, ExpiresAt: old.ExpiresAt})
	mustOK(t, "UpdateOAuthGrantRotate", err)
	_, err = s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: old.ID, OldRefreshHash: h1,
		NewRefreshHash: auth.Hash(oauthID("r")), At: at, ExpiresAt: at.Add(time.Hour)})
	mustOK(t, "UpdateOAuthGrantRotate (shorter)", err)

	mu.Lock()
	now = now.Add(2 * time.Hour) // the old grant has expired
	mu.Unlock()
	again := old
	again.CreatedAt, again.LastUsedAt, again.ExpiresAt, again.RefreshHash = clock(), clock(), clock().Add(time.Hour), auth.Hash(oauthID("r"))
	mustOK(t, "CreateOAuthGrant over the expired one", s.CreateOAuthGrant(ctx, again))
	if _, _, err := s.GetOAuthGrantByRefresh(ctx, old.RefreshHash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the expired grant's rotated hash: %v, want not_found", err)
	}
	if _, current, err := s.GetOAuthGrantByRefresh(ctx, again.RefreshHash); err != nil || !current {
		t.Errorf("the new grant's hash: current=%v %v", current, err)
	}
	list, err := s.ListOAuthGrants(ctx, "ws_reuse", "")
	mustOK(t, "ListOAuthGrants", err)
	if len(list) != 1 || !list[0].CreatedAt.Equal(again.CreatedAt) {
		t.Errorf("ListOAuthGrants = %+v, want only the new grant (the old entry names the old one)", list)
	}
}

// TestMemberLookupsAfterACrash: an UpdateMember that died after writing the lookups of
// a new e-mail, before the member record, leaves the record the truth: the new e-mail
// finds nobody, the old one still finds the member.
func TestMemberLookupsAfterACrash(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx, s := t.Context(), e.store
	ws := memberWorkspace(t, s)
	old, newer := oauthID("old")+"@example.com", oauthID("new")+"@example.com"
	_, err := s.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleMember, Email: old})
	mustOK(t, "UpdateMember", err)
	mustOK(t, "crashed UpdateMember", dynamo.CrashMemberUpdate(ctx, s, store.Member{WorkspaceID: ws, UserID: "alice", Email: newer}))
	wantByEmail(t, s, newer)
	wantByEmail(t, s, old, ws+"/alice")

	// A member that never existed, with lookups from a crashed first write.
	mustOK(t, "crashed UpdateMember (new member)", dynamo.CrashMemberUpdate(ctx, s, store.Member{WorkspaceID: ws, UserID: "ghost", Email: newer}))
	wantByEmail(t, s, newer)
	if list, err := s.ListMembersOfUser(ctx, "ghost"); err != nil || len(list) != 0 {
		t.Errorf("ListMembersOfUser(ghost) = %+v, %v; want none", list, err)
	}

	// An item under an e-mail's lookup partition that this store did not write (no
	// member named in it) is skipped, not an error.
	junk := oauthID("junk") + "@example.com"
	_, err = e.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.main), Item: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: dynamo.MemberEmailPK(junk)}, "SK": &types.AttributeValueMemberS{Value: "junk"},
	}})
	mustOK(t, "PutItem", err)
	wantByEmail(t, s, junk)
}

// TestMemberWritersRace: concurrent writers of one member, each with its own e-mail,
// and one delete-and-recreate: whatever order they land in, the e-mail of the record
// that is left finds it, and no other e-mail does. memberAttempts (5) covers up to
// five writers of one member at once, so every call here must succeed.
func TestMemberWritersRace(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx, s := t.Context(), e.store
	for round := range 4 {
		ws := memberWorkspace(t, s)
		emails := make([]string, 4)
		for i := range emails {
			emails[i] = oauthID("w"+strconv.Itoa(i)) + "@example.com"
		}
		_, err := s.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleMember, Email: emails[0]})
		mustOK(t, "UpdateMember", err)
		var wg sync.WaitGroup
		errs := make([]error, len(emails))
		start := make(chan struct{})
		for i := range emails {
			wg.Go(func() {
				<-start
				_, errs[i] = s.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleMember, Email: emails[i]})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: writer %d: %v", round, i, err)
			}
		}
		m, err := s.GetMember(ctx, ws, "alice")
		mustOK(t, "GetMember", err)
		for _, email := range emails {
			if email == m.Email {
				wantByEmail(t, s, email, ws+"/alice")
			} else {
				wantByEmail(t, s, email)
			}
		}
		if list, err := s.ListMembersOfUser(ctx, "alice"); err != nil || !slices.ContainsFunc(list, func(x store.Member) bool { return x.WorkspaceID == ws }) {
			t.Errorf("round %d: ListMembersOfUser(alice) = %+v, %v; want the member in %s", round, list, err, ws)
		}
	}
}

// TestOAuthItemLayout: every OAuth and lookup item lies outside the tenant prefix (in
// its key and its index key), and every OAuth item that expires carries the table's
// TTL attribute, no earlier than its expiry. A grant's list entry moves its TTL past
// the grant's new expiry when a refresh passes it. The test reads the table with a
// Scan, which the store itself never does.
func TestOAuthItemLayout(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx, s := t.Context(), e.store
	at := time.Now().UTC().Truncate(time.Millisecond)
	ws := memberWorkspace(t, s)
	_, err := s.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleAdmin, Email: "Alice@Example.com"})
	mustOK(t, "UpdateMember", err)
	client := oauthID("client")
	mustOK(t, "CreateOAuthClient", s.CreateOAuthClient(ctx, store.OAuthClient{ClientID: client, CreatedAt: at}))
	mustOK(t, "UpdateOAuthClientUsed", s.UpdateOAuthClientUsed(ctx, client, at.Add(48*time.Hour)))
	mustOK(t, "CreateOAuthPending", s.CreateOAuthPending(ctx, store.OAuthPending{ID: oauthID("pend"), CreatedAt: at, ExpiresAt: at.Add(10 * time.Minute)}))
	mustOK(t, "CreateOAuthCode", s.CreateOAuthCode(ctx, store.OAuthCode{Hash: auth.Hash("c"), CreatedAt: at, ExpiresAt: at.Add(time.Minute)}))
	g := testGrant(ws, "alice", at)
	g.ExpiresAt, g.RefreshHash = at.Add(time.Hour), auth.Hash("r0")
	mustOK(t, "CreateOAuthGrant", s.CreateOAuthGrant(ctx, g))
	far := at.Add(30 * 24 * time.Hour)
	_, err = s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, OldRefreshHash: g.RefreshHash, NewRefreshHash: auth.Hash("r1"), At: at, ExpiresAt: far})
	mustOK(t, "UpdateOAuthGrantRotate", err)
	mustOK(t, "UpdateOAuthPolicy", s.UpdateOAuthPolicy(ctx, store.OAuthPolicy{Mode: store.OAuthPolicyAny}))

	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(e.client, &dynamodb.ScanInput{TableName: aws.String(e.main)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		mustOK(t, "Scan", err)
		items = append(items, page.Items...)
	}
	str := func(it map[string]types.AttributeValue, name string) string {
		v, _ := it[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	kinds := map[string]int{}
	for _, it := range items {
		pk := str(it, "PK")
		if strings.HasPrefix(pk, dynamo.TenantPrefix) {
			continue
		}
		if !strings.HasPrefix(pk, dynamo.OAuthPrefix) && !strings.HasPrefix(pk, dynamo.MemberLookupPrefix) {
			t.Errorf("item %s/%s: key outside the tenant, OAuth and lookup prefixes", pk, str(it, "SK"))
		}
		if gsi := str(it, "GSI1PK"); gsi != "" && !strings.HasPrefix(gsi, dynamo.OAuthPrefix) {
			t.Errorf("item %s: index key %s outside the OAuth prefix", pk, gsi)
		}
		if strings.Contains(pk, "example.com") {
			t.Errorf("item %s: an e-mail in a key", pk)
		}
		kind := str(it, "SK")
		if strings.HasPrefix(pk, dynamo.OAuthPrefix+"WSGRANTS#") {
			kind = "list entry"
		}
		if strings.HasPrefix(pk, dynamo.MemberLookupPrefix) || kind == "POLICY" {
			kinds[kind]++
			continue // lookups and the policy do not expire
		}
		kinds[kind]++
		n, ok := it["ttl"].(*types.AttributeValueMemberN)
		if !ok {
			t.Errorf("item %s/%s lacks the TTL attribute", pk, kind)
			continue
		}
		ttl, err := strconv.ParseInt(n.Value, 10, 64)
		mustOK(t, "ttl", err)
		var expires time.Time
		switch kind {
		case skClientKind: // a client's expiry is its lapse, from its last use
			used, err := time.Parse(time.RFC3339Nano, str(it, "last_used_at"))
			mustOK(t, "last_used_at", err)
			if !used.Equal(at.Add(48 * time.Hour)) {
				t.Errorf("client last used %v, want %v", used, at.Add(48*time.Hour))
			}
			expires = used.Add(store.OAuthClientLapse)
		case "list entry":
			expires = far // the grant's expiry after the refresh
		default:
			expires, err = time.Parse(time.RFC3339Nano, str(it, "expires_at"))
			mustOK(t, "expires_at of "+pk, err)
		}
		if ttl < expires.Unix() {
			t.Errorf("item %s/%s: ttl %d before its expiry %v", pk, kind, ttl, expires)
		}
	}
	for _, k := range []string{skClientKind, "PENDING", "CODE", "GRANT", "REFRESH", "list entry", "POLICY"} {
		if kinds[k] == 0 {
			t.Errorf("no %s item found: %v", k, kinds)
		}
	}
	if kinds["REFRESH"] != 2 {
		t.Errorf("%d refresh hash items, want 2 (current and rotated)", kinds["REFRESH"])
	}
	if n := len(items) - countPrefix(items, dynamo.TenantPrefix) - countPrefix(items, dynamo.OAuthPrefix); n != 2 {
		t.Errorf("%d member lookup items, want 2 (by e-mail, by user)", n)
	}
}

const skClientKind = "CLIENT"

func countPrefix(items []map[string]types.AttributeValue, prefix string) int {
	n := 0
	for _, it := range items {
		if v, ok := it["PK"].(*types.AttributeValueMemberS); ok && strings.HasPrefix(v.Value, prefix) {
			n++
		}
	}
	return n
}

// holdAPI holds back the DeleteItem of one member e-mail lookup until released.
type holdAPI struct {
	dynamo.API
	pk       string
	held     chan struct{} // closed when the delete arrives
	release  chan struct{}
	holdOnce sync.Once
}

func (h *holdAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if pk, ok := in.Key["PK"].(*types.AttributeValueMemberS); ok && pk.Value == h.pk {
		h.holdOnce.Do(func() {
			close(h.held)
			<-h.release
		})
	}
	return h.API.DeleteItem(ctx, in, opts...)
}

// TestMemberOldLookupDeleteLosesToANewerWriter: writer X moves alice from e1 to e0;
// its delete of e1's lookup is held back while writer Y moves her back to e1. X's
// delete then arrives after Y rewrote that lookup, and must leave it: it is
// conditional on the version X read, which Y replaced.
func TestMemberOldLookupDeleteLosesToANewerWriter(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx, y := t.Context(), e.store
	ws := memberWorkspace(t, y)
	e0, e1 := oauthID("e0")+"@example.com", oauthID("e1")+"@example.com"
	_, err := y.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleMember, Email: e1})
	mustOK(t, "UpdateMember", err)
	h := &holdAPI{pk: dynamo.MemberEmailPK(e1), held: make(chan struct{}), release: make(chan struct{})}
	x := dynamo.New(e.client, e.main, e.tokens, dynamo.WithAPI(func(a dynamo.API) dynamo.API { h.API = a; return h }))
	done := make(chan error, 1)
	go func() {
		_, err := x.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleMember, Email: e0})
		done <- err
	}()
	<-h.held
	_, err = y.UpdateMember(ctx, store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleMember, Email: e1})
	mustOK(t, "UpdateMember by the newer writer", err)
	close(h.release)
	mustOK(t, "UpdateMember by the held writer", <-done)
	if m, err := y.GetMember(ctx, ws, "alice"); err != nil || m.Email != e1 {
		t.Fatalf("GetMember = %+v, %v; want e-mail %s", m, err, e1)
	}
	wantByEmail(t, y, e1, ws+"/alice")
	wantByEmail(t, y, e0)
}

// TestOAuthRoundTrips pins the DynamoDB calls each OAuth store method makes,
// background writes included, as TestRoundTrips does for the rest: the token
// endpoint's latency is the sum of these.
func TestOAuthRoundTrips(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx, s := t.Context(), e.store
	at := time.Now().UTC().Truncate(time.Millisecond)
	ws := memberWorkspace(t, s)
	client := store.OAuthClient{ClientID: oauthID("client"), CreatedAt: at}
	pending := store.OAuthPending{ID: oauthID("pend"), CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	code := store.OAuthCode{Hash: auth.Hash(oauthID("code")), CreatedAt: at, ExpiresAt: at.Add(time.Minute)}
	g := testGrant(ws, "alice", at)
	h0, h1 := auth.Hash(oauthID("r")), auth.Hash(oauthID("r"))
	withRefresh := testGrant(ws, "alice", at)
	withRefresh.RefreshHash = auth.Hash(oauthID("r"))
	member := store.Member{WorkspaceID: ws, UserID: "alice", Role: store.RoleAdmin, Email: "alice@example.com"}

	tests := []struct {
		method string
		want   int64
		call   func() error
	}{
		{"CreateOAuthClient", 1, func() error { return s.CreateOAuthClient(ctx, client) }},
		{"GetOAuthClient", 1, func() error { _, err := s.GetOAuthClient(ctx, client.ClientID); return err }},
		{"UpdateOAuthClientUsed", 1, func() error { return s.UpdateOAuthClientUsed(ctx, client.ClientID, at.Add(time.Hour)) }},
		{"UpdateOAuthClientUsed (earlier)", 2, func() error { return s.UpdateOAuthClientUsed(ctx, client.ClientID, at) }},
		{"ListOAuthClients", 1, func() error { _, err := s.ListOAuthClients(ctx); return err }},
		{"DeleteOAuthClient", 2, func() error { return s.DeleteOAuthClient(ctx, client.ClientID) }},
		{"CreateOAuthPending", 1, func() error { return s.CreateOAuthPending(ctx, pending) }},
		{"GetOAuthPending", 1, func() error { _, err := s.GetOAuthPending(ctx, pending.ID); return err }},
		{"UpdateOAuthPending", 1, func() error { return s.UpdateOAuthPending(ctx, pending) }},
		// The mark on the request path, the delete after it.
		{"DeleteOAuthPending", 2, func() error { return s.DeleteOAuthPending(ctx, pending.ID) }},
		{"CreateOAuthCode", 1, func() error { return s.CreateOAuthCode(ctx, code) }},
		{"ConsumeOAuthCode", 1, func() error { _, err := s.ConsumeOAuthCode(ctx, code.Hash, at); return err }},
		{"ConsumeOAuthCode (replay)", 2, func() error { _, err := s.ConsumeOAuthCode(ctx, code.Hash, at); return err }},
		{"CreateOAuthGrant", 2, func() error { return s.CreateOAuthGrant(ctx, g) }},
		{"CreateOAuthGrant with refresh", 3, func() error { return s.CreateOAuthGrant(ctx, withRefresh) }},
		{"GetOAuthGrant", 1, func() error { _, err := s.GetOAuthGrant(ctx, g.ID); return err }},
		{"UpdateOAuthGrantRotate (redeem)", 3, func() error {
			_, err := s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, NewRefreshHash: h0, At: at, ExpiresAt: g.ExpiresAt})
			return err
		}},
		{"UpdateOAuthGrantRotate (refresh)", 4, func() error {
			_, err := s.UpdateOAuthGrantRotate(ctx, store.OAuthRotation{GrantID: g.ID, OldRefreshHash: h0, NewRefreshHash: h1, At: at, ExpiresAt: g.ExpiresAt})
			return err
		}},
		{"GetOAuthGrantByRefresh", 2, func() error { _, _, err := s.GetOAuthGrantByRefresh(ctx, h1); return err }},
		{"UpdateOAuthGrantRevoked", 1, func() error { _, err := s.UpdateOAuthGrantRevoked(ctx, g.ID, at); return err }},
		{"ListOAuthGrants(ws, user)", 1, func() error { _, err := s.ListOAuthGrants(ctx, ws, "alice"); return err }},
		{"ListOAuthGrants(ws, \"\")", 2, func() error { _, err := s.ListOAuthGrants(ctx, ws, ""); return err }},
		{"GetOAuthPolicy", 1, func() error { _, err := s.GetOAuthPolicy(ctx); return err }},
		{"UpdateOAuthPolicy", 1, func() error { return s.UpdateOAuthPolicy(ctx, store.OAuthPolicy{Mode: store.OAuthPolicyAny}) }},
		// workspace check, read, two lookups, the record.
		{"UpdateMember (new)", 5, func() error { _, err := s.UpdateMember(ctx, member); return err }},
		{"UpdateMember (new e-mail)", 6, func() error {
			m := member
			m.Email = "alice.new@example.com"
			_, err := s.UpdateMember(ctx, m)
			return err
		}},
		{"ListMembersByEmail", 2, func() error { _, err := s.ListMembersByEmail(ctx, "alice.new@example.com"); return err }},
		{"ListMembersOfUser", 2, func() error { _, err := s.ListMembersOfUser(ctx, "alice"); return err }},
		{"ListMembers", 1, func() error { _, err := s.ListMembers(ctx, ws); return err }},
		{"DeleteMember", 4, func() error { return s.DeleteMember(ctx, ws, "alice") }},
	}
	var report strings.Builder
	for _, tc := range tests {
		e.calls.Reset()
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		if err := s.Drain(ctx); err != nil {
			t.Fatalf("%s: drain: %v", tc.method, err)
		}
		got, total := e.calls.Calls(), e.calls.Total()
		fmt.Fprintf(&report, "\n  %-34s %d  %v", tc.method, total, describe(got))
		if total != tc.want {
			t.Errorf("%s made %d calls %v, want %d", tc.method, total, got, tc.want)
		}
	}
	t.Log("DynamoDB calls per OAuth store method:" + report.String())
}

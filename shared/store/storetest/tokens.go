package storetest

import (
	"github.com/aacworkflow/aacmcp/shared/store"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

func normToken(r auth.TokenRecord) auth.TokenRecord {
	r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	if r.RevokedAt != nil {
		at := r.RevokedAt.UTC()
		r.RevokedAt = &at
	}
	return r
}

func testTokens(t *testing.T, b Backend) {
	ctx, ts := t.Context(), b.Tokens
	wsA, wsB := uid("ws"), uid("ws")
	at := baseTime()
	mk := func(ws, user string, created time.Time, scopes ...string) auth.TokenRecord {
		id := auth.NewTokenID()
		return auth.TokenRecord{Hash: sha(id + "-secret"), TokenID: id, Name: "test " + user, WorkspaceID: ws, UserID: user,
			Scopes: scopes, CreatedAt: created, ExpiresAt: created.Add(30 * 24 * time.Hour)}
	}
	r1 := mk(wsA, "alice", at, "issues:read")
	r2 := mk(wsA, "bob", at.Add(time.Minute), "issues:read", "issues:write")
	r2.ClientID, r2.GrantID = "https://client.example/meta.json", uid("grant") // an OAuth access token
	r3 := mk(wsB, "carol", at.Add(2*time.Minute), "dashboard:read")
	for _, r := range []auth.TokenRecord{r1, r2, r3} {
		must(t, "CreateToken", ts.CreateToken(ctx, r))
	}

	got, err := ts.GetTokenByHash(ctx, r2.Hash)
	must(t, "GetTokenByHash", err)
	if !reflect.DeepEqual(normToken(got), normToken(r2)) {
		t.Errorf("GetTokenByHash = %+v, want %+v", got, r2)
	}
	_, err = ts.GetTokenByHash(ctx, sha("never minted"))
	wantErr(t, "GetTokenByHash of an unknown hash", err, store.ErrNotFound)

	dupHash := mk(wsA, "mallory", at)
	dupHash.Hash = r1.Hash
	wantErr(t, "CreateToken with an existing hash", ts.CreateToken(ctx, dupHash), store.ErrAlreadyExists)
	dupID := mk(wsA, "mallory", at)
	dupID.TokenID = r1.TokenID
	wantErr(t, "CreateToken with an existing id", ts.CreateToken(ctx, dupID), store.ErrAlreadyExists)
	if got, err := ts.GetTokenByHash(ctx, r1.Hash); err != nil || got.UserID != "alice" {
		t.Errorf("refused CreateToken changed the original: %+v %v", got, err)
	}

	tokenIDs := func(rs []auth.TokenRecord, keep map[string]bool) []string {
		var out []string
		for _, r := range rs {
			if keep == nil || keep[r.TokenID] {
				out = append(out, r.TokenID)
			}
		}
		return out
	}
	listA, err := ts.ListTokens(ctx, wsA)
	must(t, "ListTokens A", err)
	if got, want := tokenIDs(listA, nil), []string{r2.TokenID, r1.TokenID}; !slices.Equal(got, want) {
		t.Errorf("ListTokens(A) = %v, want newest first %v", got, want)
	} else if !reflect.DeepEqual(normToken(listA[0]), normToken(r2)) || !reflect.DeepEqual(normToken(listA[1]), normToken(r1)) {
		t.Errorf("ListTokens(A) = %+v, want %+v", listA, []auth.TokenRecord{r2, r1})
	}
	listB, err := ts.ListTokens(ctx, wsB)
	must(t, "ListTokens B", err)
	if got := tokenIDs(listB, nil); !slices.Equal(got, []string{r3.TokenID}) {
		t.Errorf("ListTokens(B) = %v, want [%s]", got, r3.TokenID)
	}
	all, err := ts.ListTokens(ctx, "")
	must(t, "ListTokens all", err)
	mine := map[string]bool{r1.TokenID: true, r2.TokenID: true, r3.TokenID: true}
	if got, want := tokenIDs(all, mine), []string{r3.TokenID, r2.TokenID, r1.TokenID}; !slices.Equal(got, want) {
		t.Errorf("ListTokens(\"\") holds %v of ours, want newest first %v", got, want)
	}

	first := at.Add(time.Hour)
	rev, err := ts.UpdateTokenRevoked(ctx, r1.TokenID, first)
	must(t, "UpdateTokenRevoked", err)
	if rev.RevokedAt == nil || !rev.RevokedAt.Equal(first) || rev.TokenID != r1.TokenID || rev.Hash != r1.Hash {
		t.Errorf("UpdateTokenRevoked = %+v", rev)
	}
	rev, err = ts.UpdateTokenRevoked(ctx, r1.TokenID, first.Add(time.Hour))
	must(t, "UpdateTokenRevoked again", err)
	if rev.RevokedAt == nil || !rev.RevokedAt.Equal(first) {
		t.Errorf("second revoke moved revoked_at to %v, want the first time %v", rev.RevokedAt, first)
	}
	got, err = ts.GetTokenByHash(ctx, r1.Hash)
	must(t, "GetTokenByHash after revoke", err)
	if got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
		t.Errorf("stored revoked_at = %v, want %v", got.RevokedAt, first)
	}
	if got, _ := ts.GetTokenByHash(ctx, r2.Hash); got.RevokedAt != nil {
		t.Errorf("revoking one token revoked another: %+v", got)
	}
	rev, err = ts.UpdateTokenRevoked(ctx, r2.TokenID, first)
	must(t, "UpdateTokenRevoked (OAuth token)", err)
	if rev.ClientID != r2.ClientID || rev.GrantID != r2.GrantID {
		t.Errorf("UpdateTokenRevoked returned client %q grant %q, want %q %q", rev.ClientID, rev.GrantID, r2.ClientID, r2.GrantID)
	}
	_, err = ts.UpdateTokenRevoked(ctx, auth.NewTokenID(), first)
	wantErr(t, "UpdateTokenRevoked of an unknown id", err, store.ErrNotFound)
}

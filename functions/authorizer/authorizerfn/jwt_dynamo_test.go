package authorizerfn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwttest"
	"github.com/aacworkflow/aacmcp/shared/authzctx"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// TestBuildJWTOnDynamoDB wires the authorizer as the Lambda does (Build, the
// DynamoDB store's own lookup of members by e-mail, on dynalite) and sends it
// events with JWTs of an issuer on 127.0.0.1.
func TestBuildJWTOnDynamoDB(t *testing.T) {
	ctx := context.Background()
	srv := emulator.StartT(t, emulator.Dynalite)
	db := dynamodb.NewFromConfig(srv.AWSConfig())
	// dynalite lacks UpdateTimeToLive: that warning is no failure here.
	var warn *dynamo.TTLWarning
	if err := dynamo.CreateTables(ctx, db, "main", "tokens"); err != nil && !errors.As(err, &warn) {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := dynamo.New(db, "main", "tokens", dynamo.WithLogger(quiet))
	if _, err := st.CreateWorkspace(ctx, store.Workspace{ID: "acme", Key: "ACME", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateMember(ctx, store.Member{WorkspaceID: "acme", UserID: "ada", Role: store.RoleMember, Email: "Ada@Example.com"}); err != nil {
		t.Fatal(err)
	}

	iss := jwttest.NewIssuer(t)
	key := iss.AddEC(t, "e1")
	const aud = "https://abc123def4.execute-api.us-east-1.amazonaws.com/prod/mcp"
	a, err := Build(lambdaenv.Config{Table: "main", TokensTable: "tokens", AuthFailLimit: mustRate(t, "20/m")}, Deps{
		DB: db, Audit: nopSink{}, Stdout: io.Discard, Logger: quiet,
		JWT: lambdaenv.JWT{Issuer: iss.URL, Audiences: []string{aud}},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := func(email string) string {
		return key.Sign(t, map[string]any{"iss": iss.URL, "aud": aud, "email": email, "exp": now.Add(time.Hour).Unix(),
			"jti": "d1", "scope": "issues:read"})
	}
	resp, err := a.Handle(ctx, event("Bearer "+tok("ada@example.com")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Context[authzctx.WorkspaceID] != "acme" || resp.Context[authzctx.UserID] != "ada" || resp.Context[authzctx.TokenID] != "jwt:d1" || resp.Context[authzctx.Scopes] != "issues:read" {
		t.Errorf("context %v", resp.Context)
	}
	if resp, err := a.Handle(ctx, event("Bearer "+tok("eve@example.com"))); err != nil || !Denied(resp) {
		t.Errorf("no member: %+v, %v; want the Deny of a refused token", resp, err)
	}
	if err := st.DeleteMember(ctx, "acme", "ada"); err != nil {
		t.Fatal(err)
	}
	if resp, err := a.Handle(ctx, event("Bearer "+tok("ada@example.com"))); err != nil || !Denied(resp) {
		t.Errorf("member removed: %+v, %v; want the Deny of a refused token", resp, err)
	}
}

func mustRate(t *testing.T, s string) ratelimit.Rate {
	t.Helper()
	r, err := ratelimit.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

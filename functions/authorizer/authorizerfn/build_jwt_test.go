package authorizerfn

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// TestBuildJWT: the environment's external issuer reaches the authorizer, and a
// configuration that would accept unsafe tokens fails the cold start.
func TestBuildJWT(t *testing.T) {
	cfg := lambdaenv.Config{TokensTable: "tokens", Table: "main"}
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1"}) // never called here
	base := Deps{DB: db, Audit: nopSink{}}
	a, err := Build(cfg, base)
	if err != nil || a.cfg.JWT != nil {
		t.Fatalf("without an issuer: JWT %v, err %v", a.cfg.JWT, err)
	}
	for _, tt := range []struct {
		name    string
		jwt     lambdaenv.JWT
		wantErr string
	}{
		{name: "valid", jwt: lambdaenv.JWT{Issuer: "https://idp.example.com", Audiences: []string{"https://mcp.example.com/mcp"}}},
		{name: "HMAC", jwt: lambdaenv.JWT{Issuer: "https://idp.example.com", Audiences: []string{"x"}, Algorithms: []string{"HS256"}}, wantErr: "HS256"},
		{name: "http issuer", jwt: lambdaenv.JWT{Issuer: "http://idp.example.com", Audiences: []string{"x"}}, wantErr: "https"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := base
			d.JWT = tt.jwt
			d.Members = members{}
			a, err := Build(cfg, d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || a.cfg.JWT == nil {
				t.Fatalf("JWT %v, err %v", a.cfg.JWT, err)
			}
		})
	}
}

type nopSink struct{}

func (nopSink) Write(context.Context, audit.Record) error { return nil }

type members map[string][]store.Member

func (m members) ListMembersByEmail(_ context.Context, email string) ([]store.Member, error) {
	return m[email], nil
}

// TestBuildJWTNeedsTheMainTable: the DynamoDB lookup by e-mail reads the main table.
func TestBuildJWTNeedsTheMainTable(t *testing.T) {
	_, err := Build(lambdaenv.Config{TokensTable: "tokens"}, Deps{
		DB: dynamodb.New(dynamodb.Options{Region: "us-east-1"}), Audit: nopSink{},
		JWT: lambdaenv.JWT{Issuer: "https://idp.example.com", Audiences: []string{"x"}},
	})
	if err == nil || !strings.Contains(err.Error(), lambdaenv.EnvTable) {
		t.Fatalf("err = %v, want one naming %s", err, lambdaenv.EnvTable)
	}
}

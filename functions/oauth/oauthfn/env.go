package oauthfn

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/oauth"
)

// The function's own environment variables (set by the CDK stack), beside
// lambdaenv's AACMCP_TABLE, AACMCP_TOKENS_TABLE and AACMCP_AUDIT_STREAM.
const (
	EnvPublicURL           = "AACMCP_PUBLIC_URL"
	EnvOIDCIssuer          = "AACMCP_OIDC_ISSUER"
	EnvOIDCClientID        = "AACMCP_OIDC_CLIENT_ID"
	EnvOIDCClientSecretARN = "AACMCP_OIDC_CLIENT_SECRET_ARN"
	EnvAccessTokenTTL      = "AACMCP_OAUTH_ACCESS_TTL"
)

// LoadConfig reads the function's configuration through getenv. The upstream
// client secret is named by ARN only: a secret value in the environment would be
// readable by anyone who may read the function's configuration.
func LoadConfig(getenv func(string) string, base lambdaenv.Config) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{
		Config:              base,
		PublicURL:           strings.TrimRight(get(EnvPublicURL), "/"),
		OIDCIssuer:          get(EnvOIDCIssuer),
		OIDCClientID:        get(EnvOIDCClientID),
		OIDCClientSecretARN: get(EnvOIDCClientSecretARN),
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return c, fmt.Errorf("environment variable %s %q: want an absolute https URL without query or fragment", EnvPublicURL, c.PublicURL)
		}
	}
	switch {
	case c.OIDCIssuer == "":
		return c, fmt.Errorf("environment variable %s is required (the upstream OpenID Connect issuer people sign in with)", EnvOIDCIssuer)
	case c.OIDCClientID == "" || c.OIDCClientSecretARN == "":
		return c, fmt.Errorf("environment variable %s needs %s and %s", EnvOIDCIssuer, EnvOIDCClientID, EnvOIDCClientSecretARN)
	}
	if s := get(EnvAccessTokenTTL); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > oauth.MaxAccessTokenTTL {
			return c, fmt.Errorf("environment variable %s %q: want a duration above 0 and at most %s", EnvAccessTokenTTL, s, oauth.MaxAccessTokenTTL)
		}
		c.AccessTokenTTL = d
	}
	return c, nil
}

// FromEnv builds the function at cold start from its environment. The logger is
// usable even when err is set, so main can report it.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Function, *slog.Logger, error) {
	env, err := lambdaenv.LoadAudited(ctx, getenv, stdout, FunctionName, lambdaenv.EnvTable, lambdaenv.EnvTokensTable, lambdaenv.EnvAuditStream)
	if err != nil {
		return nil, env.Logger, err
	}
	cfg, err := LoadConfig(getenv, env.Config)
	if err != nil {
		return nil, env.Logger, err
	}
	sm := secretsmanager.NewFromConfig(env.AWS)
	keys, err := confirm.KeysFromEnv(ctx, sm, getenv)
	if err != nil {
		return nil, env.Logger, err
	}
	fn, err := Build(ctx, cfg, Deps{
		DB:          dynamodb.NewFromConfig(env.AWS),
		Audit:       env.Audit,
		Secrets:     sm,
		Logger:      env.Logger,
		ConfirmKeys: keys,
	})
	return fn, env.Logger, err
}

package authorizerfn

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/metrics"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// FunctionName is the Function dimension of this function's metrics.
const FunctionName = "authorizer"

// Deps are the outside services, built once per cold start.
type Deps struct {
	// DB is the DynamoDB client (*dynamodb.Client); only the tokens table is used.
	DB dynamo.API
	// Audit is where rejection records go (the Kinesis sink in Lambda). Build wraps
	// it so every record also emits its EMF metrics line.
	Audit  audit.Sink
	Stdout io.Writer
	Logger *slog.Logger
	Now    func() time.Time
	// JWT configures an external issuer whose access tokens are accepted
	// (lambdaenv.LoadJWT); zero for none.
	JWT lambdaenv.JWT
	// Members resolves a JWT's user to member records; nil means the DynamoDB
	// store's own lookup by e-mail.
	Members jwtaccess.Members
	// HTTPClient fetches the issuer's metadata and JWKS; nil means a client with
	// a 5 s timeout.
	HTTPClient *http.Client
}

// Build wires the authorizer from its validated configuration.
func Build(cfg lambdaenv.Config, d Deps) (*Authorizer, error) {
	switch {
	case d.DB == nil:
		return nil, errors.New("authorizerfn: no DynamoDB client")
	case d.Audit == nil:
		return nil, errors.New("authorizerfn: no audit sink")
	case cfg.TokensTable == "":
		return nil, fmt.Errorf("authorizerfn: %s is required", lambdaenv.EnvTokensTable)
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	// The store is used for GetTokenByHash, and with an external issuer for the
	// members' e-mail lookup.
	tokens := dynamo.New(d.DB, cfg.Table, cfg.TokensTable, dynamo.WithLogger(log))
	rej := GuardRejecter{guard.New(guard.Config{
		Catalog: catalog.New(catalog.Deps{}),
		Audit:   metrics.Sink{Next: d.Audit, Emitter: metrics.New(d.Stdout, FunctionName)},
		Now:     d.Now,
		Logger:  log,
	})}
	jv, err := buildJWT(cfg, d, tokens, log)
	if err != nil {
		return nil, err
	}
	// No cache in front of the verifier: API Gateway already caches the policy for
	// 60 s, and a second cache would stretch how long a revoked token keeps working.
	return New(Config{
		Verifier:     &auth.Verifier{Store: tokens, Now: d.Now},
		JWT:          jv,
		Audit:        rej,
		Failures:     NewDynamoFailures(d.DB, cfg.TokensTable, cfg.AuthFailLimit),
		FailureLimit: cfg.AuthFailLimit.Limit,
		// Set by the stack only with its CloudFront front door (lambdaenv).
		TrustViewerAddress: cfg.TrustViewerAddress,
		Now:                d.Now,
		Logger:             log,
	}), nil
}

// buildJWT returns the verifier of the external issuer's tokens, or nil when none
// is configured. A nil interface, not a typed nil: Authorizer tests JWT != nil.
func buildJWT(cfg lambdaenv.Config, d Deps, tokens *dynamo.Store, log *slog.Logger) (Verifier, error) {
	if d.JWT.Issuer == "" {
		return nil, nil
	}
	members := d.Members
	if members == nil {
		// The DynamoDB lookup by e-mail reads the main table (MEMBERBY# lookup
		// items, then the WS# member records they point to).
		if cfg.Table == "" {
			return nil, fmt.Errorf("authorizerfn: %s needs %s (members are looked up by e-mail in the main table)", lambdaenv.EnvJWTIssuer, lambdaenv.EnvTable)
		}
		m, ok := any(tokens).(jwtaccess.Members)
		if !ok {
			return nil, errors.New("authorizerfn: the DynamoDB store cannot look members up by e-mail, which JWT access tokens need")
		}
		members = m
	}
	v, err := jwtaccess.New(jwtaccess.Config{
		Settings:   d.JWT,
		Members:    members,
		HTTPClient: d.HTTPClient,
		Now:        d.Now,
		Logger:     log,
	})
	if err != nil {
		return nil, fmt.Errorf("authorizerfn: %s: %w", lambdaenv.EnvJWTIssuer, err)
	}
	return v, nil
}

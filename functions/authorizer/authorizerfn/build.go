package authorizerfn

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
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
	// The store is used for GetTokenByHash only; the main table is not this
	// function's (its IAM role cannot reach it).
	tokens := dynamo.New(d.DB, "", cfg.TokensTable, dynamo.WithLogger(log))
	// The guard is used only to write rejection records exactly as the MCP function
	// writes its own (tool metadata from the catalog); it runs no tool and touches no
	// store.
	g := guard.New(guard.Config{
		Catalog: catalog.New(catalog.Deps{}),
		Audit:   metrics.Sink{Next: d.Audit, Emitter: metrics.New(d.Stdout, FunctionName)},
		Now:     d.Now,
		Logger:  log,
	})
	// No cache in front of the verifier: API Gateway already caches the policy for
	// 60 s, and a second cache would stretch how long a revoked token keeps working.
	return New(Config{
		Verifier:     &auth.Verifier{Store: tokens, Now: d.Now},
		Audit:        g,
		Failures:     NewDynamoFailures(d.DB, cfg.TokensTable, cfg.AuthFailLimit),
		FailureLimit: cfg.AuthFailLimit.Limit,
		Now:          d.Now,
		Logger:       log,
	}), nil
}

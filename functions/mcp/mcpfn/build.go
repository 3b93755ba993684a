package mcpfn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/mcpserver"
	"github.com/aacworkflow/aacmcp/shared/metrics"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// FunctionName is the Function dimension of this function's metrics.
const FunctionName = "mcp"

// Deps are the outside services, built once per cold start.
type Deps struct {
	// DB is the DynamoDB client (*dynamodb.Client).
	DB dynamo.API
	// Audit is where records go (the Kinesis sink in Lambda). Build wraps it so
	// every record also emits its EMF metrics line.
	Audit audit.Sink
	// Secrets reads the webhook signing secret; only used when a webhook is set.
	Secrets SecretsAPI
	// Stdout receives the EMF lines (os.Stdout in Lambda).
	Stdout io.Writer
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// HMACKey keys args_hmac and idempotency_key_hmac, and through
	// audit.CursorKey the list cursors' MACs (FromEnv reads it from Secrets
	// Manager). Empty: a random digest key per instance, so digests are comparable
	// within one instance only, and unsigned cursors; for tests and emulators.
	HMACKey []byte
	// ConfirmKeys seal the requestState of a destructive call a person must
	// confirm (FromEnv reads them from Secrets Manager). Nil: a random key per
	// instance, so a retry that reaches another instance is refused as
	// confirmation_invalid and the person is asked again; for tests and the
	// local gateway, which runs one instance.
	ConfirmKeys *confirm.Keyring
}

// Build wires the function from its validated configuration.
func Build(ctx context.Context, cfg lambdaenv.Config, d Deps) (*Function, error) {
	switch {
	case d.DB == nil:
		return nil, errors.New("mcpfn: no DynamoDB client")
	case d.Audit == nil:
		return nil, errors.New("mcpfn: no audit sink")
	case cfg.Table == "":
		return nil, fmt.Errorf("mcpfn: %s is required", lambdaenv.EnvTable)
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	if cfg.AutopilotWebhook != "" && d.Secrets == nil {
		return nil, errors.New("mcpfn: a webhook is configured but there is no Secrets Manager client")
	}
	dispatcher, err := NewDispatcher(ctx, d.Secrets, cfg.AutopilotWebhook, cfg.AutopilotSecretARN, log)
	if err != nil {
		return nil, err
	}
	opts := []dynamo.Option{dynamo.WithLogger(log)}
	if d.Now != nil {
		opts = append(opts, dynamo.WithClock(d.Now))
	}
	digester := audit.EphemeralHMAC()
	if len(d.HMACKey) > 0 {
		if digester, err = audit.NewHMAC(d.HMACKey); err != nil {
			return nil, err
		}
		cursorKey, err := audit.CursorKey(d.HMACKey)
		if err != nil {
			return nil, err
		}
		opts = append(opts, dynamo.WithCursorSecret(cursorKey))
	} else {
		// Cursors stay unsigned rather than keyed per instance: a page fetched from
		// another instance would otherwise be refused. They are still bound to the
		// caller's workspace and query.
		log.Warn("no audit HMAC key; args_hmac and idempotency_key_hmac are keyed per instance, list cursors are unsigned")
	}
	keys := d.ConfirmKeys
	if keys == nil {
		// Not flag-only: a workspace on require would then accept a bare
		// confirm: true. A per-instance key never lets a call through that
		// the policy would refuse; at worst the person is asked twice.
		if keys, err = confirm.EphemeralKeyring(); err != nil {
			return nil, err
		}
		log.Warn("no confirmation key (" + confirm.EnvKeyARN + "); requestState is sealed per instance, and a retry reaching another instance is refused")
	}
	keys.SetLogger(log)
	st := dynamo.New(d.DB, cfg.Table, cfg.TokensTable, opts...)
	cat := catalog.New(catalog.Deps{Dispatcher: dispatcher})
	g := guard.New(guard.Config{
		Catalog: cat,
		Store:   st,
		Audit:   metrics.Sink{Next: d.Audit, Emitter: metrics.New(d.Stdout, FunctionName)},
		Limiter: ratelimit.New(st, cfg.RateLimit),
		Now:     d.Now,
		Logger:  log,
		HMAC:    digester,
		// Both or neither: the guard keeps every workspace on flag without them.
		Confirmations: st,
		Keyring:       keys,
		Approvals:     st,
	})
	// The input schemas are not compiled here: each compiles on its tool's first
	// call (guard.toolSchema), which keeps about 2 ms of metaschema validation out of
	// every cold start. They are constants of the catalog, compiled by its tests and
	// by `aacmcp serve` at startup, so a broken one cannot reach a deployment.
	fn := New(Config{
		Guard:   g,
		Catalog: cat,
		Server: mcpserver.Config{
			AuthorizationServers: cfg.AuthorizationServers,
			AllowedOrigins:       cfg.AllowedOrigins,
			PublicURL:            cfg.PublicURL,
			// API Gateway owns Host (execute-api or the custom domain): DNS
			// rebinding cannot reach a Lambda through it.
			AllowedHosts: []string{"*"},
		},
		Logger:             log,
		Now:                d.Now,
		TrustViewerAddress: cfg.TrustViewerAddress,
	})
	fn.store = st
	return fn, nil
}

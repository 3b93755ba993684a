package mcpfn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
)

// FromEnv builds the function at cold start from its environment:
// AACMCP_TABLE and AACMCP_AUDIT_STREAM (required), AACMCP_TOKENS_TABLE,
// AACMCP_AUTOPILOT_WEBHOOK and AACMCP_AUTOPILOT_SECRET_ARN, AACMCP_RATE_LIMIT,
// AACMCP_ALLOWED_ORIGINS, AACMCP_AUTHORIZATION_SERVERS, LOG_LEVEL, and the SDK's own
// variables. The logger is usable even when err is set, so main can report it.
func FromEnv(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Function, *slog.Logger, error) {
	env, err := lambdaenv.LoadAudited(ctx, getenv, stdout, FunctionName, lambdaenv.EnvTable, lambdaenv.EnvAuditStream)
	if err != nil {
		return nil, env.Logger, err
	}
	sm := secretsmanager.NewFromConfig(env.AWS)
	key, keys, err := readKeys(ctx, sm, getenv)
	if err != nil {
		return nil, env.Logger, err
	}
	fn, err := Build(ctx, env.Config, Deps{
		DB:      dynamodb.NewFromConfig(env.AWS),
		Audit:   env.Audit,
		Secrets: sm,
		Stdout:  stdout,
		Logger:  env.Logger,
		HMACKey: key,
		// nil when neither variable is set: Build seals per instance and says so.
		ConfirmKeys: keys,
	})
	return fn, env.Logger, err
}

// readKeys reads the audit HMAC key and the confirmation keyring from Secrets
// Manager side by side: they are independent round trips (three: the HMAC secret and
// both stages of the confirmation secret), and the cold start waits for them before
// its first answer, so together they cost one (TestReadKeysTogether). A nil key
// means the explicit per-instance opt-in (Build keys the digests per instance and
// says so); a nil keyring, that no confirmation secret is configured.
func readKeys(ctx context.Context, sm SecretsAPI, getenv func(string) string) ([]byte, *confirm.Keyring, error) {
	var (
		key    []byte
		keyErr error
		read   sync.WaitGroup
	)
	if arn := getenv(EnvHMACKeySecretARN); arn != "" || getenv(EnvHMACKeyEphemeral) != "true" {
		read.Go(func() { key, keyErr = HMACKey(ctx, sm, arn) })
	}
	keys, err := ConfirmKeys(ctx, sm, getenv)
	read.Wait()
	if err := errors.Join(keyErr, err); err != nil {
		return nil, nil, err
	}
	return key, keys, nil
}

// EnvHMACKeySecretARN names the Secrets Manager secret holding the deployment's
// audit HMAC key (hex, at least 32 bytes), read once at cold start.
const EnvHMACKeySecretARN = "AACMCP_AUDIT_HMAC_KEY_ARN"

// EnvHMACKeyEphemeral set to "true", with no secret ARN, keys the digests with a
// random key of the instance's own. It is the explicit opt-in of emulators that have
// no Secrets Manager (the Runtime Interface Emulator tests); the stack never sets it,
// and without either variable the function refuses to start.
const EnvHMACKeyEphemeral = "AACMCP_AUDIT_HMAC_KEY_EPHEMERAL"

// HMACKey reads the audit HMAC key from Secrets Manager. The variable is
// required: without it each instance would key its digests differently, and equal
// calls would stop looking equal in the audit log.
func HMACKey(ctx context.Context, sm SecretsAPI, arn string) ([]byte, error) {
	if strings.TrimSpace(arn) == "" {
		return nil, fmt.Errorf("environment variable %s is not set (the audit HMAC key's secret)", EnvHMACKeySecretARN)
	}
	out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(strings.TrimSpace(arn))})
	if err != nil {
		return nil, fmt.Errorf("read the audit HMAC key: %w", err)
	}
	key, err := audit.ParseHMACKey(aws.ToString(out.SecretString))
	if err != nil {
		return nil, fmt.Errorf("the audit HMAC key secret: %w", err)
	}
	return key, nil
}

// ConfirmKeys loads the keyring that seals confirmation requestState:
// AACMCP_CONFIRM_KEY_ARN names a Secrets Manager secret (a base64 32-byte key,
// AWSPREVIOUS still opening states sealed before a rotation; the keyring reloads
// it while the instance is warm, see confirm.SecretsKeyring), and
// AACMCP_CONFIRM_KEY_EPHEMERAL=true is the emulators' explicit opt-in to a key
// of the instance's own. Neither: nil, and Build falls back to a per-instance
// key with a warning rather than refusing to start: the fallback never weakens a
// workspace policy (at worst a person is asked again), and the stack always sets
// the variable (infra/confirmkey.go).
func ConfirmKeys(ctx context.Context, sm SecretsAPI, getenv func(string) string) (*confirm.Keyring, error) {
	return confirm.KeysFromEnv(ctx, sm, getenv)
}

// Package lambdaenv is what every aacmcp Lambda function does at cold start and per
// invocation: read and validate its environment, build its logger, load the AWS SDK
// configuration, and bound an invocation by the function's own deadline.
//
// The environment is the contract with the CDK stack. Each function names the
// variables it cannot run without; a missing one fails the init phase with a log line
// that names it, instead of failing every request later.
package lambdaenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

// Environment variable names (set by the CDK stack).
const (
	EnvTable                = "AACMCP_TABLE"
	EnvTokensTable          = "AACMCP_TOKENS_TABLE"
	EnvAuditStream          = "AACMCP_AUDIT_STREAM"
	EnvAutopilotWebhook     = "AACMCP_AUTOPILOT_WEBHOOK"
	EnvAutopilotSecretARN   = "AACMCP_AUTOPILOT_SECRET_ARN"
	EnvRateLimit            = "AACMCP_RATE_LIMIT"
	EnvAuthFailLimit        = "AACMCP_AUTH_FAIL_LIMIT"
	EnvAllowedOrigins       = "AACMCP_ALLOWED_ORIGINS"
	EnvAuthorizationServers = "AACMCP_AUTHORIZATION_SERVERS"
	EnvLogLevel             = "LOG_LEVEL"
	// EnvTrustViewerAddress "true" attributes requests to the CloudFront viewer
	// address (apigw.SourceIP): the stack sets it only with its front door, whose
	// regional WAF lets no request reach the stage around CloudFront.
	EnvTrustViewerAddress = "AACMCP_TRUST_VIEWER_ADDRESS"
)

// Defaults of the optional variables.
const (
	DefaultRateLimit     = "120/m"
	DefaultAuthFailLimit = "20/m"
)

// descriptions say what a required variable is for, so the init error is actionable.
var descriptions = map[string]string{
	EnvTable:       "name of the main DynamoDB table",
	EnvTokensTable: "name of the DynamoDB tokens table",
	EnvAuditStream: "name of the Kinesis audit stream",
}

// Config is the validated environment of a function.
type Config struct {
	Table                string
	TokensTable          string
	AuditStream          string
	AutopilotWebhook     string
	AutopilotSecretARN   string
	RateLimit            ratelimit.Rate
	AuthFailLimit        ratelimit.Rate
	AllowedOrigins       []string
	AuthorizationServers []string
	// PublicURL is the base URL clients use (AACMCP_PUBLIC_URL, no trailing
	// slash): behind the CloudFront distribution the Host and stage of the event
	// are the execute-api origin's, not what the client sees. "" derives it per
	// request.
	PublicURL string
	LogLevel  slog.Level
	// TrustViewerAddress: see EnvTrustViewerAddress.
	TrustViewerAddress bool
}

// Load reads the environment through getenv (os.Getenv in a function, a map in
// tests). Every variable in required must be non-empty. All problems are reported
// together, each naming its variable.
func Load(getenv func(string) string, required ...string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	var errs []error
	for _, k := range required {
		if get(k) == "" {
			desc := descriptions[k]
			if desc == "" {
				desc = "required"
			}
			errs = append(errs, fmt.Errorf("environment variable %s is not set (%s)", k, desc))
		}
	}
	c := Config{
		Table:                get(EnvTable),
		TokensTable:          get(EnvTokensTable),
		AuditStream:          get(EnvAuditStream),
		AutopilotWebhook:     get(EnvAutopilotWebhook),
		AutopilotSecretARN:   get(EnvAutopilotSecretARN),
		AllowedOrigins:       SplitList(get(EnvAllowedOrigins)),
		AuthorizationServers: SplitList(get(EnvAuthorizationServers)),
		PublicURL:            strings.TrimRight(get(EnvPublicURL), "/"),
	}
	// Tokens of an external issuer are accepted (authorizer): the resource metadata
	// must name it, or clients would not know where to get them.
	if iss := get(EnvJWTIssuer); iss != "" && !slices.Contains(c.AuthorizationServers, iss) {
		c.AuthorizationServers = append(c.AuthorizationServers, iss)
	}
	var err error
	if c.RateLimit, err = parseRate(get, EnvRateLimit, DefaultRateLimit); err != nil {
		errs = append(errs, err)
	}
	if c.AuthFailLimit, err = parseRate(get, EnvAuthFailLimit, DefaultAuthFailLimit); err != nil {
		errs = append(errs, err)
	}
	if c.LogLevel, err = parseLevel(get(EnvLogLevel)); err != nil {
		errs = append(errs, err)
	}
	switch v := get(EnvTrustViewerAddress); v {
	case "", "false":
	case "true":
		c.TrustViewerAddress = true
	default:
		// A typo must not silently attribute every request to CloudFront's edge
		// servers (or to a header a client wrote): fail the cold start instead.
		errs = append(errs, fmt.Errorf("environment variable %s: %q is not true or false", EnvTrustViewerAddress, v))
	}
	// A webhook without its signing secret would send unsigned jobs the runner must
	// reject; refuse the configuration instead.
	if c.AutopilotWebhook != "" && c.AutopilotSecretARN == "" {
		errs = append(errs, fmt.Errorf("environment variable %s is set but %s is not (the webhook signing secret)", EnvAutopilotWebhook, EnvAutopilotSecretARN))
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

func parseRate(get func(string) string, key, def string) (ratelimit.Rate, error) {
	v := get(key)
	if v == "" {
		v = def
	}
	r, err := ratelimit.Parse(v)
	if err != nil {
		return ratelimit.Rate{}, fmt.Errorf("environment variable %s: %w", key, err)
	}
	return r, nil
}

func parseLevel(s string) (slog.Level, error) {
	if s == "" {
		return slog.LevelInfo, nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo, fmt.Errorf("environment variable %s: %q is not one of DEBUG, INFO, WARN, ERROR", EnvLogLevel, s)
	}
	return l, nil
}

// SplitList splits a comma-separated list, trimming blanks and dropping empties:
// how every list in an environment variable or a CLI flag's env default is read.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// NewLogger returns the JSON logger of a function: CloudWatch Logs Insights parses
// JSON lines field by field. function is added to every line.
func NewLogger(w io.Writer, level slog.Level, function string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})).With("function", function)
}

// DeadlineMargin is the time an invocation keeps back from the Lambda deadline to
// write its audit record and return its answer before the runtime kills it.
const DeadlineMargin = 500 * time.Millisecond

// minBudget is the least time a handler is given when the deadline is already close:
// a zero or negative budget would fail every call instantly and audit nothing.
const minBudget = 100 * time.Millisecond

// WithDeadline derives the handler's context from the Lambda context: its deadline
// minus margin (at least minBudget from now). Without a deadline (in-process use by
// the local gateway), fallback bounds the call, as API Gateway's integration timeout
// would.
func WithDeadline(ctx context.Context, margin, fallback time.Duration, now time.Time) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithTimeout(ctx, fallback)
	}
	target := dl.Add(-margin)
	if floor := now.Add(minBudget); target.Before(floor) {
		target = floor
	}
	if target.After(dl) {
		target = dl
	}
	return context.WithDeadline(ctx, target)
}

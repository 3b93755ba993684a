// Package config reads the deployment settings of the CDK app from CDK context
// (cdk.json "context" or `cdk deploy -c key=value`) and validates them, so that a typo
// fails `cdk synth` with a message naming the key instead of failing a deployment
// half-way through or, worse, deploying a function that rejects its own configuration.
package config

import (
	"errors"
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

// Context keys. Each is documented in docs/deploy.md.
const (
	KeyAutopilotWebhookURL  = "autopilotWebhookUrl"
	KeyRateLimit            = "rateLimit"
	KeyAuthFailLimit        = "authFailLimit"
	KeyAllowedOrigins       = "allowedOrigins"
	KeyAuthorizationServers = "authorizationServers"
	KeyLogLevel             = "logLevel"
	KeyAlarmEmail           = "alarmEmail"
	KeyAuditRetentionDays   = "auditRetentionDays"
	KeyLogRetentionDays     = "logRetentionDays"
	KeyAPIRateLimit         = "apiRateLimit"
	KeyAPIBurstLimit        = "apiBurstLimit"
	KeyWAFRateLimit         = "wafRateLimit"
	KeyMaxBodyBytes         = "maxBodyBytes"
	KeyAthenaScanCutoff     = "athenaBytesScannedCutoff"
	KeyDomainName           = "domainName"
	KeyCertificateARN       = "certificateArn"
	KeyGlueDatabase         = "glueDatabase"
	KeyDenialAlarmThreshold = "denialAlarmThreshold"
	KeyHostedZoneID         = "hostedZoneId"
	KeyHostedZoneName       = "hostedZoneName"
	KeyOIDCIssuer           = "oidcIssuer"
	KeyOIDCClientID         = "oidcClientId"
	KeyOIDCClientSecretARN  = "oidcClientSecretArn"
	KeyCognitoDomainPrefix  = "cognitoDomainPrefix"
	KeyCognitoFeaturePlan   = "cognitoFeaturePlan"
	KeyWAFTokenRateLimit    = "wafOAuthTokenRateLimit"
	KeyWAFRegisterRateLimit = "wafOAuthRegisterRateLimit"
	KeyOAuthAccessTTL       = "oauthAccessTtl"
	KeyJWTIssuer            = "jwtIssuer"
	KeyJWTAudience          = "jwtAudience"
	KeyJWTClients           = "jwtClients"
	KeyJWTJWKSURL           = "jwtJwksUrl"
	KeyJWTAlgorithms        = "jwtAlgorithms"
	KeyJWTUserClaim         = "jwtUserClaim"
	KeyJWTWorkspace         = "jwtWorkspace"
	KeyJWTWorkspaceClaim    = "jwtWorkspaceClaim"
	KeyJWTRequireATJWT      = "jwtRequireAtJwt"
	KeyAuditObjectLockMode  = "auditObjectLockMode"
	KeyAuditObjectLockDays  = "auditObjectLockDays"
	KeyFrontDoor            = "frontDoor"
	KeyRegion               = "region"
	KeyStackName            = "stackName"
	KeyWAFBearerRateLimit   = "wafBearerRateLimit"
	KeyWAFPerTokenRateLimit = "wafPerTokenRateLimit"
	// KeyOriginSecretVersion and KeyOriginSecretPreviousVersion pin the origin
	// secret's Secrets Manager versions (docs/deploy.md, "Rotating the origin secret").
	KeyOriginSecretVersion         = "originSecretVersion"
	KeyOriginSecretPreviousVersion = "originSecretPreviousVersion"
)

// Keys lists every context key the app reads.
var Keys = []string{
	KeyAutopilotWebhookURL, KeyRateLimit, KeyAuthFailLimit, KeyAllowedOrigins,
	KeyAuthorizationServers, KeyLogLevel, KeyAlarmEmail, KeyAuditRetentionDays,
	KeyLogRetentionDays, KeyAPIRateLimit, KeyAPIBurstLimit, KeyWAFRateLimit, KeyMaxBodyBytes,
	KeyAthenaScanCutoff, KeyDomainName, KeyCertificateARN, KeyGlueDatabase,
	KeyDenialAlarmThreshold, KeyHostedZoneID, KeyHostedZoneName, KeyOIDCIssuer, KeyOIDCClientID,
	KeyOIDCClientSecretARN, KeyCognitoDomainPrefix, KeyCognitoFeaturePlan, KeyWAFTokenRateLimit,
	KeyWAFRegisterRateLimit, KeyOAuthAccessTTL, KeyJWTIssuer, KeyJWTAudience, KeyJWTClients,
	KeyJWTJWKSURL, KeyJWTAlgorithms, KeyJWTUserClaim, KeyJWTWorkspace, KeyJWTWorkspaceClaim,
	KeyJWTRequireATJWT, KeyAuditObjectLockMode, KeyAuditObjectLockDays, KeyFrontDoor, KeyRegion,
	KeyStackName, KeyWAFBearerRateLimit, KeyWAFPerTokenRateLimit, KeyOriginSecretVersion,
	KeyOriginSecretPreviousVersion,
}

// Config is the validated deployment configuration.
type Config struct {
	// AutopilotWebhookURL is the agent runner's HTTPS endpoint; empty queues runs.
	AutopilotWebhookURL string
	// RateLimit is the per-token, per-tool call limit, e.g. "120/m".
	RateLimit string
	// AuthFailLimit is the per-source-IP limit of failed token checks, e.g. "20/m".
	AuthFailLimit string
	// AllowedOrigins are the browser origins /mcp accepts.
	AllowedOrigins []string
	// AuthorizationServers are advertised in the protected resource metadata.
	AuthorizationServers []string
	LogLevel             string
	// AlarmEmail, when set, subscribes an address to the alarm topic.
	AlarmEmail string
	// AuditRetentionDays expires audit objects; 0 keeps them forever.
	AuditRetentionDays int
	LogRetentionDays   int
	// APIRateLimit and APIBurstLimit throttle the API stage (requests per second).
	APIRateLimit  int
	APIBurstLimit int
	// WAFRateLimit is the per-IP limit per 5-minute window of requests without a
	// bearer token.
	WAFRateLimit int
	// WAFBearerRateLimit is the per-IP limit per 5-minute window of requests with a
	// bearer token (an organisation behind a hosted client's few addresses), and
	// WAFPerTokenRateLimit the limit per token.
	WAFBearerRateLimit   int
	WAFPerTokenRateLimit int
	// MaxBodyBytes is the largest request body WAF lets through.
	MaxBodyBytes int
	// AthenaScanCutoff cancels an Athena query that scans more bytes than this.
	AthenaScanCutoff int64
	// DomainName and CertificateARN, both or neither, put the API on a custom domain.
	DomainName     string
	CertificateARN string
	// GlueDatabase is the Glue (Athena) database name; unique per account and region.
	// After Load it is never empty: without the key it is GlueDatabaseFor(StackName).
	GlueDatabase string
	// StackName is the CloudFormation stack's name (its edge stack's is
	// StackName+"Edge"): two environments in one account and region differ in it.
	StackName string
	// OriginSecretVersion, when set, is the Secrets Manager version id of the origin
	// secret that the distribution sends and the regional WAF requires: changing it
	// changes both resources, so a deploy re-reads the secret in both.
	// OriginSecretPreviousVersion is still accepted by the WAF during a rotation.
	OriginSecretVersion         string
	OriginSecretPreviousVersion string
	// DenialAlarmThreshold is the number of denied calls in 5 minutes that alarms.
	DenialAlarmThreshold int
	// HostedZoneID and HostedZoneName, both or neither and only with DomainName, make
	// the stack create the DNS alias of the custom domain in that Route 53 zone.
	HostedZoneID   string
	HostedZoneName string
	// OIDCIssuer, OIDCClientID and OIDCClientSecretARN, all or none, replace the
	// stack's Cognito user pool with an external OpenID Connect provider.
	OIDCIssuer          string
	OIDCClientID        string
	OIDCClientSecretARN string
	// CognitoDomainPrefix is the managed-login domain prefix; empty derives one from
	// the stack. CognitoFeaturePlan is the user pool's plan (CognitoPlus or
	// CognitoEssentials). Both only apply to the stack's own pool.
	CognitoDomainPrefix string
	CognitoFeaturePlan  string
	// WAFTokenRateLimit and WAFRegisterRateLimit are per-IP request limits per
	// 5-minute window on the token (and revocation) and registration endpoints.
	WAFTokenRateLimit    int
	WAFRegisterRateLimit int
	// OAuthAccessTTL is the access-token lifetime of the authorization server; 0 keeps
	// the server's default.
	OAuthAccessTTL time.Duration
	// JWT is an external authorization server whose JWT access tokens the token
	// authorizer accepts beside the built-in server's (shared/auth/jwtaccess); its
	// Issuer "" means none.
	JWT JWTConfig
	// AuditObjectLockMode is the audit bucket's default S3 Object Lock retention mode:
	// "governance" (the default: principals with s3:BypassGovernanceRetention may still
	// shorten or remove it) or "compliance" (nobody, not even the root user, until the
	// period ends).
	AuditObjectLockMode string
	// AuditObjectLockDays is the default retention period of every new object.
	AuditObjectLockDays int
	// FrontDoor puts the CloudFront distribution, with its Lambda@Edge
	// origin-response function, in front of the API (the default); false deploys the
	// bare REST API, whose function-written challenges arrive renamed.
	FrontDoor bool
	// Region is the stack's region when the CDK CLI did not say (CDK_DEFAULT_REGION
	// wins); the front door needs one, because Lambda@Edge lives in us-east-1 and
	// the stack refers to it across regions.
	Region string
}

// JWTConfig is the external JWT issuer's configuration, passed to the authorizer as
// its AACMCP_JWT_* environment: the very struct the authorizer reads back from it.
type JWTConfig = lambdaenv.JWT

// ExternalIssuer reports whether an external OpenID Connect provider replaces Cognito.
func (c Config) ExternalIssuer() bool { return c.OIDCIssuer != "" }

// Cognito feature plans the stack offers (CloudFormation's UserPoolTier values).
const (
	CognitoPlus       = "plus"
	CognitoEssentials = "essentials"
)

// Object Lock modes.
const (
	ObjectLockGovernance = "governance"
	ObjectLockCompliance = "compliance"
)

// CloudFrontCertificateRegion is where CloudFront's certificates and Lambda@Edge
// functions live.
const CloudFrontCertificateRegion = "us-east-1"

// Limits that the AWS services impose.
const (
	// MaxWAFBodyInspection is the most of a body WAF inspects for API Gateway (64 KB,
	// with the web ACL's request body association set to KB_64); a larger limit could
	// not be enforced by WAF at all.
	MaxWAFBodyInspection = 65536
	// minWAFRateLimit is the lowest limit a rate-based rule accepts (AWS WAF developer
	// guide, "Rate-based rule high-level settings").
	minWAFRateLimit = 10
	// MaxOAuthAccessTTL is shared/oauth's MaxAccessTokenTTL (a test keeps them equal):
	// the function would refuse a longer lifetime at cold start.
	MaxOAuthAccessTTL   = 24 * time.Hour
	minAthenaScanCutoff = 10 * 1024 * 1024
	// ArchiveAfterDays is when audit objects move to the archive class; S3 requires
	// expiry to come later than a transition.
	ArchiveAfterDays = 90
)

// DefaultStackName is the stack's name without the stackName key.
const DefaultStackName = "Aacmcp"

// GlueDatabaseFor is the Glue database of a stack without the glueDatabase key:
// one per stack, so two stacks in an account and region never share one, and the
// one place the name comes from (the saved queries and the GlueDatabase output
// read the database the stack defines).
func GlueDatabaseFor(stackName string) string {
	return strings.ToLower(strings.ReplaceAll(stackName, "-", "_")) + "_audit"
}

// EdgeLimits are the WAF rate rules' limits (shared/ratelimit, whose table the
// web ACL and `aacmcp gateway` both use).
func (c Config) EdgeLimits() ratelimit.EdgeLimits {
	return ratelimit.EdgeLimits{
		Unauthenticated: c.WAFRateLimit, BearerPerAddress: c.WAFBearerRateLimit, PerToken: c.WAFPerTokenRateLimit,
		OAuthToken: c.WAFTokenRateLimit, OAuthRegister: c.WAFRegisterRateLimit,
	}
}

// Defaults returns the configuration used when no context is given.
func Defaults() Config {
	edge := ratelimit.DefaultEdgeLimits()
	return Config{
		RateLimit:          "120/m",
		AuthFailLimit:      "20/m",
		LogLevel:           "info",
		AuditRetentionDays: 400,
		LogRetentionDays:   30,
		// Stage throttling is one budget for every caller: it must hold an
		// organisation (500 people at one call a second) beside the others.
		APIRateLimit:         1000,
		APIBurstLimit:        2000,
		WAFRateLimit:         edge.Unauthenticated,
		WAFBearerRateLimit:   edge.BearerPerAddress,
		WAFPerTokenRateLimit: edge.PerToken,
		MaxBodyBytes:         MaxWAFBodyInspection,
		AthenaScanCutoff:     10 * 1024 * 1024 * 1024,
		GlueDatabase:         GlueDatabaseFor(DefaultStackName),
		StackName:            DefaultStackName,
		DenialAlarmThreshold: 50,
		CognitoFeaturePlan:   CognitoPlus,
		WAFTokenRateLimit:    edge.OAuthToken,
		WAFRegisterRateLimit: edge.OAuthRegister,
		AuditObjectLockMode:  ObjectLockGovernance,
		AuditObjectLockDays:  365,
		FrontDoor:            true,
	}
}

// logRetentionDays are the values CloudWatch Logs accepts.
var logRetentionDays = []int{1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653}

var (
	rateRE     = regexp.MustCompile(`^[1-9][0-9]{0,8}/[smh]$`)
	glueNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,254}$`)
	domainRE   = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)
	certARNRE  = regexp.MustCompile(`^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/[0-9a-f-]{36}$`)
	logLevels  = []string{"debug", "info", "warn", "error"}
	zoneIDRE   = regexp.MustCompile(`^Z[A-Z0-9]{1,31}$`)
	regionRE   = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]$`)
	// CloudFormation stack names, less the "Edge" suffix of the front door's stack;
	// no hyphen at the end, so the derived Glue name ends in "_audit" cleanly.
	stackNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,122}[A-Za-z0-9]$|^[A-Za-z]$`)
	// Secrets Manager version ids are UUIDs (32 to 64 characters).
	secretVersionRE = regexp.MustCompile(`^[A-Za-z0-9-]{32,64}$`)
	// A secret's full ARN ends in "-" and six random characters; IAM matches exactly
	// the ARN it is given, so a partial ARN (the name only) would grant nothing.
	secretARNRE = regexp.MustCompile(`^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$`)
	// Cognito domain prefixes: lower-case letters, digits and inner hyphens, at most 63.
	domainPrefixRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	clientIDRE     = regexp.MustCompile(`^[\x21-\x7e]{1,255}$`)
	cognitoPlans   = []string{CognitoPlus, CognitoEssentials}
	// jwtAlgorithms are the ones shared/auth/jwtaccess lets a configuration name:
	// asymmetric only, so no HMAC with a public key and never "none".
	jwtAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
	claimRE       = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,128}$`)
	// Workspace ids are key parts of the DynamoDB store: no "#", at most 512 bytes.
	workspaceRE = regexp.MustCompile(`^[^#\s]{1,512}$`)
)

// ReservedInDomainPrefix are words Cognito refuses anywhere in a domain prefix.
var ReservedInDomainPrefix = []string{"aws", "amazon", "cognito"}

// ErrInvalid wraps every validation failure.
var ErrInvalid = errors.New("invalid context value")

// Load reads the configuration through lookup, which returns a context value (a string,
// a number or a bool: cdk.json values keep their JSON type, -c values are strings) or
// nil when the key is not set. Every problem is reported, not just the first.
func Load(lookup func(key string) any) (Config, error) {
	c := Defaults()
	var errs []error
	str := func(key string, dst *string) {
		v, err := stringValue(lookup(key))
		if err != nil {
			errs = append(errs, fmt.Errorf("%w %s: %v", ErrInvalid, key, err))
			return
		}
		if v != "" {
			*dst = v
		}
	}
	num := func(key string, dst *int, lo, hi int) {
		var s string
		str(key, &s)
		if s == "" {
			return
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%w %s: %q is not an integer in [%d, %d]", ErrInvalid, key, s, lo, hi))
			return
		}
		*dst = n
	}
	list := func(key string, dst *[]string) {
		var s string
		str(key, &s)
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				*dst = append(*dst, part)
			}
		}
	}
	bad := func(key, why string) { errs = append(errs, fmt.Errorf("%w %s: %s", ErrInvalid, key, why)) }

	str(KeyAutopilotWebhookURL, &c.AutopilotWebhookURL)
	str(KeyRateLimit, &c.RateLimit)
	str(KeyAuthFailLimit, &c.AuthFailLimit)
	list(KeyAllowedOrigins, &c.AllowedOrigins)
	list(KeyAuthorizationServers, &c.AuthorizationServers)
	str(KeyLogLevel, &c.LogLevel)
	str(KeyAlarmEmail, &c.AlarmEmail)
	num(KeyAuditRetentionDays, &c.AuditRetentionDays, 0, 36500)
	num(KeyLogRetentionDays, &c.LogRetentionDays, 1, 3653)
	num(KeyAPIRateLimit, &c.APIRateLimit, 1, 10000)
	num(KeyAPIBurstLimit, &c.APIBurstLimit, 1, 5000)
	num(KeyWAFRateLimit, &c.WAFRateLimit, minWAFRateLimit, 2_000_000_000)
	num(KeyWAFBearerRateLimit, &c.WAFBearerRateLimit, minWAFRateLimit, 2_000_000_000)
	num(KeyWAFPerTokenRateLimit, &c.WAFPerTokenRateLimit, minWAFRateLimit, 2_000_000_000)
	str(KeyStackName, &c.StackName)
	str(KeyOriginSecretVersion, &c.OriginSecretVersion)
	str(KeyOriginSecretPreviousVersion, &c.OriginSecretPreviousVersion)
	num(KeyMaxBodyBytes, &c.MaxBodyBytes, 1, MaxWAFBodyInspection)
	var cutoff string
	str(KeyAthenaScanCutoff, &cutoff)
	if cutoff != "" {
		n, err := strconv.ParseInt(cutoff, 10, 64)
		if err != nil || n < minAthenaScanCutoff {
			bad(KeyAthenaScanCutoff, fmt.Sprintf("%q is not an integer >= %d", cutoff, minAthenaScanCutoff))
		} else {
			c.AthenaScanCutoff = n
		}
	}
	str(KeyDomainName, &c.DomainName)
	str(KeyCertificateARN, &c.CertificateARN)
	c.GlueDatabase = ""
	str(KeyGlueDatabase, &c.GlueDatabase)
	num(KeyDenialAlarmThreshold, &c.DenialAlarmThreshold, 1, 1_000_000)
	str(KeyHostedZoneID, &c.HostedZoneID)
	str(KeyHostedZoneName, &c.HostedZoneName)
	c.HostedZoneName = strings.TrimSuffix(c.HostedZoneName, ".")
	str(KeyOIDCIssuer, &c.OIDCIssuer)
	str(KeyOIDCClientID, &c.OIDCClientID)
	str(KeyOIDCClientSecretARN, &c.OIDCClientSecretARN)
	var prefix, plan string
	str(KeyCognitoDomainPrefix, &prefix)
	str(KeyCognitoFeaturePlan, &plan)
	c.CognitoDomainPrefix = prefix
	if plan != "" {
		c.CognitoFeaturePlan = plan
	}
	str(KeyJWTIssuer, &c.JWT.Issuer)
	list(KeyJWTAudience, &c.JWT.Audiences)
	list(KeyJWTClients, &c.JWT.Clients)
	str(KeyJWTJWKSURL, &c.JWT.JWKSURL)
	list(KeyJWTAlgorithms, &c.JWT.Algorithms)
	str(KeyJWTUserClaim, &c.JWT.UserClaim)
	str(KeyJWTWorkspace, &c.JWT.Workspace)
	str(KeyJWTWorkspaceClaim, &c.JWT.WorkspaceClaim)
	var requireAT string
	str(KeyJWTRequireATJWT, &requireAT)
	if requireAT != "" {
		b, err := strconv.ParseBool(requireAT)
		if err != nil {
			bad(KeyJWTRequireATJWT, fmt.Sprintf("%q is not true or false", requireAT))
		}
		c.JWT.RequireATJWT = b
	}
	num(KeyWAFTokenRateLimit, &c.WAFTokenRateLimit, minWAFRateLimit, 2_000_000_000)
	num(KeyWAFRegisterRateLimit, &c.WAFRegisterRateLimit, minWAFRateLimit, 2_000_000_000)
	var ttl string
	str(KeyOAuthAccessTTL, &ttl)
	if ttl != "" {
		d, err := time.ParseDuration(ttl)
		if err != nil || d < time.Minute || d > MaxOAuthAccessTTL {
			bad(KeyOAuthAccessTTL, fmt.Sprintf("%q is not a duration between 1m and %s", ttl, MaxOAuthAccessTTL))
		} else {
			c.OAuthAccessTTL = d
		}
	}
	var frontDoor string
	str(KeyFrontDoor, &frontDoor)
	if frontDoor != "" {
		b, err := strconv.ParseBool(frontDoor)
		if err != nil {
			bad(KeyFrontDoor, fmt.Sprintf("%q is not true or false", frontDoor))
		}
		c.FrontDoor = b
	}
	str(KeyRegion, &c.Region)
	if c.Region != "" && !regionRE.MatchString(c.Region) {
		bad(KeyRegion, fmt.Sprintf("%q is not an AWS region name", c.Region))
	}
	str(KeyAuditObjectLockMode, &c.AuditObjectLockMode)
	num(KeyAuditObjectLockDays, &c.AuditObjectLockDays, 1, 36500)

	if c.AutopilotWebhookURL != "" && !isHTTPSURL(c.AutopilotWebhookURL) {
		bad(KeyAutopilotWebhookURL, "must be an https:// URL")
	}
	for _, k := range []struct {
		key string
		val string
	}{{KeyRateLimit, c.RateLimit}, {KeyAuthFailLimit, c.AuthFailLimit}} {
		if !rateRE.MatchString(k.val) {
			bad(k.key, fmt.Sprintf("%q is not <count>/<s|m|h>, e.g. 120/m", k.val))
		}
	}
	for _, o := range c.AllowedOrigins {
		if !isOrigin(o) {
			bad(KeyAllowedOrigins, fmt.Sprintf("%q is not an origin (scheme://host[:port], no path)", o))
		}
	}
	for _, s := range c.AuthorizationServers {
		if !isHTTPSURL(s) {
			bad(KeyAuthorizationServers, fmt.Sprintf("%q is not an https:// URL", s))
		}
	}
	if !slices.Contains(logLevels, c.LogLevel) {
		bad(KeyLogLevel, fmt.Sprintf("%q is not one of %s", c.LogLevel, strings.Join(logLevels, ", ")))
	}
	if c.AlarmEmail != "" {
		if a, err := mail.ParseAddress(c.AlarmEmail); err != nil || a.Address != c.AlarmEmail {
			bad(KeyAlarmEmail, "is not a plain e-mail address")
		}
	}
	if c.AuditRetentionDays != 0 && c.AuditRetentionDays <= ArchiveAfterDays {
		bad(KeyAuditRetentionDays, fmt.Sprintf("must be 0 (keep forever) or more than %d (the archive transition)", ArchiveAfterDays))
	}
	if c.AuditObjectLockMode != ObjectLockGovernance && c.AuditObjectLockMode != ObjectLockCompliance {
		bad(KeyAuditObjectLockMode, fmt.Sprintf("%q is not %s or %s", c.AuditObjectLockMode, ObjectLockGovernance, ObjectLockCompliance))
	}
	if c.AuditRetentionDays != 0 && c.AuditObjectLockDays > c.AuditRetentionDays {
		// Expiry could not delete what the lock still holds: the objects would stay,
		// billed, past the retention the operator asked for.
		bad(KeyAuditObjectLockDays, fmt.Sprintf("must not exceed auditRetentionDays (%d)", c.AuditRetentionDays))
	}
	if !slices.Contains(logRetentionDays, c.LogRetentionDays) {
		bad(KeyLogRetentionDays, fmt.Sprintf("%d is not a CloudWatch Logs retention period", c.LogRetentionDays))
	}
	if c.APIBurstLimit < c.APIRateLimit {
		bad(KeyAPIBurstLimit, "must be at least apiRateLimit")
	}
	if (c.DomainName == "") != (c.CertificateARN == "") {
		bad(KeyDomainName, "domainName and certificateArn go together")
	}
	if c.DomainName != "" && !domainRE.MatchString(c.DomainName) {
		bad(KeyDomainName, fmt.Sprintf("%q is not a lower-case DNS name", c.DomainName))
	}
	if c.CertificateARN != "" && !certARNRE.MatchString(c.CertificateARN) {
		bad(KeyCertificateARN, "is not an ACM certificate ARN")
	} else if c.CertificateARN != "" && c.FrontDoor && strings.Split(c.CertificateARN, ":")[3] != CloudFrontCertificateRegion {
		// The custom domain is the distribution's, and CloudFront takes only
		// certificates from us-east-1 ("Requirements for using SSL/TLS certificates
		// with CloudFront").
		bad(KeyCertificateARN, "with the front door the custom domain is CloudFront's, which needs a certificate in "+CloudFrontCertificateRegion)
	}
	if (c.HostedZoneID == "") != (c.HostedZoneName == "") {
		bad(KeyHostedZoneID, "hostedZoneId and hostedZoneName go together")
	}
	if c.HostedZoneID != "" {
		if c.DomainName == "" {
			bad(KeyHostedZoneID, "a hosted zone is only used for domainName's DNS record: set domainName too")
		}
		if !zoneIDRE.MatchString(c.HostedZoneID) {
			bad(KeyHostedZoneID, fmt.Sprintf("%q is not a Route 53 hosted zone id (Z...)", c.HostedZoneID))
		}
		if !domainRE.MatchString(c.HostedZoneName) {
			bad(KeyHostedZoneName, fmt.Sprintf("%q is not a lower-case DNS name", c.HostedZoneName))
		} else if c.DomainName != "" && c.DomainName != c.HostedZoneName && !strings.HasSuffix(c.DomainName, "."+c.HostedZoneName) {
			bad(KeyHostedZoneName, fmt.Sprintf("domainName %q is not in the zone %q", c.DomainName, c.HostedZoneName))
		}
	}
	oidcSet := 0
	for _, v := range []string{c.OIDCIssuer, c.OIDCClientID, c.OIDCClientSecretARN} {
		if v != "" {
			oidcSet++
		}
	}
	if oidcSet != 0 && oidcSet != 3 {
		bad(KeyOIDCIssuer, "oidcIssuer, oidcClientId and oidcClientSecretArn go together")
	}
	if c.OIDCIssuer != "" {
		if u, err := url.Parse(c.OIDCIssuer); err != nil || !isHTTPSURL(c.OIDCIssuer) || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(c.OIDCIssuer, "/.well-known/openid-configuration") {
			bad(KeyOIDCIssuer, "must be the issuer's https:// URL exactly as its discovery document names it, without query or fragment")
		}
	}
	if c.OIDCClientID != "" && !clientIDRE.MatchString(c.OIDCClientID) {
		bad(KeyOIDCClientID, "must be printable ASCII without spaces")
	}
	if c.OIDCClientSecretARN != "" && !secretARNRE.MatchString(c.OIDCClientSecretARN) {
		bad(KeyOIDCClientSecretARN, "must be the secret's full ARN (aws secretsmanager describe-secret --query ARN), ending in -XXXXXX")
	}
	if c.ExternalIssuer() && (prefix != "" || plan != "") {
		bad(KeyCognitoDomainPrefix, "cognitoDomainPrefix and cognitoFeaturePlan configure the stack's Cognito user pool, which oidcIssuer replaces")
	}
	if prefix != "" {
		if !domainPrefixRE.MatchString(prefix) {
			bad(KeyCognitoDomainPrefix, fmt.Sprintf("%q is not lower-case letters, digits and hyphens (at most 63)", prefix))
		}
		for _, w := range ReservedInDomainPrefix {
			if strings.Contains(prefix, w) {
				bad(KeyCognitoDomainPrefix, fmt.Sprintf("Cognito refuses prefixes containing %q", w))
			}
		}
	}
	if !slices.Contains(cognitoPlans, c.CognitoFeaturePlan) {
		bad(KeyCognitoFeaturePlan, fmt.Sprintf("%q is not one of %s", c.CognitoFeaturePlan, strings.Join(cognitoPlans, ", ")))
	}
	j := c.JWT
	if j.Issuer == "" {
		if len(j.Audiences)+len(j.Clients)+len(j.Algorithms) > 0 || j.JWKSURL != "" || j.UserClaim != "" || j.Workspace != "" || j.WorkspaceClaim != "" || requireAT != "" {
			bad(KeyJWTIssuer, "the jwt* keys configure an external issuer: set jwtIssuer too")
		}
	} else {
		if u, err := url.Parse(j.Issuer); err != nil || !isHTTPSURL(j.Issuer) || u.RawQuery != "" || u.Fragment != "" {
			bad(KeyJWTIssuer, "must be the issuer's https:// URL exactly as its tokens' iss names it, without query or fragment")
		}
		for _, a := range j.Audiences {
			if !isHTTPSURL(a) && !clientIDRE.MatchString(a) {
				bad(KeyJWTAudience, fmt.Sprintf("%q is neither an https:// URL nor a plain identifier", a))
			}
		}
		for _, id := range j.Clients {
			if !clientIDRE.MatchString(id) {
				bad(KeyJWTClients, fmt.Sprintf("%q is not printable ASCII without spaces", id))
			}
		}
		if j.JWKSURL != "" && !isHTTPSURL(j.JWKSURL) {
			bad(KeyJWTJWKSURL, "must be an https:// URL")
		}
		for _, a := range j.Algorithms {
			if !slices.Contains(jwtAlgorithms, a) {
				bad(KeyJWTAlgorithms, fmt.Sprintf("%q is not one of %s (asymmetric only)", a, strings.Join(jwtAlgorithms, ", ")))
			}
		}
		if j.UserClaim != "" && !claimRE.MatchString(j.UserClaim) {
			bad(KeyJWTUserClaim, fmt.Sprintf("%q is not a claim name", j.UserClaim))
		}
		if j.WorkspaceClaim != "" && !claimRE.MatchString(j.WorkspaceClaim) {
			bad(KeyJWTWorkspaceClaim, fmt.Sprintf("%q is not a claim name", j.WorkspaceClaim))
		}
		if j.Workspace != "" && !workspaceRE.MatchString(j.Workspace) {
			bad(KeyJWTWorkspace, fmt.Sprintf("%q is not a workspace id", j.Workspace))
		}
		if j.Workspace != "" && j.WorkspaceClaim != "" {
			bad(KeyJWTWorkspace, "jwtWorkspace pins one workspace and jwtWorkspaceClaim reads it from the token: set one")
		}
	}
	if !stackNameRE.MatchString(c.StackName) {
		bad(KeyStackName, fmt.Sprintf("%q is not a stack name: letters, digits and inner hyphens, starting with a letter, at most 124", c.StackName))
	} else if c.GlueDatabase == "" {
		c.GlueDatabase = GlueDatabaseFor(c.StackName)
	}
	for _, v := range []struct{ key, val string }{{KeyOriginSecretVersion, c.OriginSecretVersion}, {KeyOriginSecretPreviousVersion, c.OriginSecretPreviousVersion}} {
		if v.val != "" && !secretVersionRE.MatchString(v.val) {
			bad(v.key, fmt.Sprintf("%q is not a Secrets Manager version id (aws secretsmanager put-secret-value prints it as VersionId)", v.val))
		}
	}
	if c.OriginSecretPreviousVersion != "" && (c.OriginSecretVersion == "" || c.OriginSecretPreviousVersion == c.OriginSecretVersion) {
		bad(KeyOriginSecretPreviousVersion, "is the version being rotated from: set originSecretVersion to the new one")
	}
	if !c.FrontDoor && (c.OriginSecretVersion != "" || c.OriginSecretPreviousVersion != "") {
		bad(KeyOriginSecretVersion, "the origin secret is the front door's: without it there is none")
	}
	if c.GlueDatabase != "" && !glueNameRE.MatchString(c.GlueDatabase) {
		bad(KeyGlueDatabase, "must be lower-case letters, digits and underscores, starting with a letter")
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// stringValue turns a context value into text. Integral numbers print without a
// fraction: cdk.json's 30 arrives as float64(30).
func stringValue(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case float64:
		if v != float64(int64(v)) {
			return "", fmt.Errorf("%v is not an integer", v)
		}
		return strconv.FormatInt(int64(v), 10), nil
	case int:
		return strconv.Itoa(v), nil
	}
	return "", fmt.Errorf("unsupported value of type %T", v)
}

func isHTTPSURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil
}

func isOrigin(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return false
	}
	return u.Path == "" && u.RawQuery == "" && u.Fragment == "" && !strings.HasSuffix(s, "/")
}

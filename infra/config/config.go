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
	KeyAuditObjectLockMode  = "auditObjectLockMode"
	KeyAuditObjectLockDays  = "auditObjectLockDays"
)

// Keys lists every context key the app reads.
var Keys = []string{
	KeyAutopilotWebhookURL, KeyRateLimit, KeyAuthFailLimit, KeyAllowedOrigins,
	KeyAuthorizationServers, KeyLogLevel, KeyAlarmEmail, KeyAuditRetentionDays,
	KeyLogRetentionDays, KeyAPIRateLimit, KeyAPIBurstLimit, KeyWAFRateLimit, KeyMaxBodyBytes,
	KeyAthenaScanCutoff, KeyDomainName, KeyCertificateARN, KeyGlueDatabase,
	KeyDenialAlarmThreshold, KeyAuditObjectLockMode, KeyAuditObjectLockDays,
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
	// WAFRateLimit is the per-IP request limit per 5-minute window.
	WAFRateLimit int
	// MaxBodyBytes is the largest request body WAF lets through.
	MaxBodyBytes int
	// AthenaScanCutoff cancels an Athena query that scans more bytes than this.
	AthenaScanCutoff int64
	// DomainName and CertificateARN, both or neither, put the API on a custom domain.
	DomainName     string
	CertificateARN string
	// GlueDatabase is the Glue (Athena) database name; unique per account and region.
	GlueDatabase string
	// DenialAlarmThreshold is the number of denied calls in 5 minutes that alarms.
	DenialAlarmThreshold int
	// AuditObjectLockMode is the audit bucket's default S3 Object Lock retention mode:
	// "governance" (the default: principals with s3:BypassGovernanceRetention may still
	// shorten or remove it) or "compliance" (nobody, not even the root user, until the
	// period ends).
	AuditObjectLockMode string
	// AuditObjectLockDays is the default retention period of every new object.
	AuditObjectLockDays int
}

// Object Lock modes.
const (
	ObjectLockGovernance = "governance"
	ObjectLockCompliance = "compliance"
)

// Limits that the AWS services impose.
const (
	// MaxWAFBodyInspection is the most of a body WAF inspects for API Gateway (64 KB,
	// with the web ACL's request body association set to KB_64); a larger limit could
	// not be enforced by WAF at all.
	MaxWAFBodyInspection = 65536
	minWAFRateLimit      = 10
	minAthenaScanCutoff  = 10 * 1024 * 1024
	// ArchiveAfterDays is when audit objects move to the archive class; S3 requires
	// expiry to come later than a transition.
	ArchiveAfterDays = 90
)

// Defaults returns the configuration used when no context is given.
func Defaults() Config {
	return Config{
		RateLimit:            "120/m",
		AuthFailLimit:        "20/m",
		LogLevel:             "info",
		AuditRetentionDays:   400,
		LogRetentionDays:     30,
		APIRateLimit:         50,
		APIBurstLimit:        100,
		WAFRateLimit:         1000,
		MaxBodyBytes:         MaxWAFBodyInspection,
		AthenaScanCutoff:     10 * 1024 * 1024 * 1024,
		GlueDatabase:         "aacmcp_audit",
		DenialAlarmThreshold: 50,
		AuditObjectLockMode:  ObjectLockGovernance,
		AuditObjectLockDays:  365,
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
)

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
	str(KeyGlueDatabase, &c.GlueDatabase)
	num(KeyDenialAlarmThreshold, &c.DenialAlarmThreshold, 1, 1_000_000)
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
	}
	if !glueNameRE.MatchString(c.GlueDatabase) {
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

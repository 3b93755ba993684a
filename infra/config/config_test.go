package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func load(ctx map[string]any) (Config, error) {
	return Load(func(k string) any { return ctx[k] })
}

func TestDefaults(t *testing.T) {
	c, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Defaults()
	if c.RateLimit != "120/m" || c.AuthFailLimit != "20/m" || c.LogLevel != "info" ||
		c.MaxBodyBytes != MaxWAFBodyInspection || c.AuditRetentionDays != d.AuditRetentionDays ||
		c.AllowedOrigins != nil || c.DomainName != "" {
		t.Errorf("Load(nothing) = %+v", c)
	}
}

func TestOverrides(t *testing.T) {
	c, err := load(map[string]any{
		KeyAutopilotWebhookURL:  " https://runner.example.com/hook ",
		KeyRateLimit:            "30/s",
		KeyAllowedOrigins:       "https://a.example.com, http://localhost:5173,,",
		KeyAuthorizationServers: "https://auth.example.com",
		KeyLogLevel:             "debug",
		KeyAlarmEmail:           "ops@example.com",
		KeyAuditRetentionDays:   float64(0), // cdk.json numbers arrive as float64
		KeyLogRetentionDays:     "90",
		KeyAPIRateLimit:         float64(20),
		KeyAPIBurstLimit:        20,
		KeyWAFRateLimit:         "500",
		KeyMaxBodyBytes:         "1024",
		KeyAthenaScanCutoff:     "104857600",
		KeyDomainName:           "mcp.example.com",
		KeyCertificateARN:       "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666",
		KeyGlueDatabase:         "audit_prod",
		KeyDenialAlarmThreshold: "5",
		KeyHostedZoneID:         "Z0123456789ABCDEFGHIJ",
		KeyHostedZoneName:       "example.com.",
		KeyOIDCIssuer:           "https://login.example.com/oauth2/default",
		KeyOIDCClientID:         "0oa1b2c3d4",
		KeyOIDCClientSecretARN:  "arn:aws:secretsmanager:us-east-1:123456789012:secret:aacmcp/oidc-AbC123",
		KeyWAFTokenRateLimit:    "100",
		KeyWAFRegisterRateLimit: float64(10),
		KeyOAuthAccessTTL:       "30m",
		KeyAuditObjectLockMode:  "compliance",
		KeyAuditObjectLockDays:  float64(3650),
		KeyFrontDoor:            "false",
		KeyRegion:               "eu-central-1",
		KeyStackName:            "Aacmcp-Staging",
		KeyWAFBearerRateLimit:   "20000",
		KeyWAFPerTokenRateLimit: float64(600),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		AutopilotWebhookURL: "https://runner.example.com/hook", RateLimit: "30/s", AuthFailLimit: "20/m",
		AllowedOrigins:       []string{"https://a.example.com", "http://localhost:5173"},
		AuthorizationServers: []string{"https://auth.example.com"},
		LogLevel:             "debug", AlarmEmail: "ops@example.com", AuditRetentionDays: 0, LogRetentionDays: 90,
		APIRateLimit: 20, APIBurstLimit: 20, WAFRateLimit: 500, MaxBodyBytes: 1024, AthenaScanCutoff: 104857600,
		DomainName: "mcp.example.com", CertificateARN: "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666",
		GlueDatabase: "audit_prod", DenialAlarmThreshold: 5,
		HostedZoneID: "Z0123456789ABCDEFGHIJ", HostedZoneName: "example.com",
		OIDCIssuer: "https://login.example.com/oauth2/default", OIDCClientID: "0oa1b2c3d4",
		OIDCClientSecretARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:aacmcp/oidc-AbC123",
		CognitoFeaturePlan:  CognitoPlus, WAFTokenRateLimit: 100, WAFRegisterRateLimit: 10,
		OAuthAccessTTL:      30 * time.Minute,
		AuditObjectLockMode: ObjectLockCompliance, AuditObjectLockDays: 3650,
		FrontDoor: false, Region: "eu-central-1",
		StackName: "Aacmcp-Staging", WAFBearerRateLimit: 20000, WAFPerTokenRateLimit: 600,
	}
	if !equal(c, want) {
		t.Errorf("Load() = %+v\nwant %+v", c, want)
	}
	if !c.ExternalIssuer() {
		t.Error("ExternalIssuer() = false with oidcIssuer set")
	}
}

func TestCognitoDefaults(t *testing.T) {
	c, err := load(map[string]any{KeyCognitoDomainPrefix: "acme-mcp", KeyCognitoFeaturePlan: CognitoEssentials})
	if err != nil {
		t.Fatal(err)
	}
	if c.ExternalIssuer() || c.CognitoDomainPrefix != "acme-mcp" || c.CognitoFeaturePlan != CognitoEssentials {
		t.Errorf("Load() = %+v", c)
	}
	d := Defaults()
	if d.CognitoFeaturePlan != CognitoPlus || d.WAFTokenRateLimit < minWAFRateLimit || d.WAFRegisterRateLimit < minWAFRateLimit || d.OAuthAccessTTL != 0 {
		t.Errorf("Defaults() = %+v", d)
	}
}

// TestRejectsCombinations: keys that are valid alone but not together.
func TestRejectsCombinations(t *testing.T) {
	oidc := map[string]any{
		KeyOIDCIssuer:          "https://login.example.com",
		KeyOIDCClientID:        "client",
		KeyOIDCClientSecretARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:oidc-AbC123",
	}
	with := func(base map[string]any, kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	domain := map[string]any{
		KeyDomainName:     "mcp.example.com",
		KeyCertificateARN: "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666",
	}
	if _, err := load(oidc); err != nil {
		t.Fatalf("the three oidc keys together: %v", err)
	}
	if _, err := load(with(domain, KeyHostedZoneID, "Z123", KeyHostedZoneName, "mcp.example.com")); err != nil {
		t.Fatalf("a zone named like the domain itself: %v", err)
	}
	if _, err := load(with(domain, KeyFrontDoor, false, KeyCertificateARN, "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666")); err != nil {
		t.Fatalf("a regional certificate for the bare API's custom domain: %v", err)
	}
	tests := []struct {
		name string
		ctx  map[string]any
		key  string
	}{
		{"issuer without client", with(oidc, KeyOIDCClientID, nil, KeyOIDCClientSecretARN, nil), KeyOIDCIssuer},
		{"no secret", with(oidc, KeyOIDCClientSecretARN, nil), KeyOIDCIssuer},
		{"http issuer", with(oidc, KeyOIDCIssuer, "http://login.example.com"), KeyOIDCIssuer},
		{"discovery URL instead of issuer", with(oidc, KeyOIDCIssuer, "https://login.example.com/.well-known/openid-configuration"), KeyOIDCIssuer},
		{"issuer with query", with(oidc, KeyOIDCIssuer, "https://login.example.com/?tenant=x"), KeyOIDCIssuer},
		{"client id with space", with(oidc, KeyOIDCClientID, "my client"), KeyOIDCClientID},
		{"partial secret ARN", with(oidc, KeyOIDCClientSecretARN, "arn:aws:secretsmanager:us-east-1:123456789012:secret:oidc"), KeyOIDCClientSecretARN},
		{"secret name", with(oidc, KeyOIDCClientSecretARN, "aacmcp/oidc"), KeyOIDCClientSecretARN},
		{"Cognito prefix with an external issuer", with(oidc, KeyCognitoDomainPrefix, "acme"), KeyCognitoDomainPrefix},
		{"Cognito plan with an external issuer", with(oidc, KeyCognitoFeaturePlan, CognitoPlus), KeyCognitoDomainPrefix},
		{"prefix with upper case", map[string]any{KeyCognitoDomainPrefix: "Acme"}, KeyCognitoDomainPrefix},
		{"prefix with a reserved word", map[string]any{KeyCognitoDomainPrefix: "acme-cognito"}, KeyCognitoDomainPrefix},
		{"prefix with aws", map[string]any{KeyCognitoDomainPrefix: "myaws"}, KeyCognitoDomainPrefix},
		{"prefix ending in a hyphen", map[string]any{KeyCognitoDomainPrefix: "acme-"}, KeyCognitoDomainPrefix},
		{"prefix too long", map[string]any{KeyCognitoDomainPrefix: strings.Repeat("a", 64)}, KeyCognitoDomainPrefix},
		{"unknown plan", map[string]any{KeyCognitoFeaturePlan: "lite"}, KeyCognitoFeaturePlan},
		{"zone without domain", map[string]any{KeyHostedZoneID: "Z123", KeyHostedZoneName: "example.com"}, KeyHostedZoneID},
		{"zone id alone", with(domain, KeyHostedZoneID, "Z123"), KeyHostedZoneID},
		{"zone name alone", with(domain, KeyHostedZoneName, "example.com"), KeyHostedZoneID},
		{"bad zone id", with(domain, KeyHostedZoneID, "example", KeyHostedZoneName, "example.com"), KeyHostedZoneID},
		{"domain outside the zone", with(domain, KeyHostedZoneID, "Z123", KeyHostedZoneName, "example.org"), KeyHostedZoneName},
		{"zone suffix is not a label boundary", with(domain, KeyHostedZoneID, "Z123", KeyHostedZoneName, "ample.com"), KeyHostedZoneName},
		{"token limit below WAF's minimum", map[string]any{KeyWAFTokenRateLimit: "9"}, KeyWAFTokenRateLimit},
		{"register limit below WAF's minimum", map[string]any{KeyWAFRegisterRateLimit: float64(5)}, KeyWAFRegisterRateLimit},
		{"access ttl not a duration", map[string]any{KeyOAuthAccessTTL: "1 hour"}, KeyOAuthAccessTTL},
		{"access ttl too long", map[string]any{KeyOAuthAccessTTL: "25h"}, KeyOAuthAccessTTL},
		{"access ttl too short", map[string]any{KeyOAuthAccessTTL: "30s"}, KeyOAuthAccessTTL},
		// The front door (the default) puts the domain on CloudFront.
		{"front door with a regional certificate", with(domain, KeyCertificateARN, "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666"), KeyCertificateARN},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.ctx)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("error = %v, want ErrInvalid naming %s", err, tt.key)
			}
		})
	}
}

func equal(a, b Config) bool {
	return reflect.DeepEqual(a, b)
}

func TestRejects(t *testing.T) {
	tests := []struct {
		key string
		val any
	}{
		{KeyAutopilotWebhookURL, "http://runner.example.com"},
		{KeyAutopilotWebhookURL, "https://user:pw@runner.example.com"},
		{KeyRateLimit, "120"},
		{KeyRateLimit, "0/m"},
		{KeyRateLimit, "10/d"},
		{KeyAuthFailLimit, "-1/m"},
		{KeyAllowedOrigins, "https://a.example.com/path"},
		{KeyAllowedOrigins, "*"},
		{KeyAuthorizationServers, "auth.example.com"},
		{KeyLogLevel, "verbose"},
		{KeyAlarmEmail, "Ops <ops@example.com>"},
		{KeyAuditRetentionDays, "90"},
		{KeyAuditRetentionDays, 1.5},
		{KeyLogRetentionDays, "31"},
		{KeyAPIRateLimit, "0"},
		{KeyAPIBurstLimit, "10"}, // below the default rate limit of 50
		{KeyWAFRateLimit, "9"},
		{KeyMaxBodyBytes, "65537"},
		{KeyAthenaScanCutoff, "1000"},
		{KeyDomainName, "mcp.example.com"}, // without a certificate
		{KeyCertificateARN, "arn:aws:acm:us-east-1:123456789012:certificate/x"},
		{KeyGlueDatabase, "Audit-DB"},
		{KeyDenialAlarmThreshold, "many"},
		{KeyAuditObjectLockMode, "legal-hold"},
		{KeyAuditObjectLockDays, "0"},
		{KeyFrontDoor, "yes"},
		{KeyRegion, "Europe"},
		{KeyLogLevel, []string{"info"}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			_, err := load(map[string]any{tt.key: tt.val})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load(%s=%v) error = %v, want ErrInvalid", tt.key, tt.val, err)
			}
			if !strings.Contains(err.Error(), tt.key) && tt.key != KeyCertificateARN {
				t.Errorf("error %q does not name %s", err, tt.key)
			}
		})
	}
}

func TestReportsEveryProblem(t *testing.T) {
	_, err := load(map[string]any{KeyRateLimit: "x", KeyLogLevel: "y", KeyGlueDatabase: "Z"})
	for _, k := range []string{KeyRateLimit, KeyLogLevel, KeyGlueDatabase} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("error %v does not mention %s", err, k)
		}
	}
}

func TestKeysListsEveryKey(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys {
		if seen[k] {
			t.Errorf("key %s listed twice", k)
		}
		seen[k] = true
	}
	// Every listed key is read: setting it to an invalid type fails.
	for _, k := range Keys {
		if _, err := load(map[string]any{k: struct{}{}}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("key %s is not read by Load", k)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(KeyRateLimit, "120/m")
	f.Add(KeyAllowedOrigins, "https://a.example.com,http://b:1")
	f.Add(KeyAuditRetentionDays, "91")
	f.Add(KeyDomainName, "x.example.com")
	f.Add(KeyAlarmEmail, "a@b.c")
	f.Add(KeyCognitoDomainPrefix, "acme-mcp")
	f.Add(KeyOAuthAccessTTL, "90m")
	f.Fuzz(func(t *testing.T, key, val string) {
		c, err := load(map[string]any{key: val})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if c.ExternalIssuer() != (c.OIDCClientID != "") || c.ExternalIssuer() != (c.OIDCClientSecretARN != "") ||
			c.WAFTokenRateLimit < minWAFRateLimit || c.WAFRegisterRateLimit < minWAFRateLimit || c.OAuthAccessTTL > MaxOAuthAccessTTL {
			t.Fatalf("Load(%s=%q) accepted an invalid OAuth config %+v", key, val, c)
		}
		if !rateRE.MatchString(c.RateLimit) || c.MaxBodyBytes > MaxWAFBodyInspection || c.MaxBodyBytes < 1 ||
			(c.AuditRetentionDays != 0 && c.AuditRetentionDays <= ArchiveAfterDays) || c.APIBurstLimit < c.APIRateLimit {
			t.Fatalf("Load(%s=%q) accepted an invalid config %+v", key, val, c)
		}
	})
}

func TestJWT(t *testing.T) {
	c, err := load(map[string]any{
		KeyJWTIssuer:         "https://idp.example.com/oauth2/aus1",
		KeyJWTAudience:       "https://mcp.example.com/mcp, api://aacmcp",
		KeyJWTClients:        "a,b",
		KeyJWTJWKSURL:        "https://idp.example.com/keys",
		KeyJWTAlgorithms:     "RS256, EdDSA",
		KeyJWTUserClaim:      "preferred_username",
		KeyJWTWorkspaceClaim: "https://aacworkflow.example/ws",
		KeyJWTRequireATJWT:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := JWTConfig{
		Issuer: "https://idp.example.com/oauth2/aus1", Audiences: []string{"https://mcp.example.com/mcp", "api://aacmcp"},
		Clients: []string{"a", "b"}, JWKSURL: "https://idp.example.com/keys", Algorithms: []string{"RS256", "EdDSA"},
		UserClaim: "preferred_username", WorkspaceClaim: "https://aacworkflow.example/ws", RequireATJWT: true,
	}
	if !reflect.DeepEqual(c.JWT, want) {
		t.Errorf("JWT = %+v\nwant %+v", c.JWT, want)
	}
	issuer := map[string]any{KeyJWTIssuer: "https://idp.example.com"}
	with := func(k string, v any) map[string]any { return map[string]any{KeyJWTIssuer: issuer[KeyJWTIssuer], k: v} }
	for _, tt := range []struct {
		name string
		ctx  map[string]any
		key  string
	}{
		{"settings without an issuer", map[string]any{KeyJWTClients: "a"}, KeyJWTIssuer},
		{"http issuer", map[string]any{KeyJWTIssuer: "http://idp.example.com"}, KeyJWTIssuer},
		{"HMAC", with(KeyJWTAlgorithms, "RS256,HS256"), KeyJWTAlgorithms},
		{"none", with(KeyJWTAlgorithms, "none"), KeyJWTAlgorithms},
		{"http JWKS", with(KeyJWTJWKSURL, "http://idp.example.com/keys"), KeyJWTJWKSURL},
		{"audience with a space", with(KeyJWTAudience, "my api"), KeyJWTAudience},
		{"client with a space", with(KeyJWTClients, "my client"), KeyJWTClients},
		{"claim with a space", with(KeyJWTUserClaim, "e mail"), KeyJWTUserClaim},
		{"workspace with #", with(KeyJWTWorkspace, "a#b"), KeyJWTWorkspace},
		{"both workspace keys", map[string]any{KeyJWTIssuer: "https://idp.example.com", KeyJWTWorkspace: "acme", KeyJWTWorkspaceClaim: "ws"}, KeyJWTWorkspace},
		{"not a bool", with(KeyJWTRequireATJWT, "yes"), KeyJWTRequireATJWT},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.ctx)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.key) {
				t.Fatalf("error = %v, want ErrInvalid naming %s", err, tt.key)
			}
		})
	}
}

// TestStackNameNamesTheGlueDatabase: two stacks in one account and region get two
// Glue databases without anyone naming them; an explicit glueDatabase still wins.
func TestStackNameNamesTheGlueDatabase(t *testing.T) {
	tests := []struct {
		ctx  map[string]any
		want string
	}{
		{nil, "aacmcp_audit"},
		{map[string]any{KeyStackName: "Aacmcp-Staging"}, "aacmcp_staging_audit"},
		{map[string]any{KeyStackName: "Staging", KeyGlueDatabase: "audit_x"}, "audit_x"},
	}
	for _, tt := range tests {
		c, err := Load(func(k string) any { return tt.ctx[k] })
		if err != nil {
			t.Fatal(err)
		}
		if c.GlueDatabase != tt.want {
			t.Errorf("%v: GlueDatabase = %q, want %q", tt.ctx, c.GlueDatabase, tt.want)
		}
	}
	for _, bad := range []string{"", "1abc", "a_b", "ends-", strings.Repeat("a", 125)} {
		if _, err := Load(func(k string) any { return map[string]any{KeyStackName: bad}[k] }); bad != "" && err == nil {
			t.Errorf("stackName %q accepted", bad)
		}
	}
}

func TestOriginSecretVersions(t *testing.T) {
	const v1, v2 = "1b7e6d8a-5c2e-4b0e-9a3c-2f1e0d9c8b7a", "9f8e7d6c-5b4a-4392-8170-fedcba987654"
	tests := []struct {
		name string
		ctx  map[string]any
		ok   bool
	}{
		{"a version", map[string]any{KeyOriginSecretVersion: v2}, true},
		{"a rotation", map[string]any{KeyOriginSecretVersion: v2, KeyOriginSecretPreviousVersion: v1}, true},
		{"previous alone", map[string]any{KeyOriginSecretPreviousVersion: v1}, false},
		{"previous equal to current", map[string]any{KeyOriginSecretVersion: v1, KeyOriginSecretPreviousVersion: v1}, false},
		{"not a version id", map[string]any{KeyOriginSecretVersion: "AWSCURRENT"}, false},
		{"without the front door", map[string]any{KeyOriginSecretVersion: v2, KeyFrontDoor: false}, false},
	}
	for _, tt := range tests {
		_, err := Load(func(k string) any { return tt.ctx[k] })
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

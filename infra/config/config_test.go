package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
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
		KeyAuditObjectLockMode:  "compliance",
		KeyAuditObjectLockDays:  float64(3650),
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
		AuditObjectLockMode: ObjectLockCompliance, AuditObjectLockDays: 3650,
	}
	if !equal(c, want) {
		t.Errorf("Load() = %+v\nwant %+v", c, want)
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
	f.Fuzz(func(t *testing.T, key, val string) {
		c, err := load(map[string]any{key: val})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if !rateRE.MatchString(c.RateLimit) || c.MaxBodyBytes > MaxWAFBodyInspection || c.MaxBodyBytes < 1 ||
			(c.AuditRetentionDays != 0 && c.AuditRetentionDays <= ArchiveAfterDays) || c.APIBurstLimit < c.APIRateLimit {
			t.Fatalf("Load(%s=%q) accepted an invalid config %+v", key, val, c)
		}
	})
}

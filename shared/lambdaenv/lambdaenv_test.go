package lambdaenv

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoad(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		required []string
		wantErr  []string // substrings the error must hold
		check    func(t *testing.T, c Config)
	}{
		{
			name:     "defaults",
			env:      map[string]string{EnvTable: "main", EnvAuditStream: "audit"},
			required: []string{EnvTable, EnvAuditStream},
			check: func(t *testing.T, c Config) {
				if c.Table != "main" || c.AuditStream != "audit" {
					t.Errorf("names: %+v", c)
				}
				if c.RateLimit.Limit != 120 || c.RateLimit.Window != time.Minute {
					t.Errorf("rate limit default: %+v", c.RateLimit)
				}
				if c.AuthFailLimit.Limit != 20 || c.AuthFailLimit.Window != time.Minute {
					t.Errorf("auth fail default: %+v", c.AuthFailLimit)
				}
				if c.LogLevel != slog.LevelInfo {
					t.Errorf("level %v", c.LogLevel)
				}
				if c.TrustViewerAddress {
					t.Error("the viewer address is trusted by default")
				}
			},
		},
		{
			name: "lists and overrides",
			env: map[string]string{
				EnvTable: " main ", EnvAllowedOrigins: "https://a.example, ,https://b.example",
				EnvAuthorizationServers: "https://auth.example", EnvRateLimit: "10/s", EnvLogLevel: "debug",
				EnvPublicURL: "https://d111.cloudfront.net/",
			},
			required: []string{EnvTable},
			check: func(t *testing.T, c Config) {
				if c.Table != "main" {
					t.Errorf("table %q not trimmed", c.Table)
				}
				if len(c.AllowedOrigins) != 2 || c.AllowedOrigins[1] != "https://b.example" {
					t.Errorf("origins %q", c.AllowedOrigins)
				}
				if len(c.AuthorizationServers) != 1 {
					t.Errorf("servers %q", c.AuthorizationServers)
				}
				if c.PublicURL != "https://d111.cloudfront.net" {
					t.Errorf("public URL %q, want it without the trailing slash", c.PublicURL)
				}
				if c.RateLimit.Limit != 10 || c.RateLimit.Window != time.Second || c.LogLevel != slog.LevelDebug {
					t.Errorf("overrides: %+v", c)
				}
			},
		},
		{
			name:     "viewer address trusted",
			env:      map[string]string{EnvTrustViewerAddress: "true"},
			required: nil,
			check: func(t *testing.T, c Config) {
				if !c.TrustViewerAddress {
					t.Error("not trusted")
				}
			},
		},
		{
			name:    "viewer address trust is true or false",
			env:     map[string]string{EnvTrustViewerAddress: "yes"},
			wantErr: []string{EnvTrustViewerAddress},
		},
		{
			name:     "every missing variable is named",
			env:      map[string]string{},
			required: []string{EnvTable, EnvTokensTable, EnvAuditStream},
			wantErr:  []string{EnvTable, EnvTokensTable, EnvAuditStream, "Kinesis"},
		},
		{
			name:    "bad values",
			env:     map[string]string{EnvRateLimit: "fast", EnvAuthFailLimit: "0/m", EnvLogLevel: "loud"},
			wantErr: []string{EnvRateLimit, EnvAuthFailLimit, EnvLogLevel},
		},
		{
			name:    "webhook without secret",
			env:     map[string]string{EnvAutopilotWebhook: "https://runner.example/hook"},
			wantErr: []string{EnvAutopilotSecretARN},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(envOf(tt.env), tt.required...)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not name %s", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestWithDeadline(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		deadline time.Duration // 0 = none
		want     time.Duration // from now
	}{
		{"no deadline uses fallback", 0, 29 * time.Second},
		{"margin kept", 10 * time.Second, 10*time.Second - DeadlineMargin},
		{"close deadline keeps a minimum", 200 * time.Millisecond, minBudget},
		{"never past the real deadline", 50 * time.Millisecond, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, now.Add(tt.deadline))
				defer cancel()
			}
			// The fallback path measures from the real clock; compare loosely there.
			got, cancel := WithDeadline(ctx, DeadlineMargin, 29*time.Second, now)
			defer cancel()
			dl, ok := got.Deadline()
			if !ok {
				t.Fatal("no deadline")
			}
			if tt.deadline == 0 {
				if left := time.Until(dl); left <= 28*time.Second || left > 29*time.Second {
					t.Errorf("fallback deadline in %v", left)
				}
				return
			}
			if d := dl.Sub(now); d != tt.want {
				t.Errorf("deadline %v after now, want %v", d, tt.want)
			}
		})
	}
}

func TestNewLoggerWritesJSON(t *testing.T) {
	var buf bytes.Buffer
	NewLogger(&buf, slog.LevelInfo, "mcp").Debug("hidden")
	NewLogger(&buf, slog.LevelInfo, "mcp").Info("hello", "k", 1)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("not one JSON line: %q", buf.String())
	}
	if m["function"] != "mcp" || m["msg"] != "hello" {
		t.Errorf("line %v", m)
	}
}

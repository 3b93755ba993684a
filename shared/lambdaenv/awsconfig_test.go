package lambdaenv

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// lambdaEnv is what Lambda (and the emulator tests) set.
var lambdaEnv = []string{
	"AWS_REGION=eu-west-1", "AWS_DEFAULT_REGION=eu-west-1",
	"AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_SESSION_TOKEN=token",
	"AWS_LAMBDA_FUNCTION_NAME=mcp", "AWS_LAMBDA_RUNTIME_API=127.0.0.1:9001", "AWS_EXECUTION_ENV=AWS_Lambda_provided.al2023",
	"AWS_XRAY_DAEMON_ADDRESS=169.254.79.129:2000", "AWS_EC2_METADATA_DISABLED=true",
	"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:4567", "AWS_ENDPOINT_URL_SECRETS_MANAGER=http://127.0.0.1:4569",
	"PATH=/usr/bin", "_HANDLER=bootstrap",
}

func TestLambdaAWSConfigTakesOnlyLambdaEnvironments(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		ok   bool
	}{
		{"Lambda's variables", lambdaEnv, true},
		{"without a session token", without(lambdaEnv, "AWS_SESSION_TOKEN"), true},
		{"no region", without(lambdaEnv, "AWS_REGION", "AWS_DEFAULT_REGION"), false},
		{"no credentials", without(lambdaEnv, "AWS_ACCESS_KEY_ID"), false},
		{"a profile", append(lambdaEnv[:len(lambdaEnv):len(lambdaEnv)], "AWS_PROFILE=dev"), false},
		{"retry settings", append(lambdaEnv[:len(lambdaEnv):len(lambdaEnv)], "AWS_MAX_ATTEMPTS=9"), false},
		{"a CA bundle", append(lambdaEnv[:len(lambdaEnv):len(lambdaEnv)], "AWS_CA_BUNDLE=/x.pem"), false},
		{"endpoint URLs ignored", append(lambdaEnv[:len(lambdaEnv):len(lambdaEnv)], "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := lambdaAWSConfig(tc.env); ok != tc.ok {
				t.Errorf("ok = %v, want %v", ok, tc.ok)
			}
		})
	}
}

// TestLambdaAWSConfigMatchesLoadDefaultConfig: on Lambda's variables the fast path
// and config.LoadDefaultConfig give the clients the same region, credentials and
// endpoints.
func TestLambdaAWSConfigMatchesLoadDefaultConfig(t *testing.T) {
	envs := map[string][]string{
		"service endpoints": lambdaEnv,
		"global endpoint":   append(without(lambdaEnv, "AWS_ENDPOINT_URL_DYNAMODB"), "AWS_ENDPOINT_URL=http://127.0.0.1:4000"),
		"no endpoints":      without(lambdaEnv, "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SECRETS_MANAGER"),
	}
	for name, env := range envs {
		t.Run(name, func(t *testing.T) {
			for _, kv := range os.Environ() {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
			}
			t.Setenv("HOME", t.TempDir()) // no shared config files
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			fast, ok := lambdaAWSConfig(env)
			if !ok {
				t.Fatal("fast path refused Lambda's environment")
			}
			slow, err := config.LoadDefaultConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if fast.Region != slow.Region {
				t.Errorf("region %q, LoadDefaultConfig %q", fast.Region, slow.Region)
			}
			fc, err := fast.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			sc, err := slow.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if fc.AccessKeyID != sc.AccessKeyID || fc.SecretAccessKey != sc.SecretAccessKey || fc.SessionToken != sc.SessionToken {
				t.Errorf("credentials %+v, LoadDefaultConfig %+v", fc, sc)
			}
			endpoints := func(cfg aws.Config) [3]string {
				return [3]string{
					deref(dynamodb.NewFromConfig(cfg).Options().BaseEndpoint),
					deref(kinesis.NewFromConfig(cfg).Options().BaseEndpoint),
					deref(secretsmanager.NewFromConfig(cfg).Options().BaseEndpoint),
				}
			}
			if f, s := endpoints(fast), endpoints(slow); f != s {
				t.Errorf("endpoints (dynamodb, kinesis, secretsmanager) %q, LoadDefaultConfig %q", f, s)
			}
		})
	}
}

func without(env []string, keys ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, x := range keys {
			drop = drop || k == x
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

package lambdaenv

import (
	"context"
	"errors"
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
	plus := func(kv ...string) []string { return append(lambdaEnv[:len(lambdaEnv):len(lambdaEnv)], kv...) }
	tests := []struct {
		name string
		env  []string
		// named: the variables the error must name; nil when the environment is
		// Lambda's.
		named []string
	}{
		{"Lambda's variables", lambdaEnv, nil},
		{"without a session token", without(lambdaEnv, "AWS_SESSION_TOKEN"), nil},
		{"the role's keys under their other names", append(without(lambdaEnv, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), "AWS_ACCESS_KEY=AKIDEXAMPLE", "AWS_SECRET_KEY=secret"), nil},
		{"no region", without(lambdaEnv, "AWS_REGION", "AWS_DEFAULT_REGION"), []string{"AWS_REGION"}},
		{"no access key", without(lambdaEnv, "AWS_ACCESS_KEY_ID"), []string{"AWS_ACCESS_KEY_ID"}},
		{"no secret key", without(lambdaEnv, "AWS_SECRET_ACCESS_KEY"), []string{"AWS_SECRET_ACCESS_KEY"}},
		{"a profile", plus("AWS_PROFILE=dev"), []string{"AWS_PROFILE"}},
		{"retry settings", plus("AWS_MAX_ATTEMPTS=9", "AWS_RETRY_MODE=adaptive"), []string{"AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"}},
		{"a CA bundle", plus("AWS_CA_BUNDLE=/x.pem"), []string{"AWS_CA_BUNDLE"}},
		{"an account ID", plus("AWS_ACCOUNT_ID=123456789012"), []string{"AWS_ACCOUNT_ID"}},
		{"container credentials", plus("AWS_CONTAINER_CREDENTIALS_FULL_URI=http://127.0.0.1:1/creds"), []string{"AWS_CONTAINER_CREDENTIALS_FULL_URI"}},
		{"endpoint URLs ignored", plus("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true"), []string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lambdaAWSConfig(tc.env)
			if tc.named == nil {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrAWSEnvironment) {
				t.Fatalf("err = %v, want ErrAWSEnvironment", err)
			}
			for _, k := range tc.named {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
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
		"keys under their other names": append(without(lambdaEnv, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
			"AWS_ACCESS_KEY=AKIDOTHER", "AWS_SECRET_KEY=other"),
		"both names of the keys":  append(lambdaEnv[:len(lambdaEnv):len(lambdaEnv)], "AWS_ACCESS_KEY=AKIDOTHER", "AWS_SECRET_KEY=other"),
		"only the default region": without(lambdaEnv, "AWS_REGION"),
		"two regions":             append(without(lambdaEnv, "AWS_DEFAULT_REGION"), "AWS_DEFAULT_REGION=us-east-2"),
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
			fast, err := lambdaAWSConfig(env)
			if err != nil {
				t.Fatalf("refused Lambda's environment: %v", err)
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

package lambdaenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// ErrAWSEnvironment: the environment is not one AWSConfig builds a configuration
// from (a variable it does not know, or no region or credentials). The error that
// wraps it names the variables.
var ErrAWSEnvironment = errors.New("lambdaenv: not a Lambda AWS environment")

// AWSConfig builds the SDK configuration from the variables Lambda sets: the region,
// the execution role's credentials, the runtime's own variables, and endpoint
// overrides (AWS_ENDPOINT_URL[_<SERVICE>], the emulator tests).
//
// It does not call config.LoadDefaultConfig, on purpose: that took 4-10 ms of every
// cold start on this project's machines (shared config and credentials files,
// profiles, container and IMDS credentials, dozens of variables), and merely linking
// the config package links its credential providers (SSO, SSO OIDC, STS, sign-in,
// process, container, IMDS) and runs their package initializers before main, another
// 1-3 ms (bench/REPORT.md section 3). No function needs them: Lambda hands the role's
// credentials over in the environment. Any other AWS_ variable (a profile, retry
// settings, a CA bundle, FIPS, an account ID...) is a setting this path would
// silently ignore, so it fails the cold start instead, naming the variable; the CDK
// stack sets none. The CLI, which does need profiles and SSO, loads its
// configuration the usual way (cmd/aacmcp).
func AWSConfig() (aws.Config, error) { return lambdaAWSConfig(os.Environ()) }

// lambdaAWSConfig is AWSConfig on environ (KEY=value entries, as os.Environ).
func lambdaAWSConfig(environ []string) (aws.Config, error) {
	get := map[string]string{}
	var unknown []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "AWS_") {
			continue
		}
		if !lambdaVariable(k) {
			unknown = append(unknown, k)
			continue
		}
		get[k] = v
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return aws.Config{}, fmt.Errorf("%w: environment variables %s: only Lambda's own AWS_ variables and AWS_ENDPOINT_URL[_<SERVICE>] are read, and these would be ignored",
			ErrAWSEnvironment, strings.Join(unknown, ", "))
	}
	// The order of each pair is the SDK's (config.NewEnvConfig): the first set wins.
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := get[k]; v != "" {
				return v
			}
		}
		return ""
	}
	region := first("AWS_REGION", "AWS_DEFAULT_REGION")
	key := first("AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
	secret := first("AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
	var missing []string
	if region == "" {
		missing = append(missing, "AWS_REGION")
	}
	if key == "" || secret == "" {
		missing = append(missing, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the execution role's credentials)")
	}
	if len(missing) > 0 {
		return aws.Config{}, fmt.Errorf("%w: %s not set", ErrAWSEnvironment, strings.Join(missing, ", "))
	}
	cfg := aws.Config{
		Region:        region,
		Credentials:   credentials.NewStaticCredentialsProvider(key, secret, get["AWS_SESSION_TOKEN"]),
		ConfigSources: []any{envEndpoints(get)},
	}
	if u := get["AWS_ENDPOINT_URL"]; u != "" {
		cfg.BaseEndpoint = aws.String(u)
	}
	return cfg, nil
}

// lambdaVariable: the AWS_ variables AWSConfig understands. Lambda sets the region,
// the role's keys (AWS_ACCESS_KEY among them) and its runtime's own variables
// (AWS_LAMBDA_*, AWS_XRAY_*, AWS_EXECUTION_ENV), which configure nothing in the SDK;
// AWS_EC2_METADATA_DISABLED only matters to the IMDS lookups this path never makes.
func lambdaVariable(k string) bool {
	switch k {
	case "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY", "AWS_SESSION_TOKEN",
		"AWS_EXECUTION_ENV", "AWS_EC2_METADATA_DISABLED", "AWS_ENDPOINT_URL":
		return true
	}
	for _, p := range []string{"AWS_LAMBDA_", "AWS_XRAY_", "AWS_ENDPOINT_URL_"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// envEndpoints answers the service clients' lookup of AWS_ENDPOINT_URL_<SERVICE>
// (the SDK's service-specific endpoint variables, named after the service's SDK id
// in upper case with spaces as underscores), as the config package's environment
// source does.
type envEndpoints map[string]string

func (e envEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := e["AWS_ENDPOINT_URL_"+strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_"))]
	return v, v != "", nil
}

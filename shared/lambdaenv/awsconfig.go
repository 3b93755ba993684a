package lambdaenv

import (
	"context"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// lambdaAWSConfig builds the SDK configuration straight from the environment when
// it holds nothing but what Lambda itself sets: the region, the execution role's
// credentials, the runtime's own variables, and endpoint overrides (the emulator
// tests). config.LoadDefaultConfig then gives the same result, but takes 4-10 ms
// of every cold start on this project's machines (it looks for shared config and
// credentials files, profiles, container and IMDS credentials, and reads dozens of
// variables), about half of the MCP function's own start (bench/REPORT.md section
// 3). Any other AWS_ variable (a profile, retry settings, a CA bundle, FIPS...)
// means a setting this path does not know: ok is false and the caller loads the
// configuration the usual way.
func lambdaAWSConfig(environ []string) (cfg aws.Config, ok bool) {
	get := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "AWS_") {
			continue
		}
		if !lambdaVariable(k) {
			return aws.Config{}, false
		}
		get[k] = v
	}
	region := get["AWS_REGION"]
	if region == "" {
		region = get["AWS_DEFAULT_REGION"]
	}
	key, secret := get["AWS_ACCESS_KEY_ID"], get["AWS_SECRET_ACCESS_KEY"]
	if region == "" || key == "" || secret == "" {
		return aws.Config{}, false
	}
	cfg = aws.Config{
		Region:        region,
		Credentials:   credentials.NewStaticCredentialsProvider(key, secret, get["AWS_SESSION_TOKEN"]),
		ConfigSources: []any{envEndpoints(get)},
	}
	if u := get["AWS_ENDPOINT_URL"]; u != "" {
		cfg.BaseEndpoint = aws.String(u)
	}
	return cfg, true
}

// lambdaVariable: the AWS_ variables the fast path understands. The Lambda
// runtime's own (AWS_LAMBDA_*, AWS_XRAY_*, AWS_EXECUTION_ENV) configure nothing in
// the SDK; AWS_EC2_METADATA_DISABLED only matters to the IMDS lookups this path
// never makes.
func lambdaVariable(k string) bool {
	switch k {
	case "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
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

func awsConfigFast() (aws.Config, bool) { return lambdaAWSConfig(os.Environ()) }

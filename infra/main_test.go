package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/infra/savedqueries"
)

// synthesized is one stack as the tests see it: the assertions handle, the raw template,
// and cdk-nag's unsuppressed errors.
type synthesized struct {
	stack     awscdk.Stack
	template  assertions.Template
	raw       cfnTemplate
	nagErrors []string
	// edge is the us-east-1 stack of the front door; nil without it.
	edge *synthesized
}

var (
	// plain is the stack with no context at all (every default: the front door on
	// the distribution's own domain).
	plain *synthesized
	// full sets every optional context key (custom domain in a Route 53 zone, e-mail,
	// origins, webhook, an external OpenID Connect provider instead of Cognito...).
	full *synthesized
	// essentials keeps Cognito but sets its keys: a domain prefix, the Essentials plan,
	// and a custom domain (so the Cognito callback is on it).
	essentials *synthesized
	// bare is the API without the front door (frontDoor=false) on its stage URL.
	bare *synthesized
	// rotating is a second environment (stackName) in the middle of an origin
	// secret rotation: the new version sent, the old one still accepted.
	rotating *synthesized
	// repoQueries are the saved queries in the repository's events/queries.
	repoQueries []savedqueries.Query
)

// fullContext sets every optional key, so that the optional branches are synthesized too.
var fullContext = map[string]any{
	config.KeyAutopilotWebhookURL:  "https://runner.example.com/hooks/aacmcp",
	config.KeyAllowedOrigins:       "https://app.example.com, https://admin.example.com",
	config.KeyAuthorizationServers: "https://auth.example.com",
	config.KeyAlarmEmail:           "ops@example.com",
	config.KeyDomainName:           "mcp.example.com",
	// The front door's custom domain is CloudFront's: a us-east-1 certificate.
	config.KeyCertificateARN:       "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666",
	config.KeyAuditRetentionDays:   float64(730),
	config.KeyAuditObjectLockMode:  "compliance",
	config.KeyAuditObjectLockDays:  float64(730),
	config.KeyGlueDatabase:         "aacmcp_audit_full",
	config.KeyRateLimit:            "60/m",
	config.KeyHostedZoneID:         "Z0123456789ABCDEFGHIJ",
	config.KeyHostedZoneName:       "example.com",
	config.KeyOIDCIssuer:           "https://login.example.com/oauth2/default",
	config.KeyOIDCClientID:         "0oa1b2c3d4e5f6",
	config.KeyOIDCClientSecretARN:  "arn:aws:secretsmanager:eu-west-1:123456789012:secret:aacmcp/oidc-client-AbC123",
	config.KeyWAFTokenRateLimit:    "120",
	config.KeyWAFRegisterRateLimit: float64(10),
	config.KeyOAuthAccessTTL:       "30m",
	config.KeyJWTIssuer:            "https://idp.example.com/oauth2/aus1",
	config.KeyJWTClients:           "claude-connector, chatgpt-connector",
	config.KeyJWTAlgorithms:        "RS256,ES256",
	config.KeyJWTUserClaim:         "email",
	config.KeyJWTWorkspace:         "acme",
}

// essentialsContext is also the bare API (frontDoor=false), on its regional custom
// domain.
var essentialsContext = map[string]any{
	config.KeyFrontDoor:           false,
	config.KeyCognitoDomainPrefix: "acme-mcp",
	config.KeyCognitoFeaturePlan:  config.CognitoEssentials,
	config.KeyDomainName:          "mcp.acme.example",
	config.KeyCertificateARN:      "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-1111-2222-3333-444455556666",
	config.KeyGlueDatabase:        "aacmcp_audit_essentials",
}

// The origin secret's versions of the rotating stack.
const (
	originSecretV1 = "1b7e6d8a-5c2e-4b0e-9a3c-2f1e0d9c8b7a"
	originSecretV2 = "9f8e7d6c-5b4a-4392-8170-fedcba987654"
)

var rotatingContext = map[string]any{
	config.KeyStackName:                   "Rotating",
	config.KeyOriginSecretVersion:         originSecretV2,
	config.KeyOriginSecretPreviousVersion: originSecretV1,
}

// testRegion is the main stacks' region: the front door needs one.
const testRegion = "eu-west-1"

// TestMain synthesizes both stacks once for the whole test binary: a synth costs
// seconds, and every test reads the same templates.
func TestMain(m *testing.M) {
	outdir, err := os.MkdirTemp("", "aacmcp-cdk-out-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		if err := synthAll(outdir); err != nil {
			fmt.Fprintln(os.Stderr, "synth:", err)
			return 1
		}
		return m.Run()
	}()
	jsii.Close()
	os.RemoveAll(outdir)
	os.Exit(code)
}

func synthAll(outdir string) (err error) {
	// A failed CDK call panics in Go; report it as the synth error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	root, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	repoQueries, err = savedqueries.Load(filepath.Join(root, "events", "queries"))
	if err != nil {
		return err
	}
	assets, err := testAssets(root)
	if err != nil {
		return err
	}
	app := newApp(outdir)
	build := func(id string, ctx map[string]any) (*synthesized, error) {
		cfg, err := config.Load(func(k string) any { return ctx[k] })
		if err != nil {
			return nil, err
		}
		env := &awscdk.Environment{Region: jsii.String(testRegion)}
		edgeCode := filepath.Join(root, "functions", "edge")
		var stack awscdk.Stack
		if id == "" {
			// As the app does: named by the stackName key.
			stack, err = newStacks(app, cfg, env, assets, repoQueries, edgeCode)
			id = cfg.StackName
		} else {
			stack, err = NewStack(app, id, &StackProps{
				StackProps: awscdk.StackProps{Env: env},
				Config:     cfg, Assets: assets, Queries: repoQueries, EdgeCode: edgeCode,
			})
		}
		if err != nil {
			return nil, err
		}
		s := &synthesized{stack: stack}
		if e, ok := app.Node().TryFindChild(jsii.String(EdgeStackID(id))).(awscdk.Stack); ok && e != nil {
			s.edge = &synthesized{stack: e}
		}
		return s, nil
	}
	if plain, err = build("Plain", nil); err != nil {
		return err
	}
	if full, err = build("Full", fullContext); err != nil {
		return err
	}
	if essentials, err = build("Essentials", essentialsContext); err != nil {
		return err
	}
	if bare, err = build("Bare", map[string]any{config.KeyFrontDoor: "false", config.KeyGlueDatabase: "aacmcp_audit_bare"}); err != nil {
		return err
	}
	if rotating, err = build("", rotatingContext); err != nil {
		return err
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Reports: jsii.Bool(false)}), nil)
	all := []*synthesized{plain, full, essentials, bare, rotating}
	for _, s := range all {
		if s.edge != nil {
			all = append(all, s.edge)
		}
	}
	for _, s := range all {
		s.template = assertions.Template_FromStack(s.stack, nil)
		b, err := json.Marshal(s.template.ToJSON())
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &s.raw); err != nil {
			return err
		}
		s.nagErrors = nagErrorsOf(s.stack)
	}
	return nil
}

// nagErrorsOf lists the unsuppressed cdk-nag AwsSolutions errors of a synthesized stack.
// cdk-nag reports through construct metadata during synth; an error is an
// "aws:cdk:error" entry.
func nagErrorsOf(stack awscdk.Stack) []string {
	var out []string
	for _, c := range *stack.Node().FindAll(constructs.ConstructOrder_PREORDER) {
		for _, m := range *c.Node().Metadata() {
			if text, ok := m.Data.(string); ok && *m.Type == "aws:cdk:error" && strings.HasPrefix(text, "AwsSolutions-") {
				out = append(out, fmt.Sprintf("%s: %s", *c.Node().Path(), text))
			}
		}
	}
	return out
}

// testAssets gives each function its built dist/<name> when it exists, and otherwise an
// empty temporary directory: Code.fromAsset needs a directory that exists, and these tests
// check the template, not the binary. (main refuses to synth without dist/.)
func testAssets(root string) (map[string]string, error) {
	assets := map[string]string{}
	for _, name := range wiredFunctions {
		dir := filepath.Join(root, "dist", name)
		if _, err := os.Stat(filepath.Join(dir, "bootstrap")); err == nil {
			assets[name] = dir
			continue
		}
		tmp, err := os.MkdirTemp("", "aacmcp-asset-"+name+"-")
		if err != nil {
			return nil, err
		}
		assets[name] = tmp
	}
	return assets, nil
}

// check runs an assertions call, turning its panic into a test error.
func check(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

// cfnTemplate is the synthesized template as plain data.
type cfnTemplate struct {
	Resources map[string]cfnResource `json:"Resources"`
	Outputs   map[string]struct {
		Value any `json:"Value"`
	} `json:"Outputs"`
}

type cfnResource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
	DependsOn  any            `json:"DependsOn"`
	// DeletionPolicy is "Retain" for what `cdk destroy` must keep.
	DeletionPolicy string         `json:"DeletionPolicy"`
	Metadata       map[string]any `json:"Metadata"`
}

// ofType returns the logical ids of all resources of a type, sorted.
func (c cfnTemplate) ofType(typ string) []string {
	var ids []string
	for id, r := range c.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// logicalIDWithPrefix finds the one resource of typ whose logical id starts with prefix.
func (c cfnTemplate) logicalIDWithPrefix(t *testing.T, typ, prefix string) string {
	t.Helper()
	var found []string
	for _, id := range c.ofType(typ) {
		if strings.HasPrefix(id, prefix) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s with id prefix %s, found %v", typ, prefix, found)
	}
	return found[0]
}

// path walks nested maps and lists: path(v, "A", "B", 0, "C").
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// jsonText is a value's canonical JSON, for comparisons and substring checks.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("<unencodable %T: %v>", v, err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ref is the CloudFormation {"Ref": id}.
func ref(id string) any { return map[string]any{"Ref": id} }

// getAtt is {"Fn::GetAtt": [id, attr]}.
func getAtt(id, attr string) any { return map[string]any{"Fn::GetAtt": []any{id, attr}} }

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

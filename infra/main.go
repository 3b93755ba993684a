// Command infra is the AWS CDK app of aacmcp: `cdk deploy` (through cdk.json) or
// `go run ./infra` (with CDK_OUTDIR set) synthesizes the CloudFormation template.
//
// It runs from the repository root (where cdk.json is), reads the deployment settings
// from CDK context, deploys dist/<fn>/ for every function under functions/, and turns
// every events/queries/*.sql into an Athena saved query. cdk-nag's AwsSolutions checks
// run on every synth; findings are printed and written to cdk.out.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/infra/savedqueries"
)

func main() {
	err := run()
	// jsii's Node child process must be stopped before exit, also on failure.
	jsii.Close()
	if err != nil {
		slog.Error("synth failed", "err", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	app := newApp("")
	cfg, err := config.Load(func(key string) any { return app.Node().TryGetContext(jsii.String(key)) })
	if err != nil {
		return err
	}
	names, err := discoverFunctions(filepath.Join(root, "functions"))
	if err != nil {
		return err
	}
	assets, err := distAssets(root, names)
	if err != nil {
		return err
	}
	queries, err := savedqueries.Load(filepath.Join(root, "events", "queries"))
	if err != nil {
		return err
	}
	edgeCode, err := edgeAsset(root)
	if err != nil {
		return err
	}
	if _, err := newStacks(app, cfg, stackEnv(os.Getenv, cfg), assets, queries, edgeCode); err != nil {
		return err
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	app.Synth(nil)
	return nil
}

// newStacks defines the app's stacks. The stack's name is its id, from the stackName
// context key, and the edge stack's follows it: two environments in one account and
// region are two names.
func newStacks(app awscdk.App, cfg config.Config, env *awscdk.Environment, assets map[string]string, queries []savedqueries.Query, edgeCode string) (awscdk.Stack, error) {
	return NewStack(app, cfg.StackName, &StackProps{
		StackProps: awscdk.StackProps{Env: env, Description: jsii.String("aacmcp: remote MCP server for the AACWorkflow issue tracker")},
		Config:     cfg,
		Assets:     assets,
		Queries:    queries,
		EdgeCode:   edgeCode,
	})
}

// stackEnv pins the stack to the account and region the CDK CLI resolved from the
// caller's configuration (CDK_DEFAULT_ACCOUNT, CDK_DEFAULT_REGION), else to the
// region context key. The front door needs a region (its Lambda@Edge function is in
// us-east-1 and referred to across regions); the account may stay the deploying
// one's, resolved by CloudFormation. Without either (plain `go run`, bare API) the
// template stays environment-agnostic.
func stackEnv(getenv func(string) string, cfg config.Config) *awscdk.Environment {
	account, region := getenv("CDK_DEFAULT_ACCOUNT"), getenv("CDK_DEFAULT_REGION")
	if region == "" {
		region = cfg.Region
	}
	if region == "" {
		return nil
	}
	env := &awscdk.Environment{Region: jsii.String(region)}
	if account != "" {
		env.Account = jsii.String(account)
	}
	return env
}

// edgeAsset is functions/edge, the Lambda@Edge function's code, deployed as it is.
func edgeAsset(root string) (string, error) {
	dir := filepath.Join(root, "functions", "edge")
	if _, err := os.Stat(filepath.Join(dir, "index.mjs")); err != nil {
		return "", fmt.Errorf("functions/edge/index.mjs (the Lambda@Edge function): %w", err)
	}
	return dir, nil
}

// repoRoot finds the module root (the directory with go.mod) from the working
// directory, so both `cdk` (run at the root) and `go run ./infra` from a subdirectory
// read the same functions/, dist/ and events/.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
}

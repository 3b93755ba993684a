package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/infra/savedqueries"
)

// StackProps is everything the stack is built from. The caller reads the files (function
// assets, saved queries) and the context, so the stack itself touches no file system and
// tests can give it temporary assets.
type StackProps struct {
	awscdk.StackProps
	Config config.Config
	// Assets maps each function name to the directory whose content is its code
	// (dist/<name> with a bootstrap binary).
	Assets map[string]string
	// Queries become Athena named queries, one each.
	Queries []savedqueries.Query
	// EdgeCode is the directory of the Lambda@Edge function (functions/edge), used
	// with the front door.
	EdgeCode string
}

// NewStack defines the whole aacmcp deployment in one stack: the API and its functions,
// the tables, the OAuth authorization server and its sign-in, the audit pipeline, Athena,
// and monitoring. One stack because every part
// refers to the others and none is deployed on its own.
func NewStack(scope constructs.Construct, id string, props *StackProps) (_ awscdk.Stack, err error) {
	// CDK reports invalid input (a bad context value, a clashing name) by throwing,
	// which jsii turns into a panic: return it as the error it is.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("defining stack %s: %v", id, r)
		}
	}()
	cfg := props.Config
	sp := props.StackProps
	var edge *edgeStack
	if cfg.FrontDoor {
		// Lambda@Edge and CloudFront's web ACL live in us-east-1: a second stack, and
		// references across regions, which need both regions known at synth.
		if sp.Env == nil || sp.Env.Region == nil || *sp.Env.Region == "" {
			return nil, fmt.Errorf("stack %s: the CloudFront front door needs the stack's region: deploy with the CDK CLI "+
				"(it sets CDK_DEFAULT_REGION from your AWS configuration), set CDK_DEFAULT_REGION, or pass -c %s=<region>; "+
				"-c %s=false deploys the bare API instead", id, config.KeyRegion, config.KeyFrontDoor)
		}
		if props.EdgeCode == "" {
			return nil, fmt.Errorf("stack %s: no code directory for the Lambda@Edge function", id)
		}
		sp.CrossRegionReferences = jsii.Bool(true)
		edge = newEdgeStack(scope, id, sp.Env.Account, cfg, props.EdgeCode)
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sp)

	d, err := newDataTables(stack)
	if err != nil {
		return nil, err
	}
	p, err := newPipeline(stack, cfg)
	if err != nil {
		return nil, err
	}
	fns, err := newFunctions(stack, cfg, props.Assets, d, p)
	if err != nil {
		return nil, err
	}
	newDigests(stack, p, fns)
	a := newAPI(stack, cfg, fns, edge)
	o := newOAuth(stack, cfg, d, p, fns, a)
	newExternalJWT(cfg, d, fns, o)
	newForwarding(stack, fns, a)
	newWAFLogging(stack, cfg, a, fns)
	newHMACKey(stack, fns)
	newConfirmKey(stack, fns)
	an := newAnalytics(stack, cfg, p, props.Queries)
	m := newMonitoring(stack, cfg, d, p, fns, a)
	newOutputs(stack, d, p, fns, a, an, m, o)
	return stack, nil
}

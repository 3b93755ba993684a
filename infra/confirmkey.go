package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// newConfirmKey makes the key that seals the requestState of a destructive call
// a person must confirm (shared/confirm), and gives it to the MCP function only.
// Generated at deploy, so the value is never in the template, context or shell
// history: 64 lowercase hex characters are the 32 bytes confirm.SecretsKeyring
// reads. Every instance reads the same key, so a retry that reaches another
// instance still opens; the function reloads it while warm, so a rotation
// (docs/security.md: put a new AWSCURRENT, the old version becomes AWSPREVIOUS
// and keeps opening states for their lifetime) needs no redeploy.
func newConfirmKey(scope constructs.Construct, fns *functionSet) awssecretsmanager.Secret {
	key := awssecretsmanager.NewSecret(scope, jsii.String("ConfirmKey"), &awssecretsmanager.SecretProps{
		Description: jsii.String("AES-256 key sealing human-confirmation requestState (64 hex characters); rotate by putting a new AWSCURRENT, the previous version stays accepted"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:          jsii.Number(64),
			ExcludePunctuation:      jsii.Bool(true),
			ExcludeUppercase:        jsii.Bool(true),
			IncludeSpace:            jsii.Bool(false),
			ExcludeCharacters:       jsii.String("ghijklmnopqrstuvwxyz"),
			RequireEachIncludedType: jsii.Bool(false),
		},
	})
	suppress(key, "SMG4", "No rotation Lambda: rotation is one put-secret-value of a new random key (docs/security.md), "+
		"which Secrets Manager stages as AWSCURRENT with the old version as AWSPREVIOUS; the MCP function reloads both while warm "+
		"and a sealed state lives five minutes, so a schedule adds a function without adding safety.")
	fn := fns.get(fnMCP)
	fn.AddEnvironment(jsii.String(confirm.EnvKeyARN), key.SecretArn(), nil)
	fn.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadConfirmKey"),
		Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: &[]*string{key.SecretArn()},
	}))
	return key
}

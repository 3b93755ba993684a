package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
)

// newHMACKey makes the deployment's audit HMAC key, the HMAC key of args_hmac
// and idempotency_key_hmac, and gives it to the MCP function (read once at cold
// start). Generated here, so it never appears in context, templates or shell
// history; 64 hex characters are the 32 bytes audit.ParseHMACKey wants.
func newHMACKey(scope constructs.Construct, fns *functionSet) awssecretsmanager.Secret {
	key := awssecretsmanager.NewSecret(scope, jsii.String("AuditHmacKey"), &awssecretsmanager.SecretProps{
		Description: jsii.String("HMAC key of the audit records' args_hmac and idempotency_key_hmac (hex); changing it makes new digests incomparable with old ones"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:          jsii.Number(64),
			ExcludePunctuation:      jsii.Bool(true),
			ExcludeUppercase:        jsii.Bool(true),
			IncludeSpace:            jsii.Bool(false),
			ExcludeCharacters:       jsii.String("ghijklmnopqrstuvwxyz"),
			RequireEachIncludedType: jsii.Bool(false),
		},
	})
	suppress(key, "SMG4", "Rotating the HMAC key would make new args_hmac values incomparable with old ones "+
		"(the point of the digest is to compare calls); it is changed deliberately, not on a schedule (docs/deploy.md).")
	fn := fns.get(fnMCP)
	fn.AddEnvironment(jsii.String(mcpfn.EnvHMACKeySecretARN), key.SecretArn(), nil)
	fn.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadAuditHmacKey"),
		Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: &[]*string{key.SecretArn()},
	}))
	return key
}

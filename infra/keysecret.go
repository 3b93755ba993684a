package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// keySecret is a 32-byte key that the MCP function, and the functions named in
// alsoReaders, read from Secrets Manager.
type keySecret struct {
	id, description string
	env             string   // the variable that names the secret's ARN to the function
	sid             string   // the statement id of the function's read permission
	whyNoRotation   string   // the reason of the SMG4 suppression
	alsoReaders     []string // functions beside the MCP function that read the key
}

// newKeySecret makes k: generated at deploy, so the value is never in the template,
// context or shell history (64 lowercase hex characters are the 32 bytes), named to
// the MCP function (and k.alsoReaders) by k.env and readable by their roles only.
func newKeySecret(scope constructs.Construct, fns *functionSet, k keySecret) awssecretsmanager.Secret {
	key := awssecretsmanager.NewSecret(scope, jsii.String(k.id), &awssecretsmanager.SecretProps{
		Description: jsii.String(k.description),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:          jsii.Number(64),
			ExcludePunctuation:      jsii.Bool(true),
			ExcludeUppercase:        jsii.Bool(true),
			IncludeSpace:            jsii.Bool(false),
			ExcludeCharacters:       jsii.String("ghijklmnopqrstuvwxyz"),
			RequireEachIncludedType: jsii.Bool(false),
		},
	})
	suppress(key, "SMG4", k.whyNoRotation)
	for _, name := range append([]string{fnMCP}, k.alsoReaders...) {
		fn := fns.get(name)
		fn.AddEnvironment(jsii.String(k.env), key.SecretArn(), nil)
		fn.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String(k.sid),
			Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
			Resources: &[]*string{key.SecretArn()},
		}))
	}
	return key
}

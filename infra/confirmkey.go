package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// newConfirmKey makes the key that seals the requestState of a destructive call
// a person must confirm (shared/confirm), and gives it to the MCP function, which
// seals, and to the authorization server's function, which opens the approval
// links the MCP function seals with it (its /oauth/approve page, shared/approval).
// Generated at deploy, so the value is never in the template, context or shell
// history: 64 lowercase hex characters are the 32 bytes confirm.SecretsKeyring
// reads. Every instance reads the same key, so a retry that reaches another
// instance still opens; the function reloads it while warm, so a rotation
// (docs/security.md section 7: put a new AWSCURRENT, the old version becomes AWSPREVIOUS
// and keeps opening states for their lifetime) needs no redeploy.
func newConfirmKey(scope constructs.Construct, fns *functionSet) awssecretsmanager.Secret {
	return newKeySecret(scope, fns, keySecret{
		id:          "ConfirmKey",
		description: "AES-256 key sealing human-confirmation requestState (64 hex characters); rotate by putting a new AWSCURRENT, the previous version stays accepted",
		env:         confirm.EnvKeyARN,
		sid:         "ReadConfirmKey",
		alsoReaders: []string{fnOAuth},
		whyNoRotation: "No rotation Lambda: rotation is one put-secret-value of a new random key (docs/security.md), " +
			"which Secrets Manager stages as AWSCURRENT with the old version as AWSPREVIOUS; both functions reload both while warm " +
			"and a sealed state lives five minutes, so a schedule adds a function without adding safety.",
	})
}

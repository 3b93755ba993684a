package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
)

// newHMACKey makes the deployment's audit HMAC key, the HMAC key of args_hmac
// and idempotency_key_hmac, and gives it to the MCP function (read once at cold
// start). Generated here, so it never appears in context, templates or shell
// history; 64 hex characters are the 32 bytes audit.ParseHMACKey wants.
func newHMACKey(scope constructs.Construct, fns *functionSet) awssecretsmanager.Secret {
	return newKeySecret(scope, fns, keySecret{
		id:          "AuditHmacKey",
		description: "HMAC key of the audit records' args_hmac and idempotency_key_hmac (hex); changing it makes new digests incomparable with old ones",
		env:         mcpfn.EnvHMACKeySecretARN,
		sid:         "ReadAuditHmacKey",
		whyNoRotation: "Rotating the HMAC key would make new args_hmac values incomparable with old ones " +
			"(the point of the digest is to compare calls); it is changed deliberately, not on a schedule (docs/deploy.md).",
	})
}

package main

import (
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
)

// The MCP function is given the HMAC key's secret by ARN (never the value), and
// its role may read that one secret; the generated value is 64 hex characters.
func TestAuditHmacKey(t *testing.T) {
	roleOf := func(fn string) string {
		return plain.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fn)+"Role")
	}
	id := plain.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "AuditHmacKey")
	gen, _ := path(plain.raw.Resources[id].Properties, "GenerateSecretString").(map[string]any)
	if gen["PasswordLength"] != float64(64) || gen["ExcludeUppercase"] != true || gen["ExcludePunctuation"] != true ||
		gen["ExcludeCharacters"] != "ghijklmnopqrstuvwxyz" {
		t.Errorf("GenerateSecretString = %v, want 64 lowercase hex characters", gen)
	}
	fn := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnMCP))].Properties
	env, _ := path(fn, "Environment", "Variables").(map[string]any)
	if got := jsonText(env[mcpfn.EnvHMACKeySecretARN]); got != jsonText(ref(id)) {
		t.Errorf("%s = %s, want the secret's ARN (Ref %s)", mcpfn.EnvHMACKeySecretARN, got, id)
	}
	found := false
	for _, st := range statementsOf(t, plain, roleOf(fnMCP)) {
		if strings.Join(st.Actions, ",") == "secretsmanager:GetSecretValue" && strings.Contains(strings.Join(st.Resources, " "), id) {
			found = true
		}
	}
	if !found {
		t.Error("the MCP role cannot read the HMAC key")
	}
	for _, other := range []string{fnAuthorizer, fnForwarder} {
		for _, st := range statementsOf(t, plain, roleOf(other)) {
			if strings.Contains(strings.Join(st.Resources, " "), id) {
				t.Errorf("%s may read the HMAC key", other)
			}
		}
	}
}

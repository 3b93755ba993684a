package main

import (
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/functions/forwarder/forwarderfn"
)

// The forwarder is told which group holds which kind of line: the functions' groups
// (fallback lines), the access log and the WAF log, each by the name the stack
// gave it. Without them it would read every line as every kind.
func TestForwarderKnowsItsLogGroups(t *testing.T) {
	fn := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(fnForwarder))].Properties
	env, _ := path(fn, "Environment", "Variables").(map[string]any)
	for key, groups := range map[string][]string{
		forwarderfn.EnvFunctionLogGroups: {functionID(fnMCP) + "Logs", functionID(fnAuthorizer) + "Logs"},
		forwarderfn.EnvAccessLogGroup:    {"ApiAccessLogs"},
		forwarderfn.EnvWAFLogGroup:       {"WafLogs"},
	} {
		v, ok := env[key]
		if !ok {
			t.Errorf("forwarder environment lacks %s", key)
			continue
		}
		text := jsonText(v)
		for _, g := range groups {
			if !strings.Contains(text, `"Ref":"`+plain.raw.logicalIDWithPrefix(t, "AWS::Logs::LogGroup", g)+`"`) {
				t.Errorf("%s = %s, does not name log group %s", key, text, g)
			}
		}
	}
	for _, other := range []string{fnMCP, fnAuthorizer} {
		p := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Lambda::Function", functionID(other))].Properties
		if e, _ := path(p, "Environment", "Variables").(map[string]any); e[forwarderfn.EnvAccessLogGroup] != nil {
			t.Errorf("%s received the forwarder's variables", other)
		}
	}
}

// The web ACL logs what it blocks to an aws-waf-logs-* group, with the bearer
// secret redacted.
func TestWAFLogging(t *testing.T) {
	ids := plain.raw.ofType("AWS::WAFv2::LoggingConfiguration")
	if len(ids) != 1 {
		t.Fatalf("want one WAF logging configuration, got %v", ids)
	}
	p := plain.raw.Resources[ids[0]].Properties
	if got, want := jsonText(p["ResourceArn"]), jsonText(getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::WAFv2::WebACL", "ApiWebAcl"), "Arn")); got != want {
		t.Errorf("ResourceArn = %s, want the web ACL %s", got, want)
	}
	dest := jsonText(p["LogDestinationConfigs"])
	if !strings.Contains(dest, ":log-group:") || strings.Contains(dest, ":*") {
		t.Errorf("LogDestinationConfigs = %s, want a log group ARN without the :* suffix", dest)
	}
	if got := jsonText(p["RedactedFields"]); !strings.Contains(strings.ToLower(got), `"authorization"`) {
		t.Errorf("RedactedFields = %s, want the Authorization header redacted", got)
	}
	if got := jsonText(p["LoggingFilter"]); !strings.Contains(got, `"DefaultBehavior":"DROP"`) || !strings.Contains(got, `"Action":"BLOCK"`) {
		t.Errorf("LoggingFilter = %s, want only BLOCK kept", got)
	}
	lg := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::Logs::LogGroup", "WafLogs")].Properties
	if name := jsonText(lg["LogGroupName"]); !strings.Contains(name, wafLogGroupPrefix) {
		t.Errorf("WAF log group name = %s, want the %s prefix WAF requires", name, wafLogGroupPrefix)
	}
}

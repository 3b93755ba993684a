package main

import (
	"slices"
	"strings"
	"testing"
)

// statement is one IAM policy statement, normalised to lists.
type statement struct {
	Actions    []string
	Resources  []string // JSON text of each resource
	Conditions string
}

func statementsOf(t *testing.T, s *synthesized, roleID string) []statement {
	t.Helper()
	var out []statement
	for _, id := range s.raw.ofType("AWS::IAM::Policy") {
		p := s.raw.Resources[id].Properties
		if !strings.Contains(jsonText(p["Roles"]), jsonText(ref(roleID))) {
			continue
		}
		for _, st := range asList(path(p, "PolicyDocument", "Statement")) {
			out = append(out, normalise(st))
		}
	}
	for _, pol := range asList(s.raw.Resources[roleID].Properties["Policies"]) {
		for _, st := range asList(path(pol, "PolicyDocument", "Statement")) {
			out = append(out, normalise(st))
		}
	}
	return out
}

func normalise(st any) statement {
	var s statement
	switch a := path(st, "Action").(type) {
	case string:
		s.Actions = []string{a}
	case []any:
		for _, x := range a {
			s.Actions = append(s.Actions, x.(string))
		}
	}
	switch r := path(st, "Resource").(type) {
	case []any:
		for _, x := range r {
			s.Resources = append(s.Resources, jsonText(x))
		}
	default:
		s.Resources = []string{jsonText(r)}
	}
	if c := path(st, "Condition"); c != nil {
		s.Conditions = jsonText(c)
	}
	return s
}

// xrayActions are the only actions that may have Resource "*": X-Ray has no resource ARNs.
var xrayActions = []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}

// crossRegionProvider is the prefix of the roles CDK adds, at synth, for the front
// door's references between the stack and its us-east-1 edge stack (a custom resource
// that writes, and one that reads, SSM parameters under /cdk/exports/). They are
// CDK's own code; TestCrossRegionProviders holds them to SSM on those parameters.
const crossRegionProvider = "CustomCrossRegionExport"

func TestIAMNoWildcards(t *testing.T) {
	each(t, func(t *testing.T, s *synthesized) {
		for _, id := range s.raw.ofType("AWS::IAM::Role") {
			if strings.HasPrefix(id, crossRegionProvider) {
				continue
			}
			for _, m := range asList(s.raw.Resources[id].Properties["ManagedPolicyArns"]) {
				arn := jsonText(m)
				if strings.Contains(arn, "FullAccess") || !strings.Contains(arn, "AmazonAPIGatewayPushToCloudWatchLogs") {
					t.Errorf("role %s has managed policy %s", id, arn)
				}
			}
			for _, st := range statementsOf(t, s, id) {
				for _, a := range st.Actions {
					if strings.Contains(a, "*") {
						t.Errorf("role %s: wildcard action %s", id, a)
					}
				}
				if slices.Contains(st.Resources, `"*"`) {
					for _, a := range st.Actions {
						if !slices.Contains(xrayActions, a) {
							t.Errorf("role %s: %s on Resource *", id, a)
						}
					}
				}
			}
		}
	})
}

func TestIAMLeastPrivilege(t *testing.T) {
	roleOf := func(fn string) string {
		return plain.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", functionID(fn)+"Role")
	}
	mainTable := plain.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", "MainTable")
	tokensTable := plain.raw.logicalIDWithPrefix(t, "AWS::DynamoDB::GlobalTable", "TokensTable")
	stream := jsonText(getAtt(plain.raw.logicalIDWithPrefix(t, "AWS::Kinesis::Stream", "AuditStream"), "Arn"))

	tests := []struct {
		fn          string
		wantActions []string
		mustNotRef  string
	}{
		{fnMCP, []string{
			"dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem",
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem",
			"kinesis:PutRecord", "logs:CreateLogStream", "logs:PutLogEvents", "secretsmanager:GetSecretValue",
			"xray:PutTelemetryRecords", "xray:PutTraceSegments",
		}, tokensTable},
		{fnAuthorizer, []string{
			"dynamodb:GetItem", "dynamodb:UpdateItem", "kinesis:PutRecord",
			"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTelemetryRecords", "xray:PutTraceSegments",
		}, mainTable},
		{fnDigest, []string{
			"kms:Sign", "logs:CreateLogStream", "logs:PutLogEvents", "s3:GetObject", "s3:ListBucket", "s3:PutObject",
			"xray:PutTelemetryRecords", "xray:PutTraceSegments",
		}, mainTable},
		{fnForwarder, []string{
			"kinesis:PutRecord", "kinesis:PutRecords", "logs:CreateLogStream", "logs:PutLogEvents",
			"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage",
			"xray:PutTelemetryRecords", "xray:PutTraceSegments",
		}, mainTable},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			sts := statementsOf(t, plain, roleOf(tt.fn))
			var actions []string
			for _, st := range sts {
				actions = append(actions, st.Actions...)
				if strings.Contains(strings.Join(st.Resources, " "), tt.mustNotRef) {
					t.Errorf("%s reaches %s: %v", tt.fn, tt.mustNotRef, st)
				}
				for _, a := range st.Actions {
					if strings.HasPrefix(a, "kinesis:") && (len(st.Resources) != 1 || st.Resources[0] != stream) {
						t.Errorf("%s: %s on %v, want only the audit stream", tt.fn, a, st.Resources)
					}
				}
			}
			slices.Sort(actions)
			actions = slices.Compact(actions)
			if !slices.Equal(actions, tt.wantActions) {
				t.Errorf("actions = %v\nwant %v", actions, tt.wantActions)
			}
		})
	}

	// Tenant isolation: the mcp role's item access is confined to WS# keys, on the main
	// table and its one index by name.
	for _, st := range statementsOf(t, plain, roleOf(fnMCP)) {
		if !slices.Contains(st.Actions, "dynamodb:GetItem") {
			continue
		}
		if st.Conditions != `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["WS#*"]}}` {
			t.Errorf("mcp item access condition = %s", st.Conditions)
		}
		want := []string{jsonText(getAtt(mainTable, "Arn")), `{"Fn::Join":["",[{"Fn::GetAtt":["` + mainTable + `","Arn"]},"/index/GSI1"]]}`}
		if !slices.Equal(st.Resources, want) {
			t.Errorf("mcp item access resources = %v\nwant %v", st.Resources, want)
		}
	}
	// The authorizer may update only failure counters.
	for _, st := range statementsOf(t, plain, roleOf(fnAuthorizer)) {
		if slices.Contains(st.Actions, "dynamodb:UpdateItem") &&
			st.Conditions != `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["FAIL#*"]}}` {
			t.Errorf("authorizer UpdateItem condition = %s", st.Conditions)
		}
		if slices.Contains(st.Actions, "dynamodb:GetItem") && !strings.Contains(st.Conditions, `"TOKEN#*"`) {
			t.Errorf("authorizer GetItem condition = %s", st.Conditions)
		}
	}
}

func TestFirehoseRole(t *testing.T) {
	role := plain.raw.logicalIDWithPrefix(t, "AWS::IAM::Role", "AuditDeliveryRole")
	bucket := plain.raw.logicalIDWithPrefix(t, "AWS::S3::Bucket", "AuditBucket")
	for _, st := range statementsOf(t, plain, role) {
		for _, r := range st.Resources {
			if strings.Contains(r, `"*"`) || r == `"*"` {
				t.Errorf("firehose: %v on %s", st.Actions, r)
			}
		}
		if slices.Contains(st.Actions, "s3:PutObject") {
			for _, r := range st.Resources {
				if !strings.Contains(r, bucket) || !(strings.Contains(r, `/audit/*`) || strings.Contains(r, `/audit-errors/*`)) {
					t.Errorf("firehose writes outside the audit prefixes: %s", r)
				}
			}
		}
	}
	if !strings.Contains(jsonText(plain.raw.Resources[role].Properties["AssumeRolePolicyDocument"]), "sts:ExternalId") {
		t.Error("firehose role trust has no confused-deputy condition")
	}
}

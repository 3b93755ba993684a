package main

import (
	"strings"
	"testing"
)

// TestOriginSecretRotation: CloudFormation re-reads a secret's dynamic reference only
// when the resource holding it changes, so the version id is in the reference: a
// new originSecretVersion changes the distribution's origin header and the WAF rule
// together. While the previous version is given, the WAF accepts both, as CloudFront
// may still send the old value until its deployment completes.
func TestOriginSecretRotation(t *testing.T) {
	s := rotating
	secret := s.raw.logicalIDWithPrefix(t, "AWS::SecretsManager::Secret", "OriginVerifySecret")
	versionRef := func(v string) string {
		return jsonText(map[string]any{"Fn::Join": []any{"", []any{"{{resolve:secretsmanager:", ref(secret), ":SecretString:::" + v + "}}"}}})
	}
	dist := s.raw.Resources[s.raw.logicalIDWithPrefix(t, "AWS::CloudFront::Distribution", "FrontDoor")].Properties
	var header string
	for _, h := range asList(path(dist, "DistributionConfig", "Origins", 0, "OriginCustomHeaders")) {
		if strings.EqualFold(path(h, "HeaderName").(string), originVerifyHeader) {
			header = jsonText(path(h, "HeaderValue"))
		}
	}
	if header != versionRef(originSecretV2) {
		t.Errorf("origin header %s, want the new version's reference %s", header, versionRef(originSecretV2))
	}
	first := asList(s.raw.Resources["ApiWebAcl"].Properties["Rules"])[0]
	var accepted []string
	for _, st := range asList(path(first, "Statement", "NotStatement", "Statement", "OrStatement", "Statements")) {
		accepted = append(accepted, jsonText(path(st, "ByteMatchStatement", "SearchString")))
	}
	if len(accepted) != 2 || accepted[0] != versionRef(originSecretV2) || accepted[1] != versionRef(originSecretV1) {
		t.Errorf("OnlyThroughCloudFront accepts %v, want the new and the previous version", accepted)
	}
	// Without a version (the first deploy) both name the current one alike.
	pd := plain.raw.Resources[plain.raw.logicalIDWithPrefix(t, "AWS::CloudFront::Distribution", "FrontDoor")].Properties
	if h := jsonText(path(pd, "DistributionConfig", "Origins", 0, "OriginCustomHeaders", 0, "HeaderValue")); h != secretRef(t, plain) {
		t.Errorf("plain origin header %s, want %s", h, secretRef(t, plain))
	}
}

// TestWAFLogRedactsOriginSecret: every request through the distribution carries the
// origin secret; the regional WAF's log must not.
func TestWAFLogRedactsOriginSecret(t *testing.T) {
	for name, s := range map[string]*synthesized{"plain": plain, "rotating": rotating} {
		id := s.raw.ofType("AWS::WAFv2::LoggingConfiguration")
		if len(id) != 1 {
			t.Fatalf("%s: WAF logging configurations %v", name, id)
		}
		got := jsonText(s.raw.Resources[id[0]].Properties["RedactedFields"])
		if !strings.Contains(got, `{"SingleHeader":{"Name":"`+strings.ToLower(originVerifyHeader)+`"}}`) {
			t.Errorf("%s: RedactedFields = %s, want %s", name, got, strings.ToLower(originVerifyHeader))
		}
	}
}

// TestGlueDatabasePerStack: the database is named after the stack (two environments
// in one account and region) and deleted with it (a retained one would fail the
// next deploy of the stack on its name); the saved queries name the one database.
func TestGlueDatabasePerStack(t *testing.T) {
	for name, tt := range map[string]struct {
		s    *synthesized
		want string
	}{"plain": {plain, "aacmcp_audit"}, "rotating": {rotating, "rotating_audit"}, "full": {full, "aacmcp_audit_full"}} {
		ids := tt.s.raw.ofType("AWS::Glue::Database")
		if len(ids) != 1 {
			t.Fatalf("%s: Glue databases %v", name, ids)
		}
		db := tt.s.raw.Resources[ids[0]]
		if got := path(db.Properties, "DatabaseInput", "Name"); got != tt.want {
			t.Errorf("%s: database %v, want %s", name, got, tt.want)
		}
		if db.DeletionPolicy == "Retain" {
			t.Errorf("%s: the Glue database is retained", name)
		}
		for _, tbl := range tt.s.raw.ofType("AWS::Glue::Table") {
			if tt.s.raw.Resources[tbl].DeletionPolicy == "Retain" {
				t.Errorf("%s: the Glue table %s is retained", name, tbl)
			}
		}
		for _, q := range tt.s.raw.ofType("AWS::Athena::NamedQuery") {
			if got := jsonText(tt.s.raw.Resources[q].Properties["Database"]); got != jsonText(ref(ids[0])) {
				t.Errorf("%s: saved query %s names database %s, want the stack's", name, q, got)
			}
		}
	}
}

// TestCustomDomainRecords: the distribution answers on IPv4 and IPv6, so the custom
// domain has both alias records.
func TestCustomDomainRecords(t *testing.T) {
	types := map[string]bool{}
	for _, id := range full.raw.ofType("AWS::Route53::RecordSet") {
		p := full.raw.Resources[id].Properties
		if p["Name"] != "mcp.example.com." || path(p, "AliasTarget", "DNSName") == nil {
			continue
		}
		types[p["Type"].(string)] = true
	}
	if !types["A"] || !types["AAAA"] {
		t.Errorf("custom domain records %v, want A and AAAA aliases", types)
	}
}

// TestStackNameNamesTheStacks: the app names its stack after the stackName key (the
// rotating stack is built as the app builds it), the edge stack and the WAF log
// group after the stack, so a second environment shares nothing by name.
func TestStackNameNamesTheStacks(t *testing.T) {
	if got := *rotating.stack.StackName(); got != "Rotating" {
		t.Errorf("stack name %s, want Rotating", got)
	}
	if rotating.edge == nil || *rotating.edge.stack.StackName() != "RotatingEdge" {
		t.Errorf("edge stack of Rotating: %v", rotating.edge)
	}
	lg := rotating.raw.Resources[rotating.raw.logicalIDWithPrefix(t, "AWS::Logs::LogGroup", "WafLogs")].Properties
	if got := jsonText(lg["LogGroupName"]); got != `"aws-waf-logs-Rotating"` {
		t.Errorf("WAF log group %s, want aws-waf-logs-Rotating", got)
	}
}

package main

import (
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// Environment of the token authorizer's external JWT issuer (shared/lambdaenv's
// LoadJWT on branch i-jwt reads these names; switch to its EnvJWT* constants once it
// is merged).
const (
	envJWTIssuer         = "AACMCP_JWT_ISSUER"
	envJWTAudience       = "AACMCP_JWT_AUDIENCE"
	envJWTJWKSURL        = "AACMCP_JWT_JWKS_URL"
	envJWTClients        = "AACMCP_JWT_CLIENTS"
	envJWTAlgorithms     = "AACMCP_JWT_ALGORITHMS"
	envJWTUserClaim      = "AACMCP_JWT_USER_CLAIM"
	envJWTWorkspace      = "AACMCP_JWT_WORKSPACE"
	envJWTWorkspaceClaim = "AACMCP_JWT_WORKSPACE_CLAIM"
	envJWTRequireATJWT   = "AACMCP_JWT_REQUIRE_AT_JWT"
)

// newExternalJWT lets the token authorizer accept JWT access tokens of an external
// authorization server (issue 13, "bring your own authorization server"), when the
// jwtIssuer context key names one. The authorizer then maps a token's user claim to
// members by e-mail, so it reads the member lookups and the member records they point
// to; without an external issuer it keeps no access to the main table at all. The MCP
// function gets the issuer too: its resource metadata then names it.
func newExternalJWT(cfg config.Config, d *dataTables, fns *functionSet, o *oauthStack) {
	j := cfg.JWT
	if j.Issuer == "" {
		return
	}
	authz := fns.get(fnAuthorizer)
	env := map[string]string{
		envJWTIssuer:         j.Issuer,
		envJWTAudience:       strings.Join(j.Audiences, ","),
		envJWTClients:        strings.Join(j.Clients, ","),
		envJWTJWKSURL:        j.JWKSURL,
		envJWTAlgorithms:     strings.Join(j.Algorithms, ","),
		envJWTUserClaim:      j.UserClaim,
		envJWTWorkspace:      j.Workspace,
		envJWTWorkspaceClaim: j.WorkspaceClaim,
	}
	if j.RequireATJWT {
		env[envJWTRequireATJWT] = strconv.FormatBool(true)
	}
	for k, v := range env {
		if v != "" {
			authz.AddEnvironment(jsii.String(k), jsii.String(v), nil)
		}
	}
	// The default audience is <public URL>/mcp, the resource the tokens are for.
	authz.AddEnvironment(jsii.String(envPublicURL), o.issuer, nil)
	fns.get(fnMCP).AddEnvironment(jsii.String(envJWTIssuer), jsii.String(j.Issuer), nil)

	role := authz.Role()
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadMemberLookups"),
		Actions:   jsii.Strings("dynamodb:Query"),
		Resources: &[]*string{d.main.TableArn()},
		Conditions: &map[string]any{
			"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []string{dynamo.MemberLookupPrefix + "*"}},
		},
	}))
	role.AddToPrincipalPolicy(memberRecordsReadStatement(d))
}

// memberRecordsReadStatement reads member records: WS#<ws> / MEMBER#<user>. Every other
// tenant item's partition key has a second '#' (WS#<ws>#ISSUE#..., and workspace ids
// never contain '#'), so the second condition keeps issues, comments, runs and
// counters out of reach; what remains is the workspace's own partition (its META,
// members and agents), read only.
func memberRecordsReadStatement(d *dataTables) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ReadMemberRecords"),
		Actions:   jsii.Strings("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"),
		Resources: &[]*string{d.main.TableArn()},
		Conditions: &map[string]any{
			"ForAllValues:StringLike":    map[string]any{"dynamodb:LeadingKeys": []string{dynamo.TenantPrefix + "*"}},
			"ForAllValues:StringNotLike": map[string]any{"dynamodb:LeadingKeys": []string{dynamo.TenantPrefix + "*#*"}},
		},
	})
}

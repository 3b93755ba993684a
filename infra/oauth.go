package main

import (
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscognito"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsroute53"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsroute53targets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/aacworkflow/aacmcp/functions/oauth/oauthfn"
	"github.com/aacworkflow/aacmcp/infra/config"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// Environment of the authorization server function (oauthfn reads it).
// AACMCP_PUBLIC_URL is also given to the MCP function, so that the resource metadata and
// the authorization server agree on one issuer.
const (
	envPublicURL           = oauthfn.EnvPublicURL
	envOIDCIssuer          = oauthfn.EnvOIDCIssuer
	envOIDCClientID        = oauthfn.EnvOIDCClientID
	envOIDCClientSecretARN = oauthfn.EnvOIDCClientSecretARN
	envOAuthAccessTTL      = oauthfn.EnvAccessTokenTTL
)

// callbackPath is where the upstream provider sends the person back (shared/oauth's
// GET /oauth/callback), relative to the issuer.
const callbackPath = "/oauth/callback"

// oauthRoutes reach the authorization server function, without the authorizer: a
// client uses them to get its first token. OPTIONS on the two metadata documents is for
// browser-based clients, whose discovery request carries MCP-Protocol-Version and so is
// preflighted; shared/oauth answers the preflight (the /oauth/ routes get it from ANY).
var oauthRoutes = []route{
	{"ANY", "/oauth/{proxy+}", false},
	{"GET", "/.well-known/oauth-authorization-server", false},
	{"OPTIONS", "/.well-known/oauth-authorization-server", false},
	{"GET", "/.well-known/openid-configuration", false},
	{"OPTIONS", "/.well-known/openid-configuration", false},
}

// oauthStack is the authorization server's part of the stack.
type oauthStack struct {
	// issuer is the public base URL without a trailing slash: the authorization
	// server's issuer, and the base of /mcp, the protected resource.
	issuer *string
	// upstreamIssuer, upstreamClientID and upstreamSecretARN are what the function
	// signs people in with: the stack's Cognito pool, or the configured provider.
	upstreamIssuer    *string
	upstreamClientID  *string
	upstreamSecretARN *string
	// cognito is nil when an external provider replaces the stack's pool.
	cognito *cognitoPool
}

// cognitoPool is the stack's own upstream identity provider.
type cognitoPool struct {
	pool   awscognito.UserPool
	client awscognito.UserPoolClient
	domain awscognito.UserPoolDomain
	secret awssecretsmanager.Secret
}

// newOAuth adds the authorization server: its routes, its upstream identity provider
// (Cognito unless the context names another), its function's environment and role.
func newOAuth(scope constructs.Construct, cfg config.Config, d *dataTables, p *pipeline, fns *functionSet, a *api) *oauthStack {
	o := &oauthStack{issuer: jsii.String(strings.TrimSuffix(*a.baseURL, "/"))}
	if cfg.ExternalIssuer() {
		o.upstreamIssuer = jsii.String(cfg.OIDCIssuer)
		o.upstreamClientID = jsii.String(cfg.OIDCClientID)
		o.upstreamSecretARN = jsii.String(cfg.OIDCClientSecretARN)
	} else {
		o.cognito = newCognito(scope, cfg, o.issuer, a)
		stack := awscdk.Stack_Of(scope)
		o.upstreamIssuer = jsii.String("https://cognito-idp." + *stack.Region() + "." + *stack.UrlSuffix() + "/" + *o.cognito.pool.UserPoolId())
		o.upstreamClientID = o.cognito.client.UserPoolClientId()
		o.upstreamSecretARN = o.cognito.secret.SecretArn()
	}

	fn := fns.get(fnOAuth)
	for k, v := range map[string]*string{
		envPublicURL:           o.issuer,
		envOIDCIssuer:          o.upstreamIssuer,
		envOIDCClientID:        o.upstreamClientID,
		envOIDCClientSecretARN: o.upstreamSecretARN,
	} {
		fn.AddEnvironment(jsii.String(k), v, nil)
	}
	if cfg.OAuthAccessTTL > 0 {
		fn.AddEnvironment(jsii.String(envOAuthAccessTTL), jsii.String(cfg.OAuthAccessTTL.String()), nil)
	}
	// The MCP function's resource metadata names the built-in server first, then any
	// configured ones; its Lambda handler has no authorization server of its own.
	mcp := fns.get(fnMCP)
	mcp.AddEnvironment(jsii.String(envPublicURL), o.issuer, nil)
	mcp.AddEnvironment(jsii.String(envAuthorizationServers), jsii.String(strings.Join(append([]string{*o.issuer}, cfg.AuthorizationServers...), ",")), nil)

	grantOAuth(fn.Role(), d, p, o.upstreamSecretARN)
	a.addOAuthRoutes(fn)
	if cfg.HostedZoneID != "" {
		newDomainRecord(scope, cfg, a)
	}
	return o
}

// addOAuthRoutes sends the authorization server's routes to its function.
func (a *api) addOAuthRoutes(fn awslambda.Function) {
	integration := awsapigateway.NewLambdaIntegration(fn, &awsapigateway.LambdaIntegrationOptions{
		Proxy:           jsii.Bool(true),
		AllowTestInvoke: jsii.Bool(false),
	})
	for _, r := range oauthRoutes {
		m := a.rest.Root().ResourceForPath(jsii.String(r.path)).AddMethod(jsii.String(r.method), integration,
			&awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_NONE})
		suppress(m, "APIG4", "Public by design: "+r.path+" is the OAuth authorization server (RFC 8414 metadata, "+
			"authorize, token, registration, revocation), which a client uses to obtain its first token; the "+
			"server authenticates clients and people itself.")
		suppress(m, "COG4", "The OAuth authorization server must be reachable without a token; the Cognito pool "+
			"is its upstream sign-in, not an API Gateway authorizer, and the MCP routes use the token authorizer.")
	}
}

// grantOAuth: the authorization server mints and revokes OAuth access tokens (records
// in the tokens table), keeps its own state under OAUTH#, reads the member lookups and
// the member records they point to, puts audit records, and reads the upstream secret.
// Its approval page (/oauth/approve) reads the one issue or comment a destructive call
// would destroy, for the preview (key, title, comment count), and records the person's
// decision on that call's approval item. So it reads issues and comments only item by
// item (no Query, no index: it cannot list a workspace), writes no issue, comment,
// member or any other tenant data, and its only tenant write is the decision: an
// UpdateItem of an approval the MCP function put.
func grantOAuth(role awsiam.IRole, d *dataTables, p *pipeline, upstreamSecretARN *string) {
	leading := func(op string, prefixes ...string) *map[string]any {
		for i := range prefixes {
			prefixes[i] += "*"
		}
		return &map[string]any{op: map[string]any{"dynamodb:LeadingKeys": prefixes}}
	}
	// tenantKinds admits the partition keys WS#<ws>#<kind>#<id> of the given kinds
	// and no other. Workspace ids and ids never contain '#' (the store's validPart),
	// so the second condition, at most three '#', keeps out every longer key that
	// the first would match through a '*' (WS#<ws>#GONE#ISSUE#<id>, WS#<ws>#IDEM#...).
	tenantKinds := func(kinds ...string) *map[string]any {
		like := make([]string, len(kinds))
		for i, k := range kinds {
			like[i] = dynamo.TenantPrefix + "*#" + k + "#*"
		}
		return &map[string]any{
			"ForAllValues:StringLike":    map[string]any{"dynamodb:LeadingKeys": like},
			"ForAllValues:StringNotLike": map[string]any{"dynamodb:LeadingKeys": []string{dynamo.TenantPrefix + "*#*#*#*"}},
		}
	}
	gsi := dynamo.Main.GSIs[0].Name
	for _, st := range []*awsiam.PolicyStatementProps{
		// CreateToken puts the id item, then the token; GetTokenByHash and
		// UpdateTokenRevoked read them and stamp the revocation. The one DeleteItem is
		// CreateToken releasing the id item it claimed when the token put failed.
		{
			Sid:        jsii.String("MintOAuthTokens"),
			Actions:    jsii.Strings("dynamodb:PutItem", "dynamodb:GetItem"),
			Resources:  &[]*string{d.tokens.TableArn()},
			Conditions: leading("ForAllValues:StringLike", dynamo.TokenPrefix, dynamo.TokenIDPrefix),
		},
		{
			Sid:        jsii.String("RevokeOAuthTokens"),
			Actions:    jsii.Strings("dynamodb:UpdateItem"),
			Resources:  &[]*string{d.tokens.TableArn()},
			Conditions: leading("ForAllValues:StringLike", dynamo.TokenPrefix),
		},
		{
			Sid:        jsii.String("ReleaseTokenIds"),
			Actions:    jsii.Strings("dynamodb:DeleteItem"),
			Resources:  &[]*string{d.tokens.TableArn()},
			Conditions: leading("ForAllValues:StringLike", dynamo.TokenIDPrefix),
		},
		{
			Sid:        jsii.String("WriteOAuthState"),
			Actions:    jsii.Strings("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"),
			Resources:  &[]*string{d.main.TableArn()},
			Conditions: leading("ForAllValues:StringLike", dynamo.OAuthPrefix),
		},
		{
			Sid:        jsii.String("ReadOAuthState"),
			Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"),
			Resources:  &[]*string{d.main.TableArn(), indexArn(d.main, gsi)},
			Conditions: leading("ForAllValues:StringLike", dynamo.OAuthPrefix),
		},
		{
			Sid:        jsii.String("ReadMemberLookups"),
			Actions:    jsii.Strings("dynamodb:Query"),
			Resources:  &[]*string{d.main.TableArn()},
			Conditions: leading("ForAllValues:StringLike", dynamo.MemberLookupPrefix),
		},
		// The preview loaders of the confirmable tools (catalog, Tool.Confirm.Load,
		// on the dynamo store): GetIssue reads the key item of an issue named by its
		// key, then the issue; GetComment reads the comment's reference item, then
		// the comment and its issue (both in the issue's partition) in one
		// BatchGetItem. shared/store/dynamo's TestApprovalPageRequests records them.
		{
			Sid:        jsii.String("ReadDeletePreviews"),
			Actions:    jsii.Strings("dynamodb:GetItem"),
			Resources:  &[]*string{d.main.TableArn()},
			Conditions: tenantKinds(dynamo.IssueKind, dynamo.IssueKeyKind, dynamo.CommentRefKind),
		},
		{
			Sid:        jsii.String("ReadCommentPreviews"),
			Actions:    jsii.Strings("dynamodb:BatchGetItem"),
			Resources:  &[]*string{d.main.TableArn()},
			Conditions: tenantKinds(dynamo.IssueKind),
		},
		// GetApproval, and DecideApproval's conditional update (and its read of the
		// item back after a refused condition). PutApproval and SpendApproval are
		// the MCP function's.
		{
			Sid:        jsii.String("DecideApprovals"),
			Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:UpdateItem"),
			Resources:  &[]*string{d.main.TableArn()},
			Conditions: tenantKinds(dynamo.ApprovalKind),
		},
		{
			Sid:       jsii.String("ReadUpstreamClientSecret"),
			Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
			Resources: &[]*string{upstreamSecretARN},
		},
	} {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(st))
	}
	role.AddToPrincipalPolicy(memberRecordsReadStatement(d))
	role.AddToPrincipalPolicy(putAuditRecord(p))
}

// newCognito creates the default upstream identity provider: a user pool that only an
// administrator adds people to, a confidential app client for the authorization
// server, and a managed-login domain. Decisions and their sources: docs/deploy.md,
// "Sign-in with Amazon Cognito".
func newCognito(scope constructs.Construct, cfg config.Config, issuer *string, a *api) *cognitoPool {
	stack := awscdk.Stack_Of(scope)
	c := &cognitoPool{}
	plus := cfg.CognitoFeaturePlan == config.CognitoPlus
	props := &awscognito.UserPoolProps{
		// People are invited (admin-create-user), never sign themselves up: a sign-up
		// would not make anyone a member, and an open pool invites abuse.
		SelfSignUpEnabled: jsii.Bool(false),
		// The authorization server maps a person to members by verified e-mail, so the
		// e-mail is the user name, is required, and is verified.
		SignInAliases:       &awscognito.SignInAliases{Email: jsii.Bool(true)},
		SignInCaseSensitive: jsii.Bool(false),
		AutoVerify:          &awscognito.AutoVerifiedAttrs{Email: jsii.Bool(true)},
		KeepOriginal:        &awscognito.KeepOriginalAttrs{Email: jsii.Bool(true)},
		StandardAttributes: &awscognito.StandardAttributes{
			Email:    &awscognito.StandardAttribute{Required: jsii.Bool(true), Mutable: jsii.Bool(true)},
			Fullname: &awscognito.StandardAttribute{Required: jsii.Bool(false), Mutable: jsii.Bool(true)},
		},
		// An MCP connector acts on issues with the person's rights, destructive tools
		// included: a password alone is not enough. TOTP only: SMS needs an SNS role
		// and sandbox exit and is phishable; e-mail codes need SES.
		Mfa:             awscognito.Mfa_REQUIRED,
		MfaSecondFactor: &awscognito.MfaSecondFactor{Otp: jsii.Bool(true), Sms: jsii.Bool(false)},
		PasswordPolicy: &awscognito.PasswordPolicy{
			MinLength:            jsii.Number(12),
			RequireLowercase:     jsii.Bool(true),
			RequireUppercase:     jsii.Bool(true),
			RequireDigits:        jsii.Bool(true),
			RequireSymbols:       jsii.Bool(true),
			TempPasswordValidity: awscdk.Duration_Days(jsii.Number(3)),
		},
		AccountRecovery: awscognito.AccountRecovery_EMAIL_ONLY,
		UserInvitation: &awscognito.UserInvitationConfig{
			EmailSubject: jsii.String("Your AACWorkflow MCP sign-in"),
			EmailBody: jsii.String("You can now connect AI assistants to AACWorkflow. Add this connector URL in " +
				"Claude or ChatGPT: " + *issuer + "/mcp\n\nWhen it asks you to sign in, use " +
				"{username} and the temporary password {####}. You will choose a new password and set up " +
				"an authenticator app. The temporary password expires in 3 days."),
		},
		// People are data: `cdk destroy` must not delete them.
		DeletionProtection: jsii.Bool(true),
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	}
	if plus {
		// Threat protection (Plus plan): sign-ins with credentials known to be leaked
		// are blocked, and so are the ones Cognito rates high risk (below).
		props.FeaturePlan = awscognito.FeaturePlan_PLUS
		props.StandardThreatProtectionMode = awscognito.StandardThreatProtectionMode_FULL_FUNCTION
	} else {
		props.FeaturePlan = awscognito.FeaturePlan_ESSENTIALS
	}
	c.pool = awscognito.NewUserPool(scope, jsii.String("UserPool"), props)
	if !plus {
		suppress(c.pool, "COG8", "The operator chose the Essentials plan with the cognitoFeaturePlan context key "+
			"(docs/deploy.md): no threat protection, so leaked passwords are not blocked; MFA stays required.")
	}

	c.client = c.pool.AddClient(jsii.String("AuthorizationServer"), &awscognito.UserPoolClientOptions{
		UserPoolClientName: jsii.String("aacmcp authorization server"),
		// Confidential: only the authorization server function, which reads the secret
		// from Secrets Manager, can redeem a code.
		GenerateSecret: jsii.Bool(true),
		OAuth: &awscognito.OAuthSettings{
			Flows:        &awscognito.OAuthFlows{AuthorizationCodeGrant: jsii.Bool(true)},
			Scopes:       &[]awscognito.OAuthScope{awscognito.OAuthScope_OPENID(), awscognito.OAuthScope_EMAIL(), awscognito.OAuthScope_PROFILE()},
			CallbackUrls: jsii.Strings(*issuer + callbackPath),
		},
		SupportedIdentityProviders: &[]awscognito.UserPoolClientIdentityProvider{awscognito.UserPoolClientIdentityProvider_COGNITO()},
		PreventUserExistenceErrors: jsii.Bool(true),
		EnableTokenRevocation:      jsii.Bool(true),
		// The server reads the ID token once, at the callback, and keeps none of
		// Cognito's tokens: the shortest lifetimes Cognito allows.
		IdTokenValidity:      awscdk.Duration_Minutes(jsii.Number(5)),
		AccessTokenValidity:  awscdk.Duration_Minutes(jsii.Number(5)),
		RefreshTokenValidity: awscdk.Duration_Minutes(jsii.Number(60)),
		// A first sign-in sets a password and enrols an authenticator app.
		AuthSessionValidity: awscdk.Duration_Minutes(jsii.Number(10)),
		ReadAttributes: awscognito.NewClientAttributes().WithStandardAttributes(&awscognito.StandardAttributesMask{
			Email: jsii.Bool(true), EmailVerified: jsii.Bool(true), Fullname: jsii.Bool(true),
		}),
		// The e-mail is the identity the server trusts: only an administrator changes it.
		WriteAttributes: awscognito.NewClientAttributes().WithStandardAttributes(&awscognito.StandardAttributesMask{
			Fullname: jsii.Bool(true),
		}),
	})

	prefix := cfg.CognitoDomainPrefix
	var domainPrefix *string
	if prefix != "" {
		domainPrefix = jsii.String(prefix)
	} else {
		domainPrefix = defaultDomainPrefix(stack)
	}
	c.domain = c.pool.AddDomain(jsii.String("ManagedLogin"), &awscognito.UserPoolDomainOptions{
		CognitoDomain:       &awscognito.CognitoDomainOptions{DomainPrefix: domainPrefix},
		ManagedLoginVersion: awscognito.ManagedLoginVersion_NEWER_MANAGED_LOGIN,
	})
	// Managed login serves an app client only once the client has a style; Cognito's
	// own is enough.
	awscognito.NewCfnManagedLoginBranding(scope, jsii.String("ManagedLoginBranding"), &awscognito.CfnManagedLoginBrandingProps{
		UserPoolId:               c.pool.UserPoolId(),
		ClientId:                 c.client.UserPoolClientId(),
		UseCognitoProvidedValues: jsii.Bool(true),
	})

	if plus {
		// Compromised credentials: block. Account takeover: MFA is already required of
		// everyone, so only a high-risk sign-in changes anything, and it is refused
		// even with a correct code (a relayed phishing page). No notification e-mails:
		// they need SES.
		action := func(a string) *awscognito.CfnUserPoolRiskConfigurationAttachment_AccountTakeoverActionTypeProperty {
			return &awscognito.CfnUserPoolRiskConfigurationAttachment_AccountTakeoverActionTypeProperty{EventAction: jsii.String(a), Notify: jsii.Bool(false)}
		}
		awscognito.NewCfnUserPoolRiskConfigurationAttachment(scope, jsii.String("UserPoolRiskConfiguration"), &awscognito.CfnUserPoolRiskConfigurationAttachmentProps{
			UserPoolId: c.pool.UserPoolId(),
			ClientId:   jsii.String("ALL"),
			CompromisedCredentialsRiskConfiguration: &awscognito.CfnUserPoolRiskConfigurationAttachment_CompromisedCredentialsRiskConfigurationTypeProperty{
				Actions: &awscognito.CfnUserPoolRiskConfigurationAttachment_CompromisedCredentialsActionsTypeProperty{EventAction: jsii.String("BLOCK")},
			},
			AccountTakeoverRiskConfiguration: &awscognito.CfnUserPoolRiskConfigurationAttachment_AccountTakeoverRiskConfigurationTypeProperty{
				Actions: &awscognito.CfnUserPoolRiskConfigurationAttachment_AccountTakeoverActionsTypeProperty{
					LowAction:    action("MFA_IF_CONFIGURED"),
					MediumAction: action("MFA_IF_CONFIGURED"),
					HighAction:   action("BLOCK"),
				},
			},
		})
	}

	// The client secret goes from CloudFormation's own ClientSecret attribute straight
	// into the secret: the template holds only the Fn::GetAtt, and no custom resource
	// (UserPoolClient.userPoolClientSecret's DescribeUserPoolClient call) is needed.
	cfnClient := c.client.Node().DefaultChild().(awscognito.CfnUserPoolClient)
	c.secret = awssecretsmanager.NewSecret(scope, jsii.String("CognitoClientSecret"), &awssecretsmanager.SecretProps{
		Description:       jsii.String("Client secret of the Cognito app client the aacmcp authorization server signs people in with"),
		SecretStringValue: awscdk.SecretValue_ResourceAttribute(cfnClient.AttrClientSecret()),
	})
	suppress(c.secret, "SMG4", "The value is the Cognito app client's secret, which Cognito generates; rotating it "+
		"means adding a client secret in Cognito and updating this secret (docs/deploy.md), which no rotation "+
		"Lambda can do without also holding Cognito admin rights.")
	return c
}

// defaultDomainPrefix is "<stack name>-<first 8 hex digits of the stack's id>": Cognito
// domain prefixes are global per region, so the stack name alone would clash across
// accounts; the stack id's UUID is fixed for the stack's life and, unlike the account
// id, says nothing about the account.
func defaultDomainPrefix(stack awscdk.Stack) *string {
	name := domainLabel(*stack.StackName())
	uuid := awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), stack.StackId(), nil))
	short := awscdk.Fn_Select(jsii.Number(0), awscdk.Fn_Split(jsii.String("-"), uuid, nil))
	return awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String(name + "-"), short})
}

var nonLabel = regexp.MustCompile(`[^a-z0-9]+`)

// domainLabel turns a stack name into the first part of a Cognito domain prefix:
// lower-case letters, digits and single hyphens, without the words Cognito refuses,
// short enough to leave room for "-" and eight hex digits in 63 characters.
func domainLabel(stackName string) string {
	s := strings.ToLower(stackName)
	for _, w := range config.ReservedInDomainPrefix {
		s = strings.ReplaceAll(s, w, "")
	}
	s = strings.Trim(nonLabel.ReplaceAllString(s, "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	if s == "" {
		s = "aacmcp"
	}
	return s
}

// newDomainRecord points the custom domain at the API in the configured Route 53 zone.
func newDomainRecord(scope constructs.Construct, cfg config.Config, a *api) {
	zone := awsroute53.HostedZone_FromHostedZoneAttributes(scope, jsii.String("HostedZone"), &awsroute53.HostedZoneAttributes{
		HostedZoneId: jsii.String(cfg.HostedZoneID),
		ZoneName:     jsii.String(cfg.HostedZoneName),
	})
	awsroute53.NewARecord(scope, jsii.String("DomainAlias"), &awsroute53.ARecordProps{
		Zone:       zone,
		RecordName: jsii.String(cfg.DomainName),
		Target:     domainAliasTarget(a),
		Comment:    jsii.String("aacmcp API custom domain"),
	})
	if a.front != nil {
		// The distribution answers on IPv6 too (EnableIpv6): without the AAAA alias
		// an IPv6-only client could not reach the custom domain. The regional API's
		// custom domain is IPv4 only, so the bare API gets none.
		awsroute53.NewAaaaRecord(scope, jsii.String("DomainAliasIpv6"), &awsroute53.AaaaRecordProps{
			Zone:       zone,
			RecordName: jsii.String(cfg.DomainName),
			Target:     domainAliasTarget(a),
			Comment:    jsii.String("aacmcp API custom domain (IPv6)"),
		})
	}
}

// domainAliasTarget is what the custom domain points at: the distribution, or the
// API's regional custom domain without the front door.
func domainAliasTarget(a *api) awsroute53.RecordTarget {
	if a.front != nil {
		return awsroute53.RecordTarget_FromAlias(awsroute53targets.NewCloudFrontTarget(a.front.dist))
	}
	return awsroute53.RecordTarget_FromAlias(awsroute53targets.NewApiGateway(a.rest))
}

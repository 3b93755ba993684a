// Package lambdatest is the shared fixture of the Lambda tests: dynalite and
// kinesalite on loopback, the two tables and the audit stream, and a seeded
// workspace with members, an agent, issues, comments and tokens whose secrets are
// fixed so that checked-in sample events can carry them.
//
// The secrets below are test fixtures for the emulators only; they exist in no
// deployment.
package lambdatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/lambdaenv"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// Fixture identities.
const (
	Workspace  = "ws_golden"
	AdminUser  = "u_admin"
	MemberUser = "u_member"
	ViewerUser = "u_viewer"
	Agent      = "agent_builder"

	// Issues: IssueMain is read, updated, commented, assigned and triggered;
	// IssueDelete is deleted; CommentDelete (on IssueMain) is deleted.
	IssueMain     = "5a0c3c52-7a51-4d5b-9a1e-2f0d3c4b5a61"
	IssueDelete   = "7b1d4d63-8b62-4e6c-8b2f-3a1e4d5c6b72"
	CommentKeep   = "01JAAAAAAAAAAAAAAAAAAAAAA1"
	CommentDelete = "01JAAAAAAAAAAAAAAAAAAAAAA2"
)

// Token secrets (format-valid, with checksum) and their public ids.
const (
	SecretAdmin   = "aac_2zNg9WFniMzfJuStBUMamlOUIbBkOOBH1f41yE"
	SecretViewer  = "aac_Z5Frqf4XG79Lv34TDWWyzAcEhznlKPMY0Hiloo"
	SecretExpired = "aac_0CUKFUh5AaRSIPl01HYRuopdd28VO7lM0en17s"
	SecretRevoked = "aac_yLYmZ1XritrI2d9gjqZtLeuCsvD3wb0g23lCy9"
	// SecretUnknown is well-formed but stored nowhere.
	SecretUnknown = "aac_KdARdWsAWYxzHz4GR1veZdK9uD3MV9px4ZzVeu"

	TokenAdmin   = "tok_admin"
	TokenViewer  = "tok_viewer"
	TokenExpired = "tok_expired"
	TokenRevoked = "tok_revoked"
)

// Stream is the audit stream's name inside kinesalite.
const Stream = "aacmcp-audit"

// Env is a running, seeded fixture.
type Env struct {
	Dynamo, Kinesis *emulator.Server
	DB              *dynamodb.Client
	KC              *kinesis.Client
	// Table and TokensTable name the current seeded tables (see Fresh).
	Table, TokensTable string
	Store              *dynamo.Store
	tables             int
}

// Start starts both emulators (call it once per test binary, from TestMain), creates
// the tables and the stream, and seeds the fixture. stop kills both emulators.
func Start(ctx context.Context) (*Env, func(), error) {
	ddb, err := emulator.Start(ctx, emulator.Dynalite)
	if err != nil {
		return nil, nil, err
	}
	kin, err := emulator.Start(ctx, emulator.Kinesalite)
	if err != nil {
		ddb.Stop()
		return nil, nil, err
	}
	stop := func() { ddb.Stop(); kin.Stop() }
	e := &Env{
		Dynamo:  ddb,
		Kinesis: kin,
		DB:      dynamodb.NewFromConfig(ddb.AWSConfig()),
		KC:      kinesis.NewFromConfig(kin.AWSConfig()),
	}
	if err := e.setup(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	return e, stop, nil
}

// Main is a TestMain that starts the fixture (within two minutes), sets *env to
// it, runs the tests and stops the emulators. A fixture that does not start ends
// the test binary with status 1.
func Main(m *testing.M, env **Env) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e, stop, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "emulators:", err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	stop()
	os.Exit(code)
}

func (e *Env) setup(ctx context.Context) error {
	if _, err := e.KC.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(Stream), ShardCount: aws.Int32(1)}); err != nil {
		return fmt.Errorf("create stream: %w", err)
	}
	w := kinesis.NewStreamExistsWaiter(e.KC, func(o *kinesis.StreamExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
	if err := w.Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(Stream)}, 30*time.Second); err != nil {
		return fmt.Errorf("wait for stream: %w", err)
	}
	return e.Fresh(ctx)
}

// Fresh creates a new pair of tables, seeds them and makes them current, so a test
// that changes data (or runs twice with -count) starts from the same state.
func (e *Env) Fresh(ctx context.Context) error {
	e.tables++
	e.Table = fmt.Sprintf("aacmcp-main-%d", e.tables)
	e.TokensTable = fmt.Sprintf("aacmcp-tokens-%d", e.tables)
	err := dynamo.CreateTables(ctx, e.DB, e.Table, e.TokensTable)
	var warn *dynamo.TTLWarning
	if err != nil && !errors.As(err, &warn) {
		return err
	}
	e.Store = dynamo.New(e.DB, e.Table, e.TokensTable)
	return Seed(ctx, e.Store)
}

// Seed writes the fixture's workspace, members, agent, issues, comments and tokens.
func Seed(ctx context.Context, st *dynamo.Store) error {
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	if _, err := st.CreateWorkspace(ctx, store.Workspace{ID: Workspace, Key: "AAC", Name: "Golden", CreatedAt: t0}); err != nil {
		return err
	}
	for user, role := range map[string]store.Role{AdminUser: store.RoleAdmin, MemberUser: store.RoleMember, ViewerUser: store.RoleViewer} {
		if _, err := st.UpdateMember(ctx, store.Member{WorkspaceID: Workspace, UserID: user, Role: role, CreatedAt: t0}); err != nil {
			return err
		}
	}
	if _, err := st.CreateAgent(ctx, store.Agent{WorkspaceID: Workspace, ID: Agent, Name: "Builder", CreatedAt: t0}); err != nil {
		return err
	}
	for _, in := range []store.NewIssue{
		{ID: IssueMain, Title: "Login page times out", Description: "Users see a spinner for 30 s.", Status: "open", Priority: "high", Labels: []string{"bug"}, CreatedBy: MemberUser, CreatedAt: t0},
		{ID: IssueDelete, Title: "Duplicate of login timeout", Status: "open", Priority: "low", Labels: []string{}, CreatedBy: MemberUser, CreatedAt: t0.Add(time.Minute)},
	} {
		if _, err := st.CreateIssue(ctx, Workspace, in); err != nil {
			return err
		}
	}
	for _, c := range []store.NewComment{
		{ID: CommentKeep, Author: MemberUser, Body: "Reproduced on staging.", CreatedAt: t0.Add(2 * time.Minute)},
		{ID: CommentDelete, Author: MemberUser, Body: "Never mind.", CreatedAt: t0.Add(3 * time.Minute)},
	} {
		if _, err := st.CreateComment(ctx, Workspace, IssueMain, c); err != nil {
			return err
		}
	}
	far := time.Now().Add(300 * 24 * time.Hour).UTC().Truncate(time.Second)
	revokedAt := t0.Add(time.Hour)
	for _, tr := range []auth.TokenRecord{
		{Hash: auth.Hash(SecretAdmin), TokenID: TokenAdmin, Name: "admin", WorkspaceID: Workspace, UserID: AdminUser, Scopes: auth.AllScopes, CreatedAt: t0, ExpiresAt: far},
		{Hash: auth.Hash(SecretViewer), TokenID: TokenViewer, Name: "viewer", WorkspaceID: Workspace, UserID: ViewerUser, Scopes: []string{"issues:read"}, CreatedAt: t0, ExpiresAt: far},
		{Hash: auth.Hash(SecretExpired), TokenID: TokenExpired, Name: "expired", WorkspaceID: Workspace, UserID: AdminUser, Scopes: auth.AllScopes, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{Hash: auth.Hash(SecretRevoked), TokenID: TokenRevoked, Name: "revoked", WorkspaceID: Workspace, UserID: AdminUser, Scopes: auth.AllScopes, CreatedAt: t0, ExpiresAt: far},
	} {
		if err := st.CreateToken(ctx, tr); err != nil {
			return err
		}
	}
	if _, err := st.UpdateTokenRevoked(ctx, TokenRevoked, revokedAt); err != nil {
		return err
	}
	// The writes a store makes after answering (a comment's lookup marked complete,
	// guards cleared) belong to the fixture too: a test must not race them.
	return st.Drain(ctx)
}

// Config is the functions' configuration pointing at the fixture.
func (e *Env) Config() (lambdaenv.Config, error) {
	return lambdaenv.Load(e.Getenv, lambdaenv.EnvTable, lambdaenv.EnvTokensTable, lambdaenv.EnvAuditStream)
}

// Getenv is the functions' environment for the fixture.
func (e *Env) Getenv(k string) string {
	switch k {
	case lambdaenv.EnvTable:
		return e.Table
	case lambdaenv.EnvTokensTable:
		return e.TokensTable
	case lambdaenv.EnvAuditStream:
		return Stream
	case lambdaenv.EnvRateLimit:
		return "1000/m"
	case lambdaenv.EnvAuthFailLimit:
		return "1000/m"
	}
	return ""
}

// Environ is the process environment of a function binary run against the fixture
// (under the Runtime Interface Emulator).
func (e *Env) Environ() []string {
	env := []string{
		"AWS_REGION=" + emulator.Region,
		"AWS_ACCESS_KEY_ID=" + emulator.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + emulator.SecretKey,
		"AWS_ENDPOINT_URL_DYNAMODB=" + e.Dynamo.Endpoint,
		"AWS_ENDPOINT_URL_KINESIS=" + e.Kinesis.Endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.TempDir(),
		// No Secrets Manager emulator exists here for the audit HMAC key: the MCP
		// function's explicit opt-in to a per-instance key.
		mcpfn.EnvHMACKeyEphemeral + "=true",
		// Nor for the confirmation key: each function instance seals its own.
		confirm.EnvKeyEphemeral + "=true",
	}
	for _, k := range []string{lambdaenv.EnvTable, lambdaenv.EnvTokensTable, lambdaenv.EnvAuditStream, lambdaenv.EnvRateLimit, lambdaenv.EnvAuthFailLimit} {
		env = append(env, k+"="+e.Getenv(k))
	}
	return env
}

// Stream reads every record on the audit stream so far, in stream order.
func (e *Env) ReadStream(ctx context.Context) ([]audit.Record, error) {
	shards, err := e.KC.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(Stream)})
	if err != nil {
		return nil, err
	}
	var out []audit.Record
	for _, sh := range shards.Shards {
		it, err := e.KC.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
			StreamName: aws.String(Stream), ShardId: sh.ShardId, ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			return nil, err
		}
		iter := it.ShardIterator
		for iter != nil {
			res, err := e.KC.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				return nil, err
			}
			for _, r := range res.Records {
				rec, err := audit.UnmarshalLine(r.Data)
				if err != nil {
					return nil, fmt.Errorf("record %s on the stream: %w", aws.ToString(r.SequenceNumber), err)
				}
				if aws.ToString(r.PartitionKey) != rec.EventID {
					return nil, fmt.Errorf("record %s has partition key %q, want its event id", rec.EventID, aws.ToString(r.PartitionKey))
				}
				out = append(out, rec)
			}
			if len(res.Records) == 0 {
				break
			}
			iter = res.NextShardIterator
		}
	}
	return out, nil
}

// WaitStream polls the stream until pred holds for its records (records put by
// another process may land a moment later) or ctx ends.
func (e *Env) WaitStream(ctx context.Context, pred func([]audit.Record) bool) ([]audit.Record, error) {
	for {
		recs, err := e.ReadStream(ctx)
		if err == nil && pred(recs) {
			return recs, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return recs, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// SampleFiles lists the *.json files (not goldens) of a directory, sorted.
func SampleFiles(dir string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range all {
		if filepath.Ext(f[:len(f)-len(".json")]) != ".golden" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out, nil
}

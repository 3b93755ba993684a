package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/harness"
)

// TestSDKClientThroughGateway is issue 3 item 9: the same SDK client script through
// `aacmcp gateway` (the authorizer and MCP function code in process, as API Gateway
// would invoke them) against dynalite and kinesalite; the audit records, read tools
// included, are read back from the Kinesis stream.
func TestSDKClientThroughGateway(t *testing.T) {
	bin := harness.Binary(t)
	ddb := emulator.StartT(t, emulator.Dynalite)
	kin := emulator.StartT(t, emulator.Kinesalite)
	ctx := context.Background()
	const stream = "aacmcp-audit"

	kc := kinesis.NewFromConfig(kin.AWSConfig())
	if err := harness.CreateStream(ctx, kc, stream); err != nil {
		t.Fatal(err)
	}

	awsEnv := harness.AWSEnv()
	backend := []string{"--backend", "dynamodb", "--table", "main", "--tokens-table", "tokens", "--endpoint-url", ddb.Endpoint}
	data := t.TempDir() // no SQLite and no audit files may appear here
	cli := cliRunner(t, bin, awsEnv, append(backend, "--data", data)...)

	cli("init")
	cli("workspace", "create", "--id", "demo", "--key", "AAC")
	cli("member", "add", "--workspace", "demo", "--user", "dev", "--role", "admin")
	cli("agent", "add", "--workspace", "demo", "--id", "triage-bot")
	secrets := map[string]string{}
	for label, spec := range map[string]struct{ name, scopes string }{
		"FULL":     {"dev-full", "issues:read,issues:write,comments:read,comments:write,dashboard:read,agents:write,autopilot:run"},
		"READONLY": {"dev-read-only", "issues:read,comments:read,dashboard:read"},
	} {
		var tok createdToken
		if err := json.Unmarshal(cli("token", "create", "--workspace", "demo", "--user", "dev", "--scopes", spec.scopes, "--name", spec.name, "--json"), &tok); err != nil {
			t.Fatal(err)
		}
		secrets[label] = tok.Token
	}
	ids := principals(t, cli, secrets)

	gw := startGateway(t, bin, awsEnv, append(backend,
		"--data", data, "--audit-stream", stream, "--kinesis-endpoint-url", kin.Endpoint,
		// The script makes hundreds of calls in seconds; the production defaults
		// (120/m per token and tool, 20 failures/m per IP) are for people.
		"--rate-limit", "100000/m", "--auth-fail-limit", "1000/m",
		// The script checks the 403 challenges the function writes: through the front
		// door, as clients of the deployed stack must get them. The bare API Gateway
		// behaviour is TestDiscoveryThroughStagedGateway's.
		"--front-door")...)

	exp := runScript(t, "client.mjs", gw, secrets, []string{"AACMCP_E2E_SEEDED=0"})

	recs := readStream(t, kc, stream)
	checkAudit(t, exp, recs, ids, workspaces(ids))
	t.Logf("%d calls made through the gateway, %d records read from Kinesis", len(exp), len(recs))
}

// startGateway runs `aacmcp gateway` on a free port and returns its /mcp URL; the
// gateway must exit cleanly on SIGTERM at the end of the test.
func startGateway(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	gw, err := harness.Gateway(bin, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		switch err := gw.Terminate(20 * time.Second); {
		case errors.Is(err, harness.ErrTimeout):
			t.Errorf("gateway did not stop within 20s of SIGTERM")
		case err != nil:
			t.Errorf("gateway did not exit cleanly on SIGTERM: %v\nstderr: %s", err, gw.Stderr())
		}
	})
	return gw.MCPURL
}

// readStream returns every record on the stream, from every shard.
func readStream(t *testing.T, kc *kinesis.Client, stream string) []audit.Record {
	t.Helper()
	ctx := context.Background()
	shards, err := kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatal(err)
	}
	var recs []audit.Record
	for _, sh := range shards.Shards {
		it, err := kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{
			StreamName: aws.String(stream), ShardId: sh.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			out, err := kc.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range out.Records {
				rec, err := audit.UnmarshalLine(r.Data)
				if err != nil {
					t.Errorf("a stream record is not an audit record: %v: %s", err, strings.TrimSpace(string(r.Data)))
					continue
				}
				if aws.ToString(r.PartitionKey) != rec.EventID {
					t.Errorf("partition key %q, want the event id %q", aws.ToString(r.PartitionKey), rec.EventID)
				}
				recs = append(recs, rec)
			}
			if len(out.Records) == 0 && aws.ToInt64(out.MillisBehindLatest) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return recs
}

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/test/emulator"
)

// TestSDKClientThroughGateway is issue 3 item 9: the same SDK client script through
// `aacmcp gateway` (the authorizer and MCP function code in process, as API Gateway
// would invoke them) against dynalite and kinesalite; the audit records, read tools
// included, are read back from the Kinesis stream.
func TestSDKClientThroughGateway(t *testing.T) {
	bin := aacmcpBinary(t)
	ddb := emulator.StartT(t, emulator.Dynalite)
	kin := emulator.StartT(t, emulator.Kinesalite)
	ctx := context.Background()
	const stream = "aacmcp-audit"

	kc := kinesis.NewFromConfig(kin.AWSConfig())
	if _, err := kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	if err := kinesis.NewStreamExistsWaiter(kc).Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(stream)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	awsEnv := []string{
		"AWS_ACCESS_KEY_ID=" + emulator.AccessKey, "AWS_SECRET_ACCESS_KEY=" + emulator.SecretKey,
		"AWS_REGION=" + emulator.Region, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true",
	}
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
		"--rate-limit", "100000/m", "--auth-fail-limit", "1000/m")...)

	exp := runScript(t, "client.mjs", gw, secrets, []string{"AACMCP_E2E_SEEDED=0"})

	recs := readStream(t, kc, stream)
	checkAudit(t, exp, recs, ids, workspaces(ids))
	t.Logf("%d calls made through the gateway, %d records read from Kinesis", len(exp), len(recs))
}

var gatewayLine = regexp.MustCompile(`^aacmcp gateway serving (http://127\.0\.0\.1:\d+/mcp)`)

// startGateway runs `aacmcp gateway` on a free port and returns its /mcp URL.
func startGateway(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"gateway", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := gatewayLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("gateway did not exit cleanly on SIGTERM: %v\nstderr: %s", err, stderr)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("gateway did not stop within 20s of SIGTERM")
		}
	})
	select {
	case u := <-urls:
		return u
	case err := <-exited:
		t.Fatalf("gateway exited before listening: %v\nstderr: %s", err, stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("gateway did not listen within 60s\nstderr: %s", stderr)
	}
	return ""
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

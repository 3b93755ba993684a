package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/aacworkflow/aacmcp/test/emulator"
)

// Names of the gateway fixture's AWS resources (in the emulators only).
const (
	gatewayTable       = "aacmcp-clients-main"
	gatewayTokensTable = "aacmcp-clients-tokens"
	gatewayStream      = "aacmcp-clients-audit"
)

var (
	gatewayOnce sync.Once
	gatewaySrv  *Gateway
	gatewayErr  error
)

// Gateway is a running `aacmcp gateway`: the authorizer and MCP function code
// behind the local API Gateway, on dynalite and kinesalite, with workspace demo
// (issue keys AAC-n) whose admin is user dev.
type Gateway struct {
	// Base is http://127.0.0.1:PORT; MCPURL is Base + "/mcp".
	Base, MCPURL string
	// Full is a token of dev holding every scope.
	Full string
	// Stream is the Kinesis stream the audit records go to; Kinesis reaches it.
	Stream  string
	Kinesis *kinesis.Client

	bin     string
	backend []string
	awsEnv  []string
	data    string
	stderr  *lockedBuffer
}

// ServeGateway returns the package's shared gateway, starting the emulators, the
// tables, the stream and the gateway on first use.
func ServeGateway(t testing.TB) *Gateway {
	t.Helper()
	bin := Binary(t)
	gatewayOnce.Do(func() { gatewaySrv, gatewayErr = startGateway(bin) })
	if gatewayErr != nil {
		t.Fatal(gatewayErr)
	}
	return gatewaySrv
}

var gatewayLine = regexp.MustCompile(`^aacmcp gateway serving (http://127\.0\.0\.1:\d+)/mcp`)

func startGateway(bin string) (*Gateway, error) {
	ctx := context.Background()
	ddb, err := emulator.Start(ctx, emulator.Dynalite)
	if err != nil {
		return nil, err
	}
	atExit(ddb.Stop)
	kin, err := emulator.Start(ctx, emulator.Kinesalite)
	if err != nil {
		return nil, err
	}
	atExit(kin.Stop)

	kc := kinesis.NewFromConfig(kin.AWSConfig())
	if _, err := kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(gatewayStream), ShardCount: aws.Int32(1)}); err != nil {
		return nil, fmt.Errorf("create stream: %w", err)
	}
	w := kinesis.NewStreamExistsWaiter(kc, func(o *kinesis.StreamExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
	if err := w.Wait(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(gatewayStream)}, 30*time.Second); err != nil {
		return nil, fmt.Errorf("wait for stream: %w", err)
	}

	data, err := os.MkdirTemp("", "aacmcp-clients-gateway-")
	if err != nil {
		return nil, err
	}
	atExit(func() { _ = os.RemoveAll(data) })
	g := &Gateway{
		Stream:  gatewayStream,
		Kinesis: kc,
		bin:     bin,
		backend: []string{"--backend", "dynamodb", "--table", gatewayTable, "--tokens-table", gatewayTokensTable, "--endpoint-url", ddb.Endpoint},
		// Static emulator credentials, and nothing from the machine's AWS setup.
		awsEnv: []string{
			"AWS_ACCESS_KEY_ID=" + emulator.AccessKey, "AWS_SECRET_ACCESS_KEY=" + emulator.SecretKey,
			"AWS_REGION=" + emulator.Region, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
			"AWS_EC2_METADATA_DISABLED=true",
		},
		data:   data,
		stderr: &lockedBuffer{},
	}
	steps := [][]string{
		{"init"},
		{"workspace", "create", "--id", DevWorkspace, "--key", "AAC", "--name", "Demo"},
		{"member", "add", "--workspace", DevWorkspace, "--user", DevUser, "--role", "admin"},
	}
	for _, s := range steps {
		if _, err := g.cli(s...); err != nil {
			return nil, err
		}
	}
	if g.Full, err = g.token("clients-full", "issues:read", "issues:write", "comments:read", "comments:write", "dashboard:read", "agents:write", "autopilot:run"); err != nil {
		return nil, err
	}

	cmd := exec.Command(bin, append(append([]string{"gateway", "--addr", "127.0.0.1:0"}, g.backend...),
		"--data", data, "--audit-stream", gatewayStream, "--kinesis-endpoint-url", kin.Endpoint)...)
	cmd.Env = append(CleanEnv(), g.awsEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = g.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	atExit(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
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
	select {
	case g.Base = <-urls:
	case <-exited:
		return nil, fmt.Errorf("aacmcp gateway exited before listening\nstderr: %s", g.stderr)
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("aacmcp gateway did not listen within 60s\nstderr: %s", g.stderr)
	}
	g.MCPURL = g.Base + "/mcp"
	// An issue to read, filed the way a custom client would: POST /tools/{name}.
	if err := g.seedIssue(); err != nil {
		return nil, err
	}
	return g, nil
}

// Logs is the gateway's stderr so far, for failure messages.
func (g *Gateway) Logs() string { return g.stderr.String() }

// Token creates, through the CLI, a token of dev holding exactly scopes.
func (g *Gateway) Token(t testing.TB, name string, scopes ...string) string {
	t.Helper()
	tok, err := g.token(name, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (g *Gateway) token(name string, scopes ...string) (string, error) {
	if len(scopes) == 0 {
		return "", errors.New("harness: a token needs at least one scope")
	}
	out, err := g.cli("token", "create", "--workspace", DevWorkspace, "--user", DevUser,
		"--scopes", strings.Join(scopes, ","), "--ttl", "1h", "--name", name, "--json")
	if err != nil {
		return "", err
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(out, &tok); err != nil || tok.Token == "" {
		return "", fmt.Errorf("token create --json printed %s (%v)", out, err)
	}
	return tok.Token, nil
}

// cli runs an admin command against the emulated tables.
func (g *Gateway) cli(args ...string) ([]byte, error) {
	cmd := exec.Command(g.bin, append(append(args, g.backend...), "--data", g.data)...)
	cmd.Env = append(CleanEnv(), g.awsEnv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("aacmcp %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

func (g *Gateway) seedIssue() error {
	req, err := http.NewRequest(http.MethodPost, g.Base+"/tools/create_issue", strings.NewReader(`{"title":"Seeded through the gateway"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.Full)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("seed issue through the gateway: HTTP %d %s\nstderr: %s", resp.StatusCode, body, g.stderr)
	}
	return nil
}

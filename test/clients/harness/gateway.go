package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/aacworkflow/aacmcp/test/emulator"
	base "github.com/aacworkflow/aacmcp/test/harness"
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
	data    string
	proc    *base.Proc
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

func startGateway(bin string) (*Gateway, error) {
	ctx := context.Background()
	ddb, err := emulator.Start(ctx, emulator.Dynalite)
	if err != nil {
		return nil, err
	}
	base.AtExit(ddb.Stop)
	kin, err := emulator.Start(ctx, emulator.Kinesalite)
	if err != nil {
		return nil, err
	}
	base.AtExit(kin.Stop)

	kc := kinesis.NewFromConfig(kin.AWSConfig())
	if err := base.CreateStream(ctx, kc, gatewayStream); err != nil {
		return nil, err
	}

	data, err := os.MkdirTemp("", "aacmcp-clients-gateway-")
	if err != nil {
		return nil, err
	}
	base.AtExit(func() { _ = os.RemoveAll(data) })
	g := &Gateway{
		Stream:  gatewayStream,
		Kinesis: kc,
		bin:     bin,
		backend: []string{"--backend", "dynamodb", "--table", gatewayTable, "--tokens-table", gatewayTokensTable, "--endpoint-url", ddb.Endpoint},
		data:    data,
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

	// --front-door: the clients check the function's own 403 challenge, which the
	// bare API Gateway URL remaps (test/e2e pins that failure; docs/decisions.md).
	srv, err := base.Gateway(bin, base.AWSEnv(), append(g.backend,
		"--data", data, "--audit-stream", gatewayStream, "--kinesis-endpoint-url", kin.Endpoint, "--front-door")...)
	if err != nil {
		return nil, err
	}
	base.AtExit(func() { _ = srv.Terminate(15 * time.Second) })
	g.Base, g.MCPURL, g.proc = srv.Base, srv.MCPURL, srv.Proc
	// An issue to read, filed the way a custom client would: POST /tools/{name}.
	if err := g.seedIssue(); err != nil {
		return nil, err
	}
	return g, nil
}

// Logs is the gateway's stderr so far, for failure messages.
func (g *Gateway) Logs() string { return g.proc.Stderr() }

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
	return createToken(g.cli, name, scopes)
}

// cli runs an admin command against the emulated tables.
func (g *Gateway) cli(args ...string) ([]byte, error) {
	return base.CLI(g.bin, base.AWSEnv(), append(append(args, g.backend...), "--data", g.data)...)
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
		return fmt.Errorf("seed issue through the gateway: HTTP %d %s\nstderr: %s", resp.StatusCode, body, g.Logs())
	}
	return nil
}

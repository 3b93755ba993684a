package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aacworkflow/aacmcp/bench/report"
	"github.com/aacworkflow/aacmcp/functions/mcp/mcpfn"
	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// coldStart measures, for functions/mcp and the bare mcp-go Lambda, the time from
// starting the Runtime Interface Emulator (which starts the function at its first
// invoke) to the answer of an API Gateway event carrying MCP initialize; 10 fresh
// starts each, interleaved. It also records the init duration the emulator reports
// and the stripped arm64 binary sizes.
func (b *bench) coldStart(ctx context.Context) error {
	event, err := os.ReadFile(filepath.Join(b.root, "events", "apigw", "01-initialize.json"))
	if err != nil {
		return err
	}
	env := []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench",
		"AWS_EC2_METADATA_DISABLED=true",
		// initialize touches neither; unreachable endpoints make sure of it.
		"AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:9", "AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:9",
		"AACMCP_TABLE=bench-main", "AACMCP_TOKENS_TABLE=bench-tokens", "AACMCP_AUDIT_STREAM=bench-audit",
		"AWS_LAMBDA_FUNCTION_TIMEOUT=30", "PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
		// No Secrets Manager here: the keys' explicit per-instance opt-ins (as the
		// emulator tests run it). Reading the secrets is a network call the bare
		// Lambda has no counterpart of.
		mcpfn.EnvHMACKeyEphemeral + "=true", confirm.EnvKeyEphemeral + "=true",
	}
	type fn struct{ name, bin string }
	// The third is the floor: bare plus the DynamoDB and Kinesis clients, which
	// splits functions/mcp's excess over bare into the SDK's share and this
	// project's own.
	fns := []fn{{"functions/mcp", b.bins.mcpLambda}, {"bare mcp-go Lambda", b.bins.bareLambda},
		{"bare + AWS SDK clients (floor)", b.bins.sdkLambda}}
	const starts = 20
	total := map[string][]float64{}
	fromInvoke := map[string][]float64{}
	inits := map[string][]float64{}
	var ratios, invokeRatios, initRatios, ownRatios, sdkRatios []float64
	for i := range starts {
		round := map[string]float64{}
		for _, f := range rotate(fns, i) {
			run, err := b.oneColdStart(ctx, f.bin, env, event)
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			total[f.name] = append(total[f.name], float64(run.total))
			fromInvoke[f.name] = append(fromInvoke[f.name], float64(run.fromInvoke))
			if run.initMS > 0 {
				inits[f.name] = append(inits[f.name], run.initMS)
				round["init "+f.name] = run.initMS
			}
			round[f.name] = float64(run.total)
			round["invoke "+f.name] = float64(run.fromInvoke)
		}
		ratios = append(ratios, round[fns[0].name]/round[fns[1].name])
		invokeRatios = append(invokeRatios, round["invoke "+fns[0].name]/round["invoke "+fns[1].name])
		ownRatios = append(ownRatios, round["invoke "+fns[0].name]/round["invoke "+fns[2].name])
		sdkRatios = append(sdkRatios, round["invoke "+fns[2].name]/round["invoke "+fns[1].name])
		if a, b := round["init "+fns[0].name], round["init "+fns[1].name]; a > 0 && b > 0 {
			initRatios = append(initRatios, a/b)
		}
	}
	sec := reportSection("3. Lambda cold start under the Runtime Interface Emulator",
		fmt.Sprintf("Each start launches a fresh `aws-lambda-rie` (the version go.mod pins) with the bootstrap "+
			"built as deployed (linux, CGO off, `-tags lambda.norpc -trimpath -ldflags \"-s -w\"`, host arch), "+
			"waits for its port, and POSTs events/apigw/01-initialize.json (API Gateway REST proxy event with MCP "+
			"initialize). The emulator starts the function process at that first invoke, so the time from the "+
			"POST to the answer is the function's own start (exec, package initializers, main's setup, the "+
			"runtime API handshake) to its first answer, without the emulator's start: the goal's figure. The "+
			"time from the emulator's process start is shown beside it. Init duration is the figure the emulator "+
			"reports for the function's init phase (process start to its first /next). %d fresh starts each, "+
			"interleaved; medians, and the median of the per-start ratios. functions/mcp compiles a tool's "+
			"input schema on that tool's first call (about 0.2 ms each), not at init. The floor is bench/cmd/barelambdasdk: "+
			"the bare Lambda plus the DynamoDB and Kinesis clients, built at start; what functions/mcp takes beyond it "+
			"is this project's own code (its packages, setup and first answer), and what the floor takes beyond bare is "+
			"the SDK's (its packages' initializers and size), which no function that uses the SDK avoids.", starts),
		[]string{"function", "first invoke to answer (median)", "all starts", "init duration (median)", "emulator start to answer (median)"})
	for _, f := range fns {
		var all []string
		for _, v := range fromInvoke[f.name] {
			all = append(all, dur(v))
		}
		initS := "not reported"
		if len(inits[f.name]) > 0 {
			initS = fmt.Sprintf("%.1f ms", report.Median(inits[f.name]))
		}
		sec.Table.Rows = append(sec.Table.Rows, []string{f.name, dur(report.Median(fromInvoke[f.name])), fmt.Sprint(all), initS, dur(report.Median(total[f.name]))})
	}
	r := report.Median(invokeRatios)
	b.addGoal("3. cold start vs bare mcp-go Lambda (first invoke to answer)", "<= 1.2x", fmt.Sprintf("%.2fx", r), r <= 1.2,
		fmt.Sprintf("bare mcp-go with only the DynamoDB and Kinesis clients linked and built (the floor, section 3) "+
			"is already %.2fx bare, and functions/mcp is %.2fx that floor: what is over the goal is the AWS SDK's "+
			"package initializers and size, which a function that must use the SDK cannot shed", report.Median(sdkRatios), report.Median(ownRatios)))
	ratioLine := fmt.Sprintf("Per-start ratios, median: first invoke to answer %.2fx (the floor over bare %.2fx, "+
		"functions/mcp over the floor %.2fx); emulator start to answer %.2fx", r, report.Median(sdkRatios), report.Median(ownRatios), report.Median(ratios))
	if len(initRatios) > 0 {
		ratioLine += fmt.Sprintf("; init duration %.2fx", report.Median(initRatios))
	}
	sec.After = append(sec.After, ratioLine+".")

	sizes := [][2]string{{"functions/mcp (arm64, stripped)", b.bins.mcpLambdaArm}, {"bare mcp-go Lambda (arm64, stripped)", b.bins.bareLambdaArm}}
	sec.After = append(sec.After, "Binary sizes, built with `GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -ldflags \"-s -w\"`:")
	tbl := "| binary | size |\n|---|---|\n"
	for i, s := range sizes {
		st, err := os.Stat(s[1])
		if err != nil {
			return err
		}
		mb := float64(st.Size()) / (1 << 20)
		tbl += fmt.Sprintf("| %s | %.1f MiB (%d bytes) |\n", s[0], mb, st.Size())
		if i == 0 {
			b.addGoal("3. functions/mcp arm64 binary, stripped", "<= 15 MB", fmt.Sprintf("%.1f MiB", mb), st.Size() <= 15_000_000, "")
		}
	}
	sec.After = append(sec.After, tbl)

	// Where the init time goes: most of the difference is package initializers that
	// run whatever main does, so the report names them.
	const initRuns = 5
	it, err := initTable(ctx, [][2]string{{fns[0].name, fns[0].bin}, {fns[1].name, fns[1].bin}, {fns[2].name, fns[2].bin}}, env, initRuns, 4)
	if err != nil {
		return err
	}
	sec.After = append(sec.After, fmt.Sprintf("Package initializers (`GODEBUG=inittrace=1`, the same binaries started "+
		"without the emulator, %d runs each, interleaved; the run with the median total shown). They run before "+
		"main whatever it does, so what they cost is paid by every cold start:", initRuns), it)
	b.rep.Sections = append(b.rep.Sections, sec)
	return nil
}

var initRE = regexp.MustCompile(`Init Duration: ([0-9.]+) ms|"?durationMs"?[:=] ?([0-9.]+)`)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// coldRun is one cold start: from the emulator's start and from the first invoke
// (the emulator starts the function then) to the answer, and the emulator's init
// duration.
type coldRun struct {
	total, fromInvoke time.Duration
	initMS            float64
}

// oneColdStart runs one fresh emulator with bin and returns the time from its start
// to the initialize answer, and the init duration it reported (0 if none).
func (b *bench) oneColdStart(ctx context.Context, bin string, env []string, event []byte) (coldRun, error) {
	port, err := freePort()
	if err != nil {
		return coldRun{}, err
	}
	apiPort, err := freePort()
	if err != nil {
		return coldRun{}, err
	}
	out := &syncBuf{}
	cmd := exec.Command(b.bins.rie,
		"--runtime-interface-emulator-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--runtime-api-address", fmt.Sprintf("127.0.0.1:%d", apiPort), bin)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return coldRun{}, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			return coldRun{}, fmt.Errorf("emulator exited: %s", out.String())
		case <-ctx.Done():
			return coldRun{}, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		if time.Since(start) > 20*time.Second {
			return coldRun{}, fmt.Errorf("emulator did not listen: %s", out.String())
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/2015-03-31/functions/function/invocations", bytes.NewReader(event))
	if err != nil {
		return coldRun{}, err
	}
	invoked := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return coldRun{}, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	sinceInvoke := time.Since(invoked)
	if err != nil {
		return coldRun{}, err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`protocolVersion`)) || !bytes.Contains(body, []byte(`"statusCode":200`)) {
		return coldRun{}, fmt.Errorf("initialize answered %d: %.400s\n%s", resp.StatusCode, body, out.String())
	}
	// The emulator prints its report lines after the response; give it a moment.
	var initMS float64
	for range 50 {
		if m := initRE.FindStringSubmatch(out.String()); m != nil {
			v := m[1]
			if v == "" {
				v = m[2]
			}
			initMS, _ = strconv.ParseFloat(v, 64)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return coldRun{total: elapsed, fromInvoke: sinceInvoke, initMS: initMS}, nil
}

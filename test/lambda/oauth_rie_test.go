package lambda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/test/emulator"
	"github.com/aacworkflow/aacmcp/test/lambda/lambdatest"
	"github.com/aacworkflow/aacmcp/test/oidcop"
)

// secretsManager answers GetSecretValue for one secret, over the AWS JSON 1.1
// protocol the SDK speaks: the oauth function reads its upstream client secret at
// init, by ARN, and there is no Secrets Manager emulator among the project's test
// tools. It serves nothing else, so any other call the function made would fail.
type secretsManager struct {
	arn, value string
	reads      atomic.Int64
}

func (s *secretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ SecretId string }
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || json.Unmarshal(body, &in) != nil || in.SecretId != s.arn {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
		return
	}
	s.reads.Add(1)
	_ = json.NewEncoder(w).Encode(map[string]any{"ARN": s.arn, "Name": "oidc", "SecretString": s.value, "VersionId": "v1"})
}

// TestOAuthFunctionUnderRIE is issue 13's "under the Lambda Runtime Interface
// Emulator" for the authorization server: the functions/oauth bootstrap, built as
// deployed and configured as the stack configures it (an upstream OpenID provider,
// test/oidcop, whose client secret it reads from Secrets Manager by ARN at init),
// answers every sample event of events/oauth as the golden file next to it says,
// and its audit records reach the Kinesis stream.
func TestOAuthFunctionUnderRIE(t *testing.T) {
	ctx := context.Background()
	if err := env.Fresh(ctx); err != nil {
		t.Fatal(err)
	}
	op := oidcop.Start(t, "https://abc123def4.execute-api.us-east-1.amazonaws.com/prod/oauth/callback")
	sm := &secretsManager{arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:oidc-AbCdEf", value: op.ClientSecret}
	smSrv := httptest.NewServer(sm)
	t.Cleanup(smSrv.Close)
	invoke, out := runRIE(t, bins.oauth, append(env.Environ(),
		"AACMCP_OIDC_ISSUER="+op.Issuer,
		"AACMCP_OIDC_CLIENT_ID="+op.ClientID,
		"AACMCP_OIDC_CLIENT_SECRET_ARN="+sm.arn,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER="+smSrv.URL,
	))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("oauth function output:\n%s", out.String())
		}
	})

	root, err := emulator.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "events", "oauth")
	files, err := lambdatest.SampleFiles(dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample events in %s: %v", dir, err)
	}
	answers := map[string]events.APIGatewayProxyResponse{}
	requestIDs := map[string]string{} // sample -> its request id
	for _, f := range files {
		payload, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.APIGatewayProxyRequest
		if err := json.Unmarshal(payload, &ev); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		resp, err := http.Post(invoke, "application/json", bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var answer events.APIGatewayProxyResponse
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &answer) != nil || answer.StatusCode == 0 {
			t.Fatalf("%s: invoke %d %s", filepath.Base(f), resp.StatusCode, b)
		}
		answers[f], requestIDs[f] = answer, ev.RequestContext.RequestID
	}
	if sm.reads.Load() != 1 {
		t.Errorf("the upstream client secret was read %d times, want once, at init", sm.reads.Load())
	}

	// Each sample's records, by the request id its event carries. The golden files
	// say how many there are.
	want := 0
	for _, f := range files {
		// Golden files are normalised (placeholders for times and ids): only the
		// number of records is read here.
		var g struct{ Audit []json.RawMessage }
		b, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".golden.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		want += len(g.Audit)
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	recs, err := env.WaitStream(wctx, func(rs []audit.Record) bool { return len(rs) >= want })
	if err != nil {
		t.Fatalf("audit records on the stream: %v (want %d, have %d)", err, want, len(recs))
	}
	for _, f := range files {
		var mine []audit.Record
		for _, r := range recs {
			if r.RequestID == requestIDs[f] {
				mine = append(mine, r)
			}
		}
		slices.SortFunc(mine, func(a, b audit.Record) int { return strings.Compare(a.Timestamp, b.Timestamp) })
		g := lambdatest.NewOAuthGolden(answers[f], mine)
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			lambdatest.Golden(t, strings.TrimSuffix(f, ".json")+".golden.json", g)
		})
	}
}

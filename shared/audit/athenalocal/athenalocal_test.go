package athenalocal_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/athena/types"
	"github.com/aws/smithy-go"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/audit/athenalocal"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
	"github.com/aacworkflow/aacmcp/shared/audit/report"
	"github.com/aacworkflow/aacmcp/shared/audit/report/reporttest"
)

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.n[r.Header.Get("X-Amz-Target")]++
		c.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func standIn(t *testing.T, data string) (*athena.Client, *counter) {
	t.Helper()
	e, err := query.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	s := athenalocal.New(e, athenalocal.Config{WorkGroup: "aacmcp-audit", Database: "aacmcp_audit"})
	c := &counter{n: map[string]int{}}
	srv := httptest.NewServer(c.wrap(s))
	t.Cleanup(func() { srv.Close(); s.Close(); e.Close() })
	client := athena.New(athena.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
	})
	return client, c
}

// TestReportThroughStandIn: the report's queries give the same rows through the
// Athena API as on the local engine, with results read in pages of two rows.
func TestReportThroughStandIn(t *testing.T) {
	data := t.TempDir()
	reporttest.Write(t, data)
	client, calls := standIn(t, data)
	p := report.Period{From: reporttest.From, To: reporttest.To}
	var states []types.QueryExecutionState
	var mu sync.Mutex
	remote, err := report.Collect(context.Background(), report.Athena{
		Client: client, WorkGroup: "aacmcp-audit", Database: "aacmcp_audit", PageSize: 2, Poll: 10 * time.Millisecond,
		State: func(_, _ string, s types.QueryExecutionState, _ int64) {
			mu.Lock()
			states = append(states, s)
			mu.Unlock()
		},
	}, p, "athena", time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := query.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	local, err := report.Collect(context.Background(), report.Local{Engine: e}, p, "local", time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range local.Results {
		if got := remote.Results[id]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s through Athena:\n%v\nlocally:\n%v", id, got, want)
		}
	}
	// 13 + 5 + 5 + 7 + 5 + 20 data rows and a header each, two to a page.
	if n := calls.n["AmazonAthena.GetQueryResults"]; n < 30 {
		t.Errorf("%d GetQueryResults calls: the results were not paged", n)
	}
	if calls.n["AmazonAthena.StartQueryExecution"] != len(report.Sections) {
		t.Errorf("calls: %v", calls.n)
	}
	if states[len(states)-1] != types.QueryExecutionStateSucceeded {
		t.Errorf("states seen: %v", states)
	}
}

func TestStandInRefusals(t *testing.T) {
	data := t.TempDir()
	client, _ := standIn(t, data)
	ctx := context.Background()
	_, err := client.StartQueryExecution(ctx, &athena.StartQueryExecutionInput{QueryString: aws.String("SELECT 1"), WorkGroup: aws.String("other")})
	var inv *types.InvalidRequestException
	if !errors.As(err, &inv) {
		t.Errorf("unknown workgroup: %v, want InvalidRequestException", err)
	}
	a := report.Athena{Client: client, WorkGroup: "aacmcp-audit", Database: "nope", Poll: 5 * time.Millisecond}
	_, err = a.Run(ctx, mustQuery(t, "report_top_tools"), report.Period{From: reporttest.From, To: reporttest.To}.Params())
	if !errors.Is(err, report.ErrQueryFailed) || !strings.Contains(err.Error(), "SCHEMA_NOT_FOUND") {
		t.Errorf("unknown database: %v", err)
	}
	a.Database = "aacmcp_audit"
	_, err = a.Run(ctx, mustQuery(t, "report_top_tools"), []string{"'x'"})
	if !errors.Is(err, report.ErrQueryFailed) {
		t.Errorf("too few parameters: %v", err)
	}
	out, err := client.StartQueryExecution(ctx, &athena.StartQueryExecutionInput{QueryString: aws.String("SELECT 1"),
		WorkGroup: aws.String("aacmcp-audit"), QueryExecutionContext: &types.QueryExecutionContext{Database: aws.String("aacmcp_audit")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.GetQueryResults(ctx, &athena.GetQueryResultsInput{QueryExecutionId: out.QueryExecutionId, MaxResults: aws.Int32(1001)})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidRequestException" {
		t.Errorf("MaxResults 1001: %v", err)
	}
	// Unsigned requests are refused, as AWS refuses them.
	srvURL := *client.Options().BaseEndpoint
	req, _ := http.NewRequest(http.MethodPost, srvURL, strings.NewReader("{}"))
	req.Header.Set("X-Amz-Target", "AmazonAthena.GetQueryExecution")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Amzn-ErrorType") != "MissingAuthenticationTokenException" {
		t.Errorf("unsigned request: %d %s", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
	}
}

func mustQuery(t *testing.T, name string) queries.Query {
	t.Helper()
	q, err := queries.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

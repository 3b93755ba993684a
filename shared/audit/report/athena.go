package report

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/athena/types"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
)

// AthenaAPI is the part of the Athena client the report uses.
type AthenaAPI interface {
	StartQueryExecution(context.Context, *athena.StartQueryExecutionInput, ...func(*athena.Options)) (*athena.StartQueryExecutionOutput, error)
	GetQueryExecution(context.Context, *athena.GetQueryExecutionInput, ...func(*athena.Options)) (*athena.GetQueryExecutionOutput, error)
	GetQueryResults(context.Context, *athena.GetQueryResultsInput, ...func(*athena.Options)) (*athena.GetQueryResultsOutput, error)
	StopQueryExecution(context.Context, *athena.StopQueryExecutionInput, ...func(*athena.Options)) (*athena.StopQueryExecutionOutput, error)
}

// Athena runs the report queries in an Athena workgroup. The saved query's text
// goes as it is, with the period as ExecutionParameters, so Athena binds the same
// parameters into the same SQL that Local binds for DuckDB.
type Athena struct {
	Client    AthenaAPI
	WorkGroup string
	Database  string
	// OutputLocation is where results go (s3://...). Empty leaves it to the
	// workgroup, which the stack's workgroup enforces anyway.
	OutputLocation string
	// PageSize is GetQueryResults' MaxResults (Athena's maximum, 1000, when 0).
	PageSize int32
	// Poll is the wait between GetQueryExecution calls (500 ms when 0).
	Poll time.Duration
	// State hears every state a query is seen in, with its scanned bytes so far.
	State func(name, id string, state types.QueryExecutionState, scanned int64)
}

// ErrQueryFailed is an Athena query that ended FAILED or CANCELLED.
var ErrQueryFailed = errors.New("athena query did not succeed")

// Run starts the query, waits for it, and reads every page of its results.
func (a Athena) Run(ctx context.Context, q queries.Query, params []string) (*query.Result, error) {
	in := &athena.StartQueryExecutionInput{
		QueryString:           aws.String(q.SQL),
		ExecutionParameters:   params,
		QueryExecutionContext: &types.QueryExecutionContext{Database: aws.String(a.Database)},
		WorkGroup:             aws.String(a.WorkGroup),
	}
	if a.OutputLocation != "" {
		in.ResultConfiguration = &types.ResultConfiguration{OutputLocation: aws.String(a.OutputLocation)}
	}
	start, err := a.Client.StartQueryExecution(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("athena StartQueryExecution: %w", err)
	}
	id := aws.ToString(start.QueryExecutionId)
	if err := a.wait(ctx, q.Name, id); err != nil {
		return nil, err
	}
	return a.results(ctx, id)
}

func (a Athena) wait(ctx context.Context, name, id string) error {
	poll := a.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	for {
		out, err := a.Client.GetQueryExecution(ctx, &athena.GetQueryExecutionInput{QueryExecutionId: aws.String(id)})
		if err != nil {
			return fmt.Errorf("athena GetQueryExecution %s: %w", id, err)
		}
		st := out.QueryExecution.Status
		var scanned int64
		if s := out.QueryExecution.Statistics; s != nil {
			scanned = aws.ToInt64(s.DataScannedInBytes)
		}
		if a.State != nil {
			a.State(name, id, st.State, scanned)
		}
		switch st.State {
		case types.QueryExecutionStateSucceeded:
			return nil
		case types.QueryExecutionStateFailed, types.QueryExecutionStateCancelled:
			return fmt.Errorf("%w: %s %s: %s", ErrQueryFailed, id, st.State, aws.ToString(st.StateChangeReason))
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			// Stop the query so an interrupted report does not go on scanning (and
			// costing) in the workgroup; the caller's context is gone, so this call
			// gets a short one of its own.
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, _ = a.Client.StopQueryExecution(stopCtx, &athena.StopQueryExecutionInput{QueryExecutionId: aws.String(id)})
			cancel()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// results reads every page. The first row of the first page is the header (column
// labels), as Athena returns it for a SELECT; the values are text, turned back into
// the types the column metadata names so that a row reads as the local engine's.
func (a Athena) results(ctx context.Context, id string) (*query.Result, error) {
	size := a.PageSize
	if size <= 0 {
		size = 1000
	}
	res := &query.Result{Rows: [][]any{}}
	var types []string
	var token *string
	first := true
	for {
		out, err := a.Client.GetQueryResults(ctx, &athena.GetQueryResultsInput{
			QueryExecutionId: aws.String(id), MaxResults: aws.Int32(size), NextToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("athena GetQueryResults %s: %w", id, err)
		}
		rows := out.ResultSet.Rows
		if first {
			for _, c := range out.ResultSet.ResultSetMetadata.ColumnInfo {
				res.Columns = append(res.Columns, aws.ToString(c.Name))
				types = append(types, strings.ToLower(aws.ToString(c.Type)))
			}
			if len(rows) > 0 {
				rows = rows[1:]
			}
			first = false
		}
		for _, r := range rows {
			if len(r.Data) != len(types) {
				return nil, apperr.Internal(fmt.Errorf("athena %s: a row of %d values for %d columns", id, len(r.Data), len(types)))
			}
			row := make([]any, len(r.Data))
			for i, d := range r.Data {
				v, err := athenaValue(d.VarCharValue, types[i])
				if err != nil {
					return nil, apperr.Internal(fmt.Errorf("athena %s column %s: %w", id, res.Columns[i], err))
				}
				row[i] = v
			}
			res.Rows = append(res.Rows, row)
		}
		if out.NextToken == nil || *out.NextToken == "" {
			return res, nil
		}
		token = out.NextToken
	}
}

// athenaValue reads one text value of an Athena column type. A NULL has no
// VarCharValue at all.
func athenaValue(s *string, typ string) (any, error) {
	if s == nil {
		return nil, nil
	}
	switch typ {
	case "tinyint", "smallint", "integer", "bigint":
		return strconv.ParseInt(*s, 10, 64)
	case "double", "float", "real":
		return strconv.ParseFloat(*s, 64)
	case "boolean":
		return strconv.ParseBool(*s)
	}
	if strings.HasPrefix(typ, "decimal") {
		return strconv.ParseFloat(*s, 64)
	}
	return *s, nil
}

// Package athenalocal is a stand-in for Amazon Athena: it speaks the Athena API
// (AWS JSON 1.1 over HTTP, X-Amz-Target: AmazonAthena.<Operation>) and runs the SQL
// on the local DuckDB engine (shared/audit/query) over the audit files of a data
// directory, the audit_log table of one database in one workgroup.
//
// What it models: StartQueryExecution (with ExecutionParameters, bound as Athena
// binds them, see query.Bind), GetQueryExecution (QUEUED, RUNNING, then SUCCEEDED
// or FAILED with a StateChangeReason), GetQueryResults with MaxResults (1-1000) and
// NextToken paging, the header row first on the first page, NULL as a value
// without VarCharValue, StopQueryExecution, an unknown workgroup
// (InvalidRequestException) or database (the query FAILS), and a request without a
// SigV4 Authorization header (refused).
//
// What it does not model (docs/cli.md, "audit report --athena"): scanned bytes and
// their cost (DataScannedInBytes is 0), the workgroup's bytes-scanned cutoff and
// concurrency limits, queueing time, result reuse, the CSV written to the output
// location (results are kept in memory and the location is only echoed), query
// result expiry, Trino behaviours DuckDB does not share beyond the session shims of
// shared/audit/query, and the signature itself (any signed request is accepted).
package athenalocal

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/aacworkflow/aacmcp/shared/audit/query"
)

// Server is the stand-in. Create it with New.
type Server struct {
	engine         *query.Engine
	workGroup      string
	database       string
	outputLocation string

	mu    sync.Mutex
	execs map[string]*execution
	wg    sync.WaitGroup
}

type execution struct {
	id, sql, database string
	submitted         time.Time
	completed         time.Time
	state             string // QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED
	reason            string
	result            *query.Result
	cancel            context.CancelFunc
}

// Config names what the stand-in serves.
type Config struct {
	WorkGroup      string // the one workgroup ("primary" when empty)
	Database       string // the one database, whose audit_log table is the data directory's
	OutputLocation string // echoed as the results' location (s3://aacmcp-local/results/ when empty)
}

// New serves the audit log of engine.
func New(engine *query.Engine, cfg Config) *Server {
	if cfg.WorkGroup == "" {
		cfg.WorkGroup = "primary"
	}
	if cfg.OutputLocation == "" {
		cfg.OutputLocation = "s3://aacmcp-local/results/"
	}
	return &Server{engine: engine, workGroup: cfg.WorkGroup, database: cfg.Database, outputLocation: cfg.OutputLocation,
		execs: map[string]*execution{}}
}

// Close waits for the queries still running.
func (s *Server) Close() {
	s.mu.Lock()
	for _, e := range s.execs {
		if e.cancel != nil {
			e.cancel()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// apiError is an Athena error answer: the SDK reads the type from __type.
type apiError struct {
	status int
	typ    string
	msg    string
}

func invalid(msg string) *apiError {
	return &apiError{http.StatusBadRequest, "InvalidRequestException", msg}
}

// ServeHTTP answers one Athena API call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "AmazonAthena.")
	var out any
	var aerr *apiError
	switch {
	case r.Method != http.MethodPost || !ok:
		aerr = &apiError{http.StatusBadRequest, "UnknownOperationException", "expected POST with X-Amz-Target: AmazonAthena.<Operation>"}
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 "):
		aerr = &apiError{http.StatusBadRequest, "MissingAuthenticationTokenException", "Missing Authentication Token"}
	default:
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			aerr = invalid("reading the request: " + err.Error())
			break
		}
		switch op {
		case "StartQueryExecution":
			out, aerr = s.start(body)
		case "GetQueryExecution":
			out, aerr = s.get(body)
		case "GetQueryResults":
			out, aerr = s.results(body)
		case "StopQueryExecution":
			out, aerr = s.stop(body)
		default:
			aerr = &apiError{http.StatusBadRequest, "UnknownOperationException", "the stand-in does not serve " + op}
		}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-RequestId", uuid.NewString())
	if aerr != nil {
		w.Header().Set("X-Amzn-ErrorType", aerr.typ)
		w.WriteHeader(aerr.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": aerr.typ, "Message": aerr.msg})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

func decode[T any](body []byte) (T, *apiError) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return v, invalid("the request is not valid JSON for this operation: " + err.Error())
	}
	return v, nil
}

type startIn struct {
	QueryString           string   `json:"QueryString"`
	ExecutionParameters   []string `json:"ExecutionParameters"`
	WorkGroup             string   `json:"WorkGroup"`
	QueryExecutionContext *struct {
		Database string `json:"Database"`
		Catalog  string `json:"Catalog"`
	} `json:"QueryExecutionContext"`
}

func (s *Server) start(body []byte) (any, *apiError) {
	in, aerr := decode[startIn](body)
	if aerr != nil {
		return nil, aerr
	}
	wg := in.WorkGroup
	if wg == "" {
		wg = "primary"
	}
	if wg != s.workGroup {
		return nil, invalid(fmt.Sprintf("WorkGroup %s is not found.", wg))
	}
	if strings.TrimSpace(in.QueryString) == "" || len(in.QueryString) > 262144 {
		return nil, invalid("QueryString must be 1-262144 characters")
	}
	e := &execution{id: uuid.NewString(), sql: in.QueryString, submitted: time.Now(), state: "QUEUED"}
	if in.QueryExecutionContext != nil {
		e.database = in.QueryExecutionContext.Database
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	s.mu.Lock()
	s.execs[e.id] = e
	s.mu.Unlock()
	s.wg.Add(1)
	go s.run(ctx, e, in.ExecutionParameters)
	return map[string]string{"QueryExecutionId": e.id}, nil
}

func (s *Server) run(ctx context.Context, e *execution, params []string) {
	defer s.wg.Done()
	defer e.cancel()
	s.set(e, "RUNNING", "", nil)
	if e.database != s.database {
		s.set(e, "FAILED", fmt.Sprintf("SCHEMA_NOT_FOUND: line 1:1: Schema '%s' does not exist", e.database), nil)
		return
	}
	sql, err := query.Bind(e.sql, params)
	if err != nil {
		s.set(e, "FAILED", "INVALID_PARAMETER_USAGE: "+err.Error(), nil)
		return
	}
	res, err := s.engine.Query(ctx, sql)
	switch {
	case ctx.Err() != nil:
		s.set(e, "CANCELLED", "Query was cancelled by user", nil)
	case err != nil:
		s.set(e, "FAILED", "GENERIC_USER_ERROR: "+err.Error(), nil)
	default:
		s.set(e, "SUCCEEDED", "", res)
	}
}

func (s *Server) set(e *execution, state, reason string, res *query.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.state == "CANCELLED" {
		return
	}
	e.state, e.reason, e.result = state, reason, res
	if state != "RUNNING" {
		e.completed = time.Now()
	}
}

type idIn struct {
	QueryExecutionID string `json:"QueryExecutionId"`
	MaxResults       *int   `json:"MaxResults"`
	NextToken        string `json:"NextToken"`
}

// execution decodes a request that names a query execution, and finds it.
func (s *Server) execution(body []byte) (idIn, *execution, *apiError) {
	in, aerr := decode[idIn](body)
	if aerr != nil {
		return in, nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.execs[in.QueryExecutionID]
	if !ok {
		return in, nil, invalid(fmt.Sprintf("QueryExecution %s was not found", in.QueryExecutionID))
	}
	return in, e, nil
}

func epoch(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return float64(t.UnixMilli()) / 1000
}

func (s *Server) get(body []byte) (any, *apiError) {
	_, e, aerr := s.execution(body)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	status := map[string]any{"State": e.state, "SubmissionDateTime": epoch(e.submitted)}
	if e.reason != "" {
		status["StateChangeReason"] = e.reason
	}
	if !e.completed.IsZero() {
		status["CompletionDateTime"] = epoch(e.completed)
	}
	elapsed := time.Since(e.submitted)
	if !e.completed.IsZero() {
		elapsed = e.completed.Sub(e.submitted)
	}
	return map[string]any{"QueryExecution": map[string]any{
		"QueryExecutionId":      e.id,
		"Query":                 e.sql,
		"StatementType":         "DML",
		"WorkGroup":             s.workGroup,
		"QueryExecutionContext": map[string]string{"Database": e.database, "Catalog": "AwsDataCatalog"},
		"ResultConfiguration":   map[string]string{"OutputLocation": strings.TrimSuffix(s.outputLocation, "/") + "/" + e.id + ".csv"},
		"Status":                status,
		"Statistics": map[string]any{
			"EngineExecutionTimeInMillis": elapsed.Milliseconds(),
			"TotalExecutionTimeInMillis":  elapsed.Milliseconds(),
			"DataScannedInBytes":          0,
		},
		"EngineVersion": map[string]string{"SelectedEngineVersion": "AUTO", "EffectiveEngineVersion": "Athena engine version 3"},
	}}, nil
}

// results pages through a finished query. NextToken is the offset of the next data
// row, opaque to clients as Athena's is.
func (s *Server) results(body []byte) (any, *apiError) {
	in, e, aerr := s.execution(body)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	state, res := e.state, e.result
	s.mu.Unlock()
	switch state {
	case "SUCCEEDED":
	case "FAILED", "CANCELLED":
		return nil, invalid(fmt.Sprintf("Query did not finish successfully. Final query state: %s", state))
	default:
		return nil, invalid(fmt.Sprintf("Query has not yet finished. Current state: %s", state))
	}
	size := 1000
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 1000 {
			return nil, invalid("MaxResults must be between 1 and 1000")
		}
		size = *in.MaxResults
	}
	off := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(in.NextToken, "aacmcp-"))
		if err != nil || n < 0 || n > len(res.Rows) {
			return nil, invalid("NextToken is not valid")
		}
		off = n
	}
	types := columnTypes(res)
	var rows []any
	if off == 0 {
		// The header row comes first and takes one of the page's places.
		hdr := make([]any, len(res.Columns))
		for i, c := range res.Columns {
			hdr[i] = map[string]string{"VarCharValue": c}
		}
		rows = append(rows, map[string]any{"Data": hdr})
		size--
	}
	end := min(off+size, len(res.Rows))
	for _, r := range res.Rows[off:end] {
		data := make([]any, len(r))
		for i, v := range r {
			if v == nil {
				data[i] = map[string]any{}
				continue
			}
			data[i] = map[string]string{"VarCharValue": text(v)}
		}
		rows = append(rows, map[string]any{"Data": data})
	}
	cols := make([]any, len(res.Columns))
	for i, c := range res.Columns {
		cols[i] = map[string]any{"CatalogName": "hive", "SchemaName": "", "TableName": "", "Name": c, "Label": c,
			"Type": types[i], "Precision": 0, "Scale": 0, "Nullable": "UNKNOWN", "CaseSensitive": types[i] == "varchar"}
	}
	out := map[string]any{
		"UpdateCount": 0,
		"ResultSet":   map[string]any{"Rows": rows, "ResultSetMetadata": map[string]any{"ColumnInfo": cols}},
	}
	if end < len(res.Rows) {
		out["NextToken"] = "aacmcp-" + strconv.Itoa(end)
	}
	return out, nil
}

func (s *Server) stop(body []byte) (any, *apiError) {
	_, e, aerr := s.execution(body)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	if e.state == "QUEUED" || e.state == "RUNNING" {
		e.state, e.reason, e.completed = "CANCELLED", "Query was cancelled by user", time.Now()
		e.cancel()
	}
	s.mu.Unlock()
	return map[string]any{}, nil
}

// columnTypes names each column's Athena type from its values: the local engine
// hands back JSON-ready values, not types. A column of NULLs only is varchar.
func columnTypes(res *query.Result) []string {
	out := make([]string, len(res.Columns))
	for i := range out {
		out[i] = "varchar"
	rows:
		for _, r := range res.Rows {
			switch r[i].(type) {
			case nil:
				continue
			case int64:
				out[i] = "bigint"
			case float64:
				out[i] = "double"
			case bool:
				out[i] = "boolean"
			case []any:
				out[i] = "array(varchar)"
			case map[string]any:
				out[i] = "map(varchar, varchar)"
			}
			break rows
		}
	}
	return out
}

// text is a value as Athena writes it in VarCharValue.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

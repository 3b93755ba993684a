// Package report builds the admin's audit report: the saved report queries of
// events/queries run over one period, and one self-contained HTML page with a chart
// and a table per query.
//
// The SQL is the saved queries themselves (report_*.sql), run through a Runner: the
// local DuckDB engine over <data>/audit, or Athena (shared/audit/athenaclient). Both
// bind the same parameters into the same text, so the laptop and Athena answer the
// same question the same way.
package report

import (
	"context"
	"fmt"
	"time"

	"github.com/aacworkflow/aacmcp/events/queries"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/query"
)

// Period is what a report covers: records at or after From and before To, of one
// workspace or ("") of all.
type Period struct {
	From, To  time.Time
	Workspace string
}

// Validate refuses a period that ends before it starts.
func (p Period) Validate() error {
	if !p.From.Before(p.To) {
		return apperr.New(apperr.InvalidArguments, fmt.Sprintf("the period is empty: %s is not before %s",
			p.From.UTC().Format(time.RFC3339), p.To.UTC().Format(time.RFC3339)))
	}
	return nil
}

// Bind fills a saved query's placeholders with the period: a query without any
// (the saved queries that choose their own window) is returned as it is.
func (p Period) Bind(sql string) (string, error) {
	if q, err := query.Bind(sql, nil); err == nil {
		return q, nil
	}
	return query.Bind(sql, p.Params())
}

// Params are the period as the report queries' execution parameters, in their
// order: start, end (ISO 8601 UTC string literals) and workspace.
func (p Period) Params() []string {
	return []string{
		query.Literal(audit.FormatTime(p.From.UTC())),
		query.Literal(audit.FormatTime(p.To.UTC())),
		query.Literal(p.Workspace),
	}
}

// Section is one part of the report: a saved query and how its rows are drawn.
type Section struct {
	ID    string // the anchor in the page and the key in Data
	Query string // the saved query's name
	Title string
	// Empty is what the chart says when the query has no rows for the period.
	Empty string
}

// Sections are the report's parts, in page order.
var Sections = []Section{
	{"calls_per_hour", "report_calls_per_hour", "Tool calls per hour by outcome", "No tool calls in this period."},
	{"denials", "report_denials", "Denials by reason, token and client", "No denied calls in this period."},
	{"destructive", "report_destructive", "Destructive calls by user, client and confirmation", "No destructive calls in this period."},
	{"authorization", "report_authorization_events", "Authorization events by action", "No authorization events in this period."},
	{"top_tools", "report_top_tools", "Top tools by calls and by p95 duration", "No tool calls in this period."},
	{"slowest", "report_slowest_calls", "The slowest calls", "No tool calls in this period."},
}

// Runner runs one saved query with its execution parameters.
type Runner interface {
	Run(ctx context.Context, q queries.Query, params []string) (*query.Result, error)
}

// Progress hears about each query: started (done false), then finished (done
// true) with its row count or error and how long it took.
type Progress func(i, n int, q queries.Query, done bool, rows int, took time.Duration, err error)

// Data is everything a report shows.
type Data struct {
	Period    Period                   `json:"-"`
	From      string                   `json:"from"`
	To        string                   `json:"to"`
	Workspace string                   `json:"workspace"`
	Source    string                   `json:"source"` // where the rows came from, for people
	Generated string                   `json:"generated"`
	Results   map[string]*query.Result `json:"results"` // by section ID
}

// Collect runs every section's query over the period.
func Collect(ctx context.Context, r Runner, p Period, source string, now time.Time, progress Progress) (*Data, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	d := &Data{
		Period: p, From: audit.FormatTime(p.From.UTC()), To: audit.FormatTime(p.To.UTC()), Workspace: p.Workspace,
		Source: source, Generated: audit.FormatTime(now.UTC()), Results: map[string]*query.Result{},
	}
	for i, s := range Sections {
		q, err := queries.Get(s.Query)
		if err != nil {
			return nil, apperr.Internal(err)
		}
		if progress != nil {
			progress(i+1, len(Sections), q, false, 0, 0, nil)
		}
		start := time.Now()
		res, err := r.Run(ctx, q, p.Params())
		took := time.Since(start)
		rows := 0
		if res != nil {
			rows = len(res.Rows)
		}
		if progress != nil {
			progress(i+1, len(Sections), q, true, rows, took, err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Query, err)
		}
		d.Results[s.ID] = res
	}
	return d, nil
}

// Local runs the queries on the DuckDB engine over a data directory.
type Local struct{ Engine *query.Engine }

// Run binds params into the query and runs it.
func (l Local) Run(ctx context.Context, q queries.Query, params []string) (*query.Result, error) {
	sql, err := query.Bind(q.SQL, params)
	if err != nil {
		return nil, err
	}
	return l.Engine.Query(ctx, sql)
}

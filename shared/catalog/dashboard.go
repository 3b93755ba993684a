package catalog

import (
	"context"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Dashboard tools: dashboard_usage_daily.

const (
	dateLayout      = "2006-01-02"
	defaultSpanDays = 7
	// maxSpanDays bounds one request (a leap year, inclusive): the store answers in one
	// query, but the result still has to fit a tool result.
	maxSpanDays = 366
)

func init() {
	register(40, dashboardUsageDailyTool)
}

func dashboardUsageDailyTool(Deps) Tool {
	return reads(Tool{
		Name:  "dashboard_usage_daily",
		Title: "Daily tool usage",
		Description: prose(`
			Per day and per tool, how many tool calls this workspace made (calls), and
			how many of those were denied (denied) or failed (errors). Dates are UTC,
			YYYY-MM-DD, both ends inclusive; default: the last 7 days ending today. to
			defaults to today, from to 6 days before to; at most 366 days per call. Only
			days and tools with at least one call appear. Read-only; safe to call any
			time.`),
		Annotations: Annotations{ReadOnly: true, Destructive: false, Idempotent: true, OpenWorld: false},
		Scopes:      []string{"dashboard:read"},
		InputSchema: input(nil,
			`"from": {`+dateField+`, "description": "First day, YYYY-MM-DD (UTC)."}`,
			`"to": {`+dateField+`, "description": "Last day, YYYY-MM-DD (UTC); default today."}`,
		),
		OutputSchema: schema(`{
			"type": "object",
			"properties": {
				"days": {
					"type": "array",
					"description": "One row per day and tool that had calls, ordered by date then tool.",
					"items": {
						"type": "object",
						"properties": {
							"date": {"type": "string", "description": "YYYY-MM-DD (UTC)."},
							"tool": {"type": "string"},
							"calls": {"type": "integer", "minimum": 0, "description": "Every invocation, whatever its outcome."},
							"denied": {"type": "integer", "minimum": 0, "description": "Calls refused by an authorization check."},
							"errors": {"type": "integer", "minimum": 0, "description": "Calls that failed otherwise."}
						},
						"required": ["date", "tool", "calls", "denied", "errors"]
					}
				}
			},
			"required": ["days"]
		}`),
	}, dashboardUsageDaily)
}

type usageArgs struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type usageResult struct {
	Days []store.UsageRow `json:"days"`
}

func dashboardUsageDaily(ctx context.Context, c Call, a usageArgs, r store.Reader) (any, error) {
	from, to, err := usageRange(a, c.Now)
	if err != nil {
		return nil, err
	}
	rows, err := r.ListUsage(ctx, c.Principal.WorkspaceID, from.Format(dateLayout), to.Format(dateLayout))
	if err != nil {
		return nil, err
	}
	// Days without calls are left out rather than padded with zeros: the rows are what
	// the counters hold, and a model reads "no row" as "no calls" just as well.
	if rows == nil {
		rows = []store.UsageRow{}
	}
	return usageResult{Days: rows}, nil
}

// usageRange applies the defaults and bounds of from/to.
func usageRange(a usageArgs, now time.Time) (from, to time.Time, err error) {
	now = now.UTC()
	to = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if a.To != "" {
		if to, err = parseDate("to", a.To); err != nil {
			return from, to, err
		}
	}
	from = to.AddDate(0, 0, -(defaultSpanDays - 1))
	if a.From != "" {
		if from, err = parseDate("from", a.From); err != nil {
			return from, to, err
		}
	}
	if from.After(to) {
		return from, to, apperr.Newf(apperr.InvalidArguments, "from (%s) is after to (%s)",
			from.Format(dateLayout), to.Format(dateLayout))
	}
	if days := int(to.Sub(from).Hours()/24) + 1; days > maxSpanDays {
		return from, to, apperr.Newf(apperr.InvalidArguments,
			"the range spans %d days; ask for at most %d per call", days, maxSpanDays)
	}
	return from, to, nil
}

func parseDate(field, s string) (time.Time, error) {
	t, err := time.Parse(dateLayout, s)
	if err != nil {
		return time.Time{}, apperr.Newf(apperr.InvalidArguments, "%s must be a calendar date YYYY-MM-DD", field)
	}
	return t, nil
}

package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// sessionSetup runs on every new DuckDB connection. It makes DuckDB answer the way
// Athena (Trino) does for what admins write against the audit log; where a Trino
// behaviour cannot be reproduced exactly, the macro fails with a message that says
// so instead of answering differently. shared/audit/query/trino_test.go holds the
// contract: every case with Athena's answer, taken from the Trino documentation or
// source, next to what this session answers.
var sessionSetup = []string{
	// Trino (Athena) evaluates date_trunc, date_format and current_timestamp in the
	// session zone, which is UTC; records are UTC.
	`SET TimeZone = 'UTC'`,
	// Trino divides integers as integers (7 / 2 = 3, -7 / 2 = -3); DuckDB's default
	// gives a double.
	`SET integer_division = true`,

	// from_iso8601_timestamp parses with Joda's ISO parser: a 'T' between date and
	// time (a space is an error), hour 00-23, a fraction of 1-9 digits truncated to
	// milliseconds, and a zone kept as the value's zone. DuckDB has no per-value zone,
	// so only UTC (Z, +00:00, or none: the session zone) is accepted here; any other
	// offset, and the rarer ISO forms (week or ordinal dates, fractions of an hour or
	// minute, a time after a partial date), are refused rather than answered
	// differently. A date alone may omit the day, or the month and day (January 1st).
	`CREATE OR REPLACE TEMP MACRO aacmcp_iso8601(p) AS CAST(
		p.y || '-' || CASE WHEN p.mo = '' THEN '01' ELSE p.mo END || '-' || CASE WHEN p.d = '' THEN '01' ELSE p.d END || ' ' ||
		CASE WHEN p.h = '' THEN '00' ELSE p.h END || ':' ||
		CASE WHEN p.mi = '' THEN '00' ELSE p.mi END || ':' ||
		CASE WHEN p.sec = '' THEN '00' ELSE p.sec END || '.' ||
		left(rpad(p.frac, 3, '0'), 3) || '+00' AS TIMESTAMPTZ)`,
	`CREATE OR REPLACE TEMP MACRO from_iso8601_timestamp(s VARCHAR) AS CASE
		WHEN s IS NULL THEN NULL
		-- The audit record's own form (audit.FormatTime: UTC, milliseconds, Z) is read
		-- the same by both engines; DuckDB's cast reads it without the two regular
		-- expressions below, which cost seconds a million rows. A malformed value of
		-- that shape fails the cast, as it fails Athena.
		WHEN length(s) = 24 AND substr(s, 11, 1) = 'T' AND substr(s, 20, 1) = '.' AND substr(s, 24, 1) = 'Z'
			THEN CAST(s AS TIMESTAMPTZ)
		WHEN NOT regexp_full_match(s, '` + iso8601Pattern + `') THEN error(
			'from_iso8601_timestamp: "' || s || '" is not a timestamp both Athena and the local engine read the same way: ' ||
			'write YYYY[-MM[-DD]] or YYYY-MM-DDTHH[:MM[:SS[.fff]]] with Z, +00:00 or no zone (Athena refuses a space instead of T; ' ||
			'other offsets are refused locally because Athena keeps them as the value''s zone)')
		ELSE aacmcp_iso8601(regexp_extract(s, '` + iso8601Pattern + `', ['y', 'mo', 'd', 'h', 'mi', 'sec', 'frac']))
	END`,

	// date_diff counts whole units as Joda's getDifferenceAsLong does (Trino's
	// DateTimeFunctions.diffDate/diffTimestamp): DuckDB's date_diff counts boundaries
	// crossed, its date_sub counts whole units and matches Joda for months, quarters
	// and years (end-of-month rule included). Inputs are cut to milliseconds first,
	// as Trino's timestamp(3) values are. The unit names are Trino's, any case.
	// aacmcp_unit hands date_sub only names it knows, so an invalid unit reaches the
	// Trino error below and never DuckDB's own (nor DuckDB's plurals, which Trino lacks).
	`CREATE OR REPLACE TEMP MACRO aacmcp_unit(unit) AS CASE WHEN lower(unit) IN (` + timestampUnits + `) THEN lower(unit) ELSE 'day' END`,
	`CREATE OR REPLACE TEMP MACRO date_diff
		(unit VARCHAR, a DATE, b DATE) AS CASE
			WHEN unit IS NULL OR a IS NULL OR b IS NULL THEN NULL
			WHEN lower(unit) IN ('day', 'week', 'month', 'quarter', 'year') THEN date_sub(aacmcp_unit(unit), a, b)
			ELSE error('''' || lower(unit) || ''' is not a valid DATE field')
		END,
		(unit VARCHAR, a TIMESTAMP, b TIMESTAMP) AS CASE
			WHEN unit IS NULL OR a IS NULL OR b IS NULL THEN NULL
			WHEN lower(unit) IN (` + timestampUnits + `) THEN
				date_sub(aacmcp_unit(unit), date_trunc('millisecond', a), date_trunc('millisecond', b))
			ELSE error('''' || lower(unit) || ''' is not a valid Timestamp field')
		END,
		(unit VARCHAR, a TIMESTAMPTZ, b TIMESTAMPTZ) AS CASE
			WHEN unit IS NULL OR a IS NULL OR b IS NULL THEN NULL
			WHEN lower(unit) IN (` + timestampUnits + `) THEN
				date_sub(aacmcp_unit(unit), date_trunc('millisecond', a), date_trunc('millisecond', b))
			ELSE error('''' || lower(unit) || ''' is not a valid Timestamp field')
		END`,

	// date_add keeps the input's type (a date stays a date) and adds months the way
	// Joda does (Jan 31 + 1 month = Feb 28); a quarter is three months at once.
	// Trino adds an int (toIntExact): a larger value fails there too.
	`CREATE OR REPLACE TEMP MACRO aacmcp_interval(unit, n) AS CASE
		WHEN n NOT BETWEEN -2147483648 AND 2147483647 THEN error('date_add: ' || n || ' is out of the integer range')
		ELSE CASE lower(unit)
			WHEN 'millisecond' THEN to_milliseconds(n)
			WHEN 'second' THEN to_seconds(n)
			WHEN 'minute' THEN to_minutes(n)
			WHEN 'hour' THEN to_hours(n)
			WHEN 'day' THEN to_days(CAST(n AS INTEGER))
			WHEN 'week' THEN to_days(CAST(7 * n AS INTEGER))
			WHEN 'month' THEN to_months(CAST(n AS INTEGER))
			WHEN 'quarter' THEN to_months(CAST(3 * n AS INTEGER))
			WHEN 'year' THEN to_years(CAST(n AS INTEGER))
		END
	END`,
	`CREATE OR REPLACE TEMP MACRO date_add
		(unit VARCHAR, n BIGINT, d DATE) AS CASE
			WHEN unit IS NULL OR n IS NULL OR d IS NULL THEN NULL
			WHEN lower(unit) NOT IN ('day', 'week', 'month', 'quarter', 'year') THEN error('''' || lower(unit) || ''' is not a valid DATE field')
			ELSE CAST(d + aacmcp_interval(unit, n) AS DATE)
		END,
		(unit VARCHAR, n BIGINT, t TIMESTAMP) AS CASE
			WHEN unit IS NULL OR n IS NULL OR t IS NULL THEN NULL
			WHEN lower(unit) NOT IN (` + timestampUnits + `) THEN error('''' || lower(unit) || ''' is not a valid Timestamp field')
			ELSE t + aacmcp_interval(unit, n)
		END,
		(unit VARCHAR, n BIGINT, t TIMESTAMPTZ) AS CASE
			WHEN unit IS NULL OR n IS NULL OR t IS NULL THEN NULL
			WHEN lower(unit) NOT IN (` + timestampUnits + `) THEN error('''' || lower(unit) || ''' is not a valid Timestamp field')
			ELSE t + aacmcp_interval(unit, n)
		END`,

	// date_format takes Trino's MySQL-style specifiers (Trino's
	// DateTimeFunctions.createDateTimeFormatter), each mapped here one by one: the
	// format is cut into tokens ('%' and one character, or a run of literal text) and
	// every token becomes its text. %D %U %u %V %w %X fail as in Trino; '%' before any
	// other character is that character; a '%' at the very end prints nothing. %f
	// prints milliseconds and three zeros (Trino truncates to milliseconds). Fields are
	// those of the session zone (UTC), which is every audit value's zone.
	`CREATE OR REPLACE TEMP MACRO aacmcp_date_format(ts, fmt) AS CASE
		WHEN ts IS NULL OR fmt IS NULL THEN NULL
		-- Joda pads years to four digits and signs negative ones; only years 1-9999
		-- are checked against it here.
		WHEN year(ts) NOT BETWEEN 1 AND 9999 THEN error('date_format: years outside 1-9999 are not supported by the local engine')
		ELSE array_to_string(list_transform(regexp_extract_all(fmt, '(?s)%.|%$|[^%]+'), lambda tok: CASE
			WHEN left(tok, 1) <> '%' THEN tok
			WHEN tok = '%' THEN ''
			WHEN tok = '%a' THEN strftime(ts, '%a')
			WHEN tok = '%b' THEN strftime(ts, '%b')
			WHEN tok = '%c' THEN CAST(month(ts) AS VARCHAR)
			WHEN tok = '%d' THEN strftime(ts, '%d')
			WHEN tok = '%e' THEN CAST(day(ts) AS VARCHAR)
			WHEN tok = '%f' THEN strftime(ts, '%g') || '000'
			WHEN tok = '%H' THEN strftime(ts, '%H')
			WHEN tok = '%h' OR tok = '%I' THEN strftime(ts, '%I')
			WHEN tok = '%i' THEN strftime(ts, '%M')
			WHEN tok = '%j' THEN strftime(ts, '%j')
			WHEN tok = '%k' THEN CAST(hour(ts) AS VARCHAR)
			WHEN tok = '%l' THEN strftime(ts, '%-I')
			WHEN tok = '%M' THEN strftime(ts, '%B')
			WHEN tok = '%m' THEN strftime(ts, '%m')
			WHEN tok = '%p' THEN strftime(ts, '%p')
			WHEN tok = '%r' THEN strftime(ts, '%I:%M:%S %p')
			WHEN tok = '%S' OR tok = '%s' THEN strftime(ts, '%S')
			WHEN tok = '%T' THEN strftime(ts, '%H:%M:%S')
			WHEN tok = '%v' THEN strftime(ts, '%V')
			WHEN tok = '%W' THEN strftime(ts, '%A')
			WHEN tok = '%x' THEN printf('%04d', isoyear(ts))
			WHEN tok = '%Y' THEN printf('%04d', year(ts))
			WHEN tok = '%y' THEN printf('%02d', year(ts) % 100)
			WHEN tok IN ('%D', '%U', '%u', '%V', '%w', '%X') THEN error(tok || ' not supported in date format string')
			ELSE substr(tok, 2)
		END), '')
	END`,
	`CREATE OR REPLACE TEMP MACRO date_format
		(ts TIMESTAMP, fmt VARCHAR) AS aacmcp_date_format(ts, fmt),
		(ts TIMESTAMPTZ, fmt VARCHAR) AS aacmcp_date_format(ts, fmt)`,

	// Trino functions DuckDB lacks, with the same results for the audit columns.
	`CREATE OR REPLACE TEMP MACRO to_unixtime(ts) AS epoch(ts)`,
	`CREATE OR REPLACE TEMP MACRO cardinality(a) AS len(a)`,
	`CREATE OR REPLACE TEMP MACRO element_at(a, i) AS list_extract(a, i)`,
	`CREATE OR REPLACE TEMP MACRO array_join(a, sep) AS array_to_string(a, sep)`,
	`CREATE OR REPLACE TEMP MACRO regexp_like(s, p) AS regexp_matches(s, p)`,
	`CREATE OR REPLACE TEMP MACRO approx_distinct(x) AS approx_count_distinct(x)`,
}

const (
	// iso8601Pattern is the part of Joda's ISODateTimeFormat.dateTimeParser() that
	// gives the same instant in both engines.
	iso8601Pattern = `^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T([01]\d|2[0-3])(?::([0-5]\d)(?::([0-5]\d)(?:[.,](\d{1,9}))?)?)?(?:Z|[+-]00(?::?00)?)?)?)?)?$`
	timestampUnits = `'millisecond', 'second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'`
)

// checkComparisons refuses what Trino refuses and DuckDB answers silently: a
// comparison that DuckDB binds by casting a varchar operand to another type. Trino
// has no implicit cast from varchar, so `hour = 5` (hour is a varchar partition
// column) fails there with "Cannot apply operator: varchar = integer", while DuckDB
// casts hour to an integer; `ts >= '2025-06-22'` is the same with a string literal.
//
// DuckDB reports no implicit casts, so they are found in its bound plan: every cast
// from varchar that is an operand of a comparison (=, <>, IN, BETWEEN, a join
// condition) and that the query text does not spell as a CAST is one the binder
// added. The plan comes from json_serialize_plan over a stand-in audit_log view of
// the same types (DuckDB cannot serialize a plan that reads JSON files). A
// statement DuckDB cannot serialize (not a SELECT, or an invalid one) is left to run
// and report its own errors.
func checkComparisons(ctx context.Context, conn *sql.Conn, q string) error {
	var parsed, planned string
	err := conn.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql("+quoteString(q)+") AS VARCHAR), "+
		"CAST(json_serialize_plan("+quoteString(q)+") AS VARCHAR)").Scan(&parsed, &planned)
	if err != nil {
		return queryError(err)
	}
	var p, pl struct {
		Error bool `json:"error"`
	}
	if json.Unmarshal([]byte(parsed), &p) != nil || json.Unmarshal([]byte(planned), &pl) != nil || p.Error || pl.Error {
		return nil
	}
	parseTree, err1 := decodeJSON(parsed)
	plan, err2 := decodeJSON(planned)
	if err := errors.Join(err1, err2); err != nil {
		return apperr.Internal(fmt.Errorf("audit query: read DuckDB's plan: %w", err))
	}
	explicit := map[castAt]bool{}
	walk(parseTree, func(n map[string]any) {
		if n["class"] == "CAST" {
			explicit[castAt{location(n), typeID(n["cast_type"])}] = true
		}
	})
	var found error
	walk(plan, func(n map[string]any) {
		if found != nil {
			return
		}
		for _, operand := range comparisonOperands(n) {
			c, ok := operand.(map[string]any)
			if !ok || c["expression_class"] != "BOUND_CAST" {
				continue
			}
			to := typeID(c["return_type"])
			if exprType(c["child"]) != "VARCHAR" || to == "VARCHAR" || explicit[castAt{location(c), to}] {
				continue
			}
			found = implicitCastError(q, c, to)
		}
	})
	return found
}

type castAt struct {
	loc uint64
	to  string
}

// comparisonOperands are the operands of n when n compares values.
func comparisonOperands(n map[string]any) []any {
	switch {
	case n["expression_class"] == "BOUND_COMPARISON":
		return []any{n["left"], n["right"]}
	case n["expression_class"] == "BOUND_BETWEEN":
		return []any{n["input"], n["lower"], n["upper"]}
	case n["expression_class"] == "BOUND_OPERATOR" && (n["type"] == "COMPARE_IN" || n["type"] == "COMPARE_NOT_IN"):
		children, _ := n["children"].([]any)
		return children
	case n["comparison"] != nil && n["left"] != nil: // a join condition
		return []any{n["left"], n["right"]}
	}
	return nil
}

func implicitCastError(q string, c map[string]any, to string) error {
	what, hint := "a string", "compare strings with strings, or CAST explicitly"
	if child, ok := c["child"].(map[string]any); ok {
		if alias, _ := child["alias"].(string); alias != "" {
			what = "the varchar column " + alias
			if alias == "dt" || alias == "hour" {
				hint = "the partition columns dt and hour are strings ('2025-06-22', '05'): compare them with strings, or CAST explicitly"
			}
		} else if v, ok := child["value"].(map[string]any); ok {
			what = fmt.Sprintf("the string '%v'", v["value"])
		}
	}
	at := ""
	if loc := location(c); loc < uint64(len(q)) {
		line := strings.Count(q[:loc], "\n") + 1
		col := int(loc) - strings.LastIndex(q[:loc], "\n")
		at = fmt.Sprintf(" at line %d, column %d", line, col)
	}
	return apperr.New(apperr.InvalidArguments, fmt.Sprintf(
		"Athena (Trino) cannot compare varchar with %s: %s%s is compared with a %s, which DuckDB would cast "+
			"silently and Athena refuses (Cannot apply operator); %s", trinoType(to), what, at, trinoType(to), hint))
}

// trinoType names a DuckDB type id the way Trino's messages do.
func trinoType(id string) string {
	switch id {
	case "TIMESTAMP WITH TIME ZONE":
		return "timestamp with time zone"
	case "":
		return "another type"
	}
	return strings.ToLower(id)
}

// walk calls f on every JSON object in v, depth first.
func walk(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, e := range x {
			walk(e, f)
		}
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	}
}

// decodeJSON keeps numbers exact: DuckDB marks "no location" with the largest
// uint64, which a float64 cannot hold.
func decodeJSON(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	return v, d.Decode(&v)
}

func location(n map[string]any) uint64 {
	num, _ := n["query_location"].(json.Number)
	loc, err := strconv.ParseUint(string(num), 10, 64)
	if err != nil {
		return math.MaxUint64
	}
	return loc
}

func typeID(t any) string {
	m, _ := t.(map[string]any)
	id, _ := m["id"].(string)
	return id
}

// exprType is the type of a bound expression: its return type, or a constant's
// value type.
func exprType(e any) string {
	m, _ := e.(map[string]any)
	if id := typeID(m["return_type"]); id != "" {
		return id
	}
	v, _ := m["value"].(map[string]any)
	return typeID(v["type"])
}

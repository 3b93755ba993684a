package query_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

// Sources of the Athena (Trino) answers below:
//
//	[docs]   Trino's documentation, docs/src/main/sphinx/functions/datetime.md
//	         (https://trino.io/docs/current/functions/datetime.html): date_add,
//	         date_diff, date_format, from_iso8601_timestamp and the MySQL specifier
//	         table, including "not currently supported: %D %U %u %V %w %X".
//	[math]   https://trino.io/docs/current/functions/math.html: "/" on integers is
//	         integer division, truncating.
//	[fmt]    Trino's DateTimeFunctions.createDateTimeFormatter (trinodb/trino,
//	         core/trino-main/.../operator/scalar/DateTimeFunctions.java): how each
//	         specifier prints (Joda appendDayOfMonth(1), appendClockhourOfHalfday(2),
//	         appendWeekyear(4, 4), ...), "%<x>" is x, and the "%s not supported in
//	         date format string" error.
//	[units]  the same file's getDateField/getTimestampField: the unit names, lower-cased,
//	         and "'<unit>' is not a valid DATE field" / "... Timestamp field".
//	[joda]   Joda-Time, which those call: getDifferenceAsLong counts whole units
//	         (BasicMonthOfYearDateTimeField: the last day of a shorter month counts
//	         as the same day; BasicGJChronology.getYearDifference balances Feb 29),
//	         add() clamps the day of month, and ISODateTimeFormat.dateTimeParser()
//	         wants 'T', hours 0-23, and truncates a fraction to milliseconds.
//	[cmp]    Trino has no implicit cast from varchar: "Cannot apply operator:
//	         timestamp(3) < varchar(19)" (trinodb/trino#7334), and a Hive partition
//	         string compared with a number is a type mismatch (trinodb/trino#20397).
type trinoCase struct {
	name string
	sql  string
	// athena is Athena's answer in the engine's JSON form: DATE as 2006-01-02,
	// timestamps as RFC 3339 UTC.
	athena any
	// athenaFails is part of the error Athena raises; the local engine must fail
	// too, with a message that contains it.
	athenaFails string
	// localFails marks a case Athena answers but the local engine cannot answer
	// the same way: it must fail with a message containing this, never answer.
	localFails string
}

func TestTrinoContract(t *testing.T) {
	dir := t.TempDir()
	// Two records in partition dt=2025-06-22/hour=05.
	ts := time.Date(2025, 6, 22, 5, 30, 0, 0, time.UTC)
	writeRecords(t, dir, []audit.Record{audittest.Record(ts), audittest.Record(ts.Add(time.Minute), audittest.Tool("delete_issue"))})
	e := openEngine(t, dir)

	const all = `SELECT date_format(TIMESTAMP '2025-01-05 15:04:05.123456', '%a|%b|%c|%d|%e|%f|%H|%h|%I|%i|%j|%k|%l|%M|%m|%p|%r|%S|%s|%T|%v|%W|%x|%Y|%y|%%|%Q|%')`
	tests := []trinoCase{
		// Integer division [math].
		{name: "integer division", sql: `SELECT 7 / 2`, athena: int64(3)},
		{name: "integer division truncates toward zero", sql: `SELECT -7 / 2`, athena: int64(-3)},
		{name: "bigint division", sql: `SELECT count(*) / 2 FROM audit_log`, athena: int64(1)},
		{name: "double division", sql: `SELECT CAST(7 AS DOUBLE) / 2`, athena: 3.5},

		// date_diff [docs] examples, then whole units [joda].
		{name: "date_diff doc seconds", sql: `SELECT date_diff('second', TIMESTAMP '2020-03-01 00:00:00', TIMESTAMP '2020-03-02 00:00:00')`, athena: int64(86400)},
		{name: "date_diff doc hours with zone", sql: `SELECT date_diff('hour', from_iso8601_timestamp('2020-03-01T00:00:00Z'), from_iso8601_timestamp('2020-03-02T00:00:00Z'))`, athena: int64(24)},
		{name: "date_diff doc days on dates", sql: `SELECT date_diff('day', DATE '2020-03-01', DATE '2020-03-02')`, athena: int64(1)},
		{name: "date_diff doc milliseconds", sql: `SELECT date_diff('millisecond', TIMESTAMP '2020-06-01 12:30:45.000000000', TIMESTAMP '2020-06-02 12:30:45.123456789')`, athena: int64(86400123)},
		{name: "date_diff counts whole days, not midnights", sql: `SELECT date_diff('day', TIMESTAMP '2025-06-22 23:00:00', TIMESTAMP '2025-06-23 01:00:00')`, athena: int64(0)},
		{name: "date_diff whole hours backwards", sql: `SELECT date_diff('hour', TIMESTAMP '2025-06-22 10:30:00', TIMESTAMP '2025-06-22 09:00:00')`, athena: int64(-1)},
		{name: "date_diff month to a shorter month's last day", sql: `SELECT date_diff('month', DATE '2025-01-31', DATE '2025-02-28')`, athena: int64(1)},
		{name: "date_diff month an hour short", sql: `SELECT date_diff('month', TIMESTAMP '2025-01-31 10:00:00', TIMESTAMP '2025-02-28 09:00:00')`, athena: int64(0)},
		{name: "date_diff month backwards", sql: `SELECT date_diff('month', DATE '2025-03-31', DATE '2025-02-28')`, athena: int64(-1)},
		{name: "date_diff year from Feb 29", sql: `SELECT date_diff('year', DATE '2024-02-29', DATE '2025-02-28')`, athena: int64(1)},
		{name: "date_diff year to Feb 29", sql: `SELECT date_diff('year', DATE '2023-03-01', DATE '2024-02-29')`, athena: int64(0)},
		{name: "date_diff quarter", sql: `SELECT date_diff('quarter', DATE '2025-01-31', DATE '2025-04-30')`, athena: int64(1)},
		{name: "date_diff week", sql: `SELECT date_diff('week', DATE '2025-01-01', DATE '2025-01-14')`, athena: int64(1)},
		{name: "date_diff unit in any case", sql: `SELECT date_diff('DAY', DATE '2025-01-01', DATE '2025-01-03')`, athena: int64(2)},
		{name: "date_diff null", sql: `SELECT date_diff('day', DATE '2025-01-01', CAST(NULL AS DATE))`, athena: nil},
		{name: "date_diff hours of dates", sql: `SELECT date_diff('hour', DATE '2025-01-01', DATE '2025-01-02')`, athenaFails: "'hour' is not a valid DATE field"},
		{name: "date_diff plural unit", sql: `SELECT date_diff('days', TIMESTAMP '2025-01-01 00:00:00', TIMESTAMP '2025-01-02 00:00:00')`, athenaFails: "'days' is not a valid Timestamp field"},
		{name: "date_diff of strings", sql: `SELECT date_diff('day', '2025-01-01', '2025-01-02')`, athenaFails: "date_diff"},

		// date_add [docs] examples, then month arithmetic [joda].
		{name: "date_add doc seconds", sql: `SELECT date_add('second', 86, TIMESTAMP '2020-03-01 00:00:00')`, athena: "2020-03-01T00:01:26Z"},
		{name: "date_add doc hours", sql: `SELECT date_add('hour', 9, TIMESTAMP '2020-03-01 00:00:00')`, athena: "2020-03-01T09:00:00Z"},
		{name: "date_add doc negative day with zone", sql: `SELECT date_add('day', -1, from_iso8601_timestamp('2020-03-01T00:00:00Z'))`, athena: "2020-02-29T00:00:00Z"},
		{name: "date_add month clamps and keeps a date", sql: `SELECT date_add('month', 1, DATE '2025-01-31')`, athena: "2025-02-28"},
		{name: "date_add quarter is three months at once", sql: `SELECT date_add('quarter', 1, DATE '2025-11-30')`, athena: "2026-02-28"},
		{name: "date_add year from Feb 29", sql: `SELECT date_add('year', 1, DATE '2024-02-29')`, athena: "2025-02-28"},
		{name: "date_add weeks", sql: `SELECT date_add('week', 2, DATE '2025-06-22')`, athena: "2025-07-06"},
		{name: "date_add milliseconds", sql: `SELECT date_add('millisecond', 1500, TIMESTAMP '2025-06-22 00:00:00')`, athena: "2025-06-22T00:00:01.5Z"},
		{name: "date_add hours to a date", sql: `SELECT date_add('hour', 1, DATE '2025-01-01')`, athenaFails: "'hour' is not a valid DATE field"},
		{name: "date_add plural unit", sql: `SELECT date_add('days', 1, TIMESTAMP '2025-01-01 00:00:00')`, athenaFails: "'days' is not a valid Timestamp field"},

		// date_format [docs] example, every specifier [fmt].
		{name: "date_format doc", sql: `SELECT date_format(TIMESTAMP '2022-10-20 05:10:00', '%m-%d-%Y %H')`, athena: "10-20-2022 05"},
		{name: "date_format every supported specifier", sql: all,
			athena: "Sun|Jan|1|05|5|123000|15|03|03|04|005|15|3|January|01|PM|03:04:05 PM|05|05|15:04:05|01|Sunday|2025|2025|25|%|Q|"},
		{name: "date_format ISO week year", sql: `SELECT date_format(DATE '2024-12-30', '%x-W%v %W')`, athena: "2025-W01 Monday"},
		{name: "date_format midnight on a 12-hour clock", sql: `SELECT date_format(TIMESTAMP '2025-06-22 00:30:00', '%h %l %k %p %r')`, athena: "12 12 0 AM 12:30:00 AM"},
		{name: "date_format literal text and escapes", sql: `SELECT date_format(TIMESTAMP '2025-06-22 00:30:00', 'day %%d=%d, %z')`, athena: "day %d=22, z"},
		{name: "date_format null", sql: `SELECT date_format(CAST(NULL AS TIMESTAMP), '%Y')`, athena: nil},
		{name: "date_format %D", sql: `SELECT date_format(TIMESTAMP '2025-06-22 00:00:00', '%D')`, athenaFails: "%D not supported in date format string"},
		{name: "date_format %U", sql: `SELECT date_format(TIMESTAMP '2025-06-22 00:00:00', '%U')`, athenaFails: "%U not supported in date format string"},
		{name: "date_format %u", sql: `SELECT date_format(TIMESTAMP '2025-06-22 00:00:00', '%u')`, athenaFails: "%u not supported in date format string"},
		{name: "date_format %V", sql: `SELECT date_format(TIMESTAMP '2025-06-22 00:00:00', '%V')`, athenaFails: "%V not supported in date format string"},
		{name: "date_format %w", sql: `SELECT date_format(TIMESTAMP '2025-06-22 00:00:00', '%w')`, athenaFails: "%w not supported in date format string"},
		{name: "date_format %X", sql: `SELECT date_format(TIMESTAMP '2025-06-22 00:00:00', '%X')`, athenaFails: "%X not supported in date format string"},

		// from_iso8601_timestamp [docs] examples (session zone UTC), then [joda].
		{name: "from_iso8601 doc date", sql: `SELECT from_iso8601_timestamp('2020-05-11')`, athena: "2020-05-11T00:00:00Z"},
		{name: "from_iso8601 year and month", sql: `SELECT from_iso8601_timestamp('2020-05')`, athena: "2020-05-01T00:00:00Z"},
		{name: "from_iso8601 year", sql: `SELECT from_iso8601_timestamp('2020')`, athena: "2020-01-01T00:00:00Z"},
		{name: "from_iso8601 doc time", sql: `SELECT from_iso8601_timestamp('2020-05-11T11:15:05')`, athena: "2020-05-11T11:15:05Z"},
		{name: "from_iso8601 record form", sql: `SELECT from_iso8601_timestamp('2025-06-22T15:30:00.123Z')`, athena: "2025-06-22T15:30:00.123Z"},
		{name: "from_iso8601 fraction truncated to ms", sql: `SELECT from_iso8601_timestamp('2025-06-22T15:30:00.123999999Z')`, athena: "2025-06-22T15:30:00.123Z"},
		{name: "from_iso8601 comma fraction", sql: `SELECT from_iso8601_timestamp('2025-06-22T15:30:00,5Z')`, athena: "2025-06-22T15:30:00.5Z"},
		{name: "from_iso8601 hour and minute", sql: `SELECT from_iso8601_timestamp('2025-06-22T15:30')`, athena: "2025-06-22T15:30:00Z"},
		{name: "from_iso8601 zero offset", sql: `SELECT from_iso8601_timestamp('2025-06-22T15:30:00+00:00')`, athena: "2025-06-22T15:30:00Z"},
		{name: "from_iso8601 null", sql: `SELECT from_iso8601_timestamp(CAST(NULL AS VARCHAR))`, athena: nil},
		// The record form takes the local engine's fast path (a cast, no regular
		// expression); a value of that shape that is no timestamp still fails.
		{name: "from_iso8601 record form, month 13", sql: `SELECT from_iso8601_timestamp('2025-13-22T15:30:00.123Z')`, athenaFails: "2025-13-22T15:30:00.123Z"},
		{name: "from_iso8601 record form, letter in the fraction", sql: `SELECT from_iso8601_timestamp('2025-06-22T15:30:00.12xZ')`, athenaFails: "2025-06-22T15:30:00.12xZ"},
		{name: "from_iso8601 space instead of T", sql: `SELECT from_iso8601_timestamp('2025-06-22 15:30:00')`, athenaFails: "2025-06-22 15:30:00"},
		{name: "from_iso8601 hour 24", sql: `SELECT from_iso8601_timestamp('2025-06-22T24:00:00Z')`, athenaFails: "2025-06-22T24:00:00Z"},
		{name: "from_iso8601 ten fraction digits", sql: `SELECT from_iso8601_timestamp('2025-06-22T15:30:00.1234567891Z')`, athenaFails: "from_iso8601_timestamp"},
		{name: "from_iso8601 zone after a date alone", sql: `SELECT from_iso8601_timestamp('2025-06-22Z')`, athenaFails: "from_iso8601_timestamp"},
		{name: "from_iso8601 of a number", sql: `SELECT from_iso8601_timestamp(20250622)`, athenaFails: "from_iso8601_timestamp"},
		// Athena answers 2020-05-11 11:15:05.055 +01:00 [docs] and keeps +01:00 for
		// date_format and hour(); DuckDB keeps no zone per value.
		{name: "from_iso8601 other offset", sql: `SELECT from_iso8601_timestamp('2020-05-11T11:15:05.055+01:00')`, localFails: "Athena keeps them as the value's zone"},

		// Partition columns are varchar [cmp].
		{name: "hour with a string", sql: `SELECT count(*) FROM audit_log WHERE hour = '05'`, athena: int64(2)},
		{name: "hour cast explicitly", sql: `SELECT count(*) FROM audit_log WHERE CAST(hour AS INTEGER) = 5`, athena: int64(2)},
		{name: "dt against date_format", sql: `SELECT count(*) FROM audit_log WHERE dt >= date_format(DATE '2025-06-22', '%Y-%m-%d')`, athena: int64(2)},
		{name: "hour = integer", sql: `SELECT count(*) FROM audit_log WHERE hour = 5`, athenaFails: "cannot compare varchar with integer"},
		{name: "hour <> integer", sql: `SELECT count(*) FROM audit_log WHERE hour <> 5`, athenaFails: "cannot compare varchar with integer"},
		{name: "hour IN integers", sql: `SELECT count(*) FROM audit_log WHERE hour IN (5, 6)`, athenaFails: "cannot compare varchar with integer"},
		{name: "hour = bigint", sql: `SELECT count(*) FROM audit_log WHERE hour = CAST(5 AS BIGINT)`, athenaFails: "cannot compare varchar with bigint"},
		{name: "dt = date", sql: `SELECT count(*) FROM audit_log WHERE dt = DATE '2025-06-22'`, athenaFails: "cannot compare varchar with date"},
		{name: "CASE hour WHEN integer", sql: `SELECT max(CASE hour WHEN 5 THEN 1 END) FROM audit_log`, athenaFails: "cannot compare varchar with integer"},
		{name: "hour renamed in a CTE", sql: `WITH x AS (SELECT hour AS h FROM audit_log) SELECT count(*) FROM x WHERE h = 5`, athenaFails: "cannot compare varchar with integer"},
		{name: "hour joined to an integer", sql: `SELECT count(*) FROM audit_log JOIN (SELECT 5 AS h) AS n ON hour = n.h`, athenaFails: "cannot compare varchar with integer"},
		{name: "timestamp with a string", sql: `SELECT count(*) FROM audit_log WHERE from_iso8601_timestamp("timestamp") >= '2025-06-22'`, athenaFails: "cannot compare varchar with timestamp with time zone"},
		{name: "boolean with a string", sql: `SELECT count(*) FROM audit_log WHERE destructive = 'true'`, athenaFails: "cannot compare varchar with boolean"},
		{name: "hour with NULL", sql: `SELECT count(*) FROM audit_log WHERE hour = NULL`, athena: int64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.Query(context.Background(), tt.sql)
			want := tt.athenaFails + tt.localFails
			switch {
			case want != "":
				if err == nil {
					t.Fatalf("answered %v; Athena %s", res.Rows, map[bool]string{true: "fails", false: "answers differently"}[tt.athenaFails != ""])
				}
				if !apperr.Is(err, apperr.InvalidArguments) || !strings.Contains(err.Error(), want) {
					t.Fatalf("err = %v, want invalid_arguments containing %q", err, want)
				}
			case err != nil:
				t.Fatalf("err = %v, Athena answers %#v", err, tt.athena)
			case len(res.Rows) != 1 || len(res.Rows[0]) != 1:
				t.Fatalf("rows %v", res.Rows)
			case !reflect.DeepEqual(res.Rows[0][0], tt.athena):
				t.Fatalf("local %#v, Athena %#v", res.Rows[0][0], tt.athena)
			}
		})
	}
}

// TestDateFormatTokens guards the tokenizer: a specifier is '%'
// and the one character after it, never a suffix of an earlier token.
func TestDateFormatTokens(t *testing.T) {
	e := openEngine(t, t.TempDir())
	for format, want := range map[string]string{
		"%%M":   "%M",
		"%%%M":  "%June",
		"%i%s":  "04" + "05",
		"a%b%c": "aJun6",
		"":      "",
		"%":     "",
		"%\n":   "\n",
		"é%é":   "éé",
	} {
		res := run(t, e, "SELECT date_format(TIMESTAMP '2025-06-22 15:04:05', "+sqlString(format)+")")
		if got := res.Rows[0][0]; got != want {
			t.Errorf("date_format(%q) = %#v, want %q", format, got, want)
		}
	}
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

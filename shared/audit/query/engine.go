// Package query runs admin SQL over the local audit log with DuckDB (embedded).
//
// The table is a view named audit_log with the columns of audit.Record plus the
// partition columns dt and hour, exactly as the Glue table that Athena queries in
// production; columns a record's event version lacks are NULL, as there. The session
// settings and macros of trino.go make DuckDB answer as Athena (Trino) does, or fail
// where it cannot, so the saved queries in events/queries and an admin's ad-hoc SQL
// give the same answers on both.
package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/file"
)

// Extensions are never downloaded: json, parquet and icu are built into the driver,
// and an admin query must not reach the network.
const dsn = "?autoinstall_known_extensions=false&autoload_known_extensions=false"

// Engine runs queries over the audit files of one data directory. It is safe for
// concurrent use; queries run one at a time.
type Engine struct {
	dataDir string
	keep    func(rel string) bool // nil: every file
	db      *sql.DB
	conn    *duckdb.Connector
	mu      sync.Mutex
}

// Result is a query's answer in JSON-friendly values: strings, int64, float64, bool,
// nil, and slices and maps of those. Times are RFC 3339 UTC strings.
type Result struct {
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// Open returns an engine over <dataDir>/audit. The folder need not exist yet.
func Open(dataDir string) (*Engine, error) {
	c, err := duckdb.NewConnector(dsn, func(ex driver.ExecerContext) error {
		for _, stmt := range sessionSetup {
			if _, err := ex.ExecContext(context.Background(), stmt, nil); err != nil {
				return fmt.Errorf("audit query: session setup %q: %w", stmt, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, apperr.Internal(fmt.Errorf("audit query: open duckdb: %w", err))
	}
	return &Engine{dataDir: dataDir, db: sql.OpenDB(c), conn: c}, nil
}

// Restrict makes the view read only the files keep accepts, by their path relative to
// the data directory (audit/dt=.../hour=.../name): `audit query --verified` keeps
// those a digest lists and that verified.
func (e *Engine) Restrict(keep func(rel string) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keep = keep
}

// live is the snapshot of the files the view reads.
func (e *Engine) live() (file.Snapshot, error) {
	snap, err := file.Live(e.dataDir)
	if err != nil || e.keep == nil {
		return snap, err
	}
	filter := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if rel, err := filepath.Rel(e.dataDir, p); err == nil && e.keep(filepath.ToSlash(rel)) {
				out = append(out, p)
			}
		}
		return out
	}
	return file.Snapshot{JSON: filter(snap.JSON), Parquet: filter(snap.Parquet)}, nil
}

// Close releases DuckDB.
func (e *Engine) Close() error {
	return errors.Join(e.db.Close(), e.conn.Close())
}

// Query runs one SQL statement against the current audit files. A statement DuckDB
// rejects is invalid_arguments with DuckDB's message (the caller is the operator, and
// the message is what they need to fix the SQL).
func (e *Engine) Query(ctx context.Context, q string) (*Result, error) {
	if strings.TrimSpace(q) == "" {
		return nil, apperr.New(apperr.InvalidArguments, "empty query")
	}
	e.mu.Lock()
	defer e.mu.Unlock()

	// A compaction may replace JSON files between listing them and reading them.
	// When a query fails and the files have changed, it runs again on the new set.
	const attempts = 3
	snap, err := e.live()
	if err != nil {
		return nil, apperr.Internal(err)
	}
	for i := 1; ; i++ {
		res, err := e.queryOnce(ctx, snap, q)
		if err == nil || i == attempts || ctx.Err() != nil {
			return res, err
		}
		now, lerr := e.live()
		if lerr != nil || reflect.DeepEqual(now, snap) {
			return nil, err
		}
		snap = now
	}
}

func (e *Engine) queryOnce(ctx context.Context, snap file.Snapshot, q string) (*Result, error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, queryError(err)
	}
	defer conn.Close()
	// Athena's type rules are checked against a stand-in view of the same columns
	// first (DuckDB cannot serialize the plan of a view that reads files).
	if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE TEMP VIEW audit_log AS "+emptyView()); err != nil {
		return nil, apperr.Internal(fmt.Errorf("audit query: create view: %w", err))
	}
	if err := checkComparisons(ctx, conn, q); err != nil {
		return nil, err
	}
	// The view is rebuilt for every query on its own connection, because the set of
	// files changes (new hours, compaction) and an empty log must be an empty table.
	if _, err := conn.ExecContext(ctx, viewSQL(snap)); err != nil {
		return nil, apperr.Internal(fmt.Errorf("audit query: create view: %w", err))
	}
	rows, err := conn.QueryContext(ctx, q)
	if err != nil {
		return nil, queryError(err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, queryError(err)
	}
	res := &Result{Columns: make([]string, len(types)), Rows: [][]any{}}
	for i, t := range types {
		res.Columns[i] = t.Name()
	}
	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, queryError(err)
		}
		row := make([]any, len(vals))
		for i, v := range vals {
			row[i] = jsonValue(v, types[i].DatabaseTypeName())
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, queryError(err)
	}
	return res, nil
}

func queryError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return apperr.Wrap(apperr.InvalidArguments, "query cancelled or timed out", err)
	}
	return apperr.Wrap(apperr.InvalidArguments, err.Error(), err)
}

// columns are audit.Record's fields as DuckDB types, in field order, derived from
// the struct so the view cannot drift from the record.
var columns = sync.OnceValue(func() [][2]string {
	var out [][2]string
	for f := range reflect.TypeFor[audit.Record]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		var typ string
		switch f.Type.Kind() {
		case reflect.String:
			typ = "VARCHAR"
		case reflect.Bool:
			typ = "BOOLEAN"
		case reflect.Int, reflect.Int64:
			typ = "BIGINT"
		case reflect.Slice:
			typ = "VARCHAR[]"
		default:
			// A new field kind needs a mapping here; the tests fail before this ships.
			typ = "JSON"
		}
		out = append(out, [2]string{name, typ})
	}
	return out
})

// viewSQL defines audit_log over the snapshot: JSON lines and compacted Parquet, with
// the hive partition columns dt and hour as strings. A torn last line (a crash
// mid-write) is skipped here and reported by file.Scan: ignore_errors turns it into
// a row of NULLs, which the event_id filter drops.
//
// Files of older event versions lack the columns later versions added (1.0 has no
// client_id, event_type or action). Those read as NULL, as they do in Athena over the
// same Parquet files, so a saved query that forgets coalesce fails here too: the
// JSON reader gives a declared column it does not find NULL, and the Parquet files
// are read by name against a typed empty row that declares every column.
func viewSQL(s file.Snapshot) string {
	cols := columns()
	var sel []string
	var decl []string
	for _, c := range cols {
		sel = append(sel, quoteIdent(c[0]))
		decl = append(decl, quoteString(c[0])+": "+quoteString(c[1]))
	}
	sel = append(sel, "dt", "hour")
	selList := strings.Join(sel, ", ")
	empty := emptyView()
	var parts []string
	if len(s.JSON) > 0 {
		parts = append(parts, fmt.Sprintf(
			"SELECT %s FROM read_json(%s, format = 'newline_delimited', columns = {%s}, ignore_errors = true, "+
				"hive_partitioning = true, hive_types_autocast = false) WHERE event_id IS NOT NULL",
			selList, pathList(s.JSON), strings.Join(decl, ", ")))
	}
	if len(s.Parquet) > 0 {
		parts = append(parts, fmt.Sprintf(
			"SELECT %s FROM (%s UNION ALL BY NAME SELECT * FROM read_parquet(%s, union_by_name = true, "+
				"hive_partitioning = true, hive_types_autocast = false))",
			selList, empty, pathList(s.Parquet)))
	}
	if len(parts) == 0 {
		parts = append(parts, empty)
	}
	return "CREATE OR REPLACE TEMP VIEW audit_log AS " + strings.Join(parts, " UNION ALL ")
}

// emptyView is a typed row of every audit_log column, and no rows.
func emptyView() string {
	var typed []string
	for _, c := range columns() {
		typed = append(typed, fmt.Sprintf("CAST(NULL AS %s) AS %s", c[1], quoteIdent(c[0])))
	}
	typed = append(typed, "CAST(NULL AS VARCHAR) AS dt", "CAST(NULL AS VARCHAR) AS hour")
	return "SELECT " + strings.Join(typed, ", ") + " WHERE false"
}

func pathList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = quoteString(p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
func quoteIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// jsonValue turns a value scanned from DuckDB into one encoding/json can write and a
// table printer can show.
func jsonValue(v any, dbType string) any {
	switch x := v.(type) {
	case nil, string, bool, int64:
		return x
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
		return fmt.Sprint(x)
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case duckdb.Decimal:
		return jsonFloat(x.Float64())
	case time.Time:
		switch dbType {
		case "DATE":
			return x.UTC().Format(time.DateOnly)
		case "TIME":
			return x.Format("15:04:05.000000")
		}
		return x.UTC().Format(time.RFC3339Nano)
	case duckdb.Interval:
		return map[string]any{"months": int64(x.Months), "days": int64(x.Days), "micros": x.Micros}
	case duckdb.UUID:
		return x.String()
	case *duckdb.UUID:
		return x.String()
	case []byte:
		return string(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e, "")
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e, "")
		}
		return out
	case duckdb.Map:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(jsonValue(k, ""))] = jsonValue(e, "")
		}
		return out
	default:
		return fmt.Sprint(x)
	}
}

// jsonFloat keeps NaN and infinities, which JSON cannot carry, as strings.
func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}

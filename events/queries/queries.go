// Package queries holds the saved admin queries over the audit log, one .sql file
// each, written in SQL that runs unchanged on Athena (Trino) and on DuckDB with the
// macros of shared/audit/query.
//
// Each file starts with a "-- <description>" line: the CDK stack uses it as the
// Athena named query's description, and `aacmcp audit query --saved` lists it.
// Every query reads the table audit_log; in Athena that is the Glue table of the
// workgroup's database, locally the DuckDB view over the audit files.
package queries

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
)

// DeliveryLag is how far behind now a saved query's window must end so that Athena
// has the records the local files have: Firehose with dynamic partitioning may
// deliver up to 1.5x its buffer interval late (infra checks this against the
// stream's interval). denial_spike_tokens ends its windows this long ago.
const DeliveryLag = 10 * time.Minute

// FS holds the .sql files.
//
//go:embed *.sql
var FS embed.FS

// Names returns the saved query names (file names without .sql), sorted.
func Names() []string {
	// fs.Glob fails only on a malformed pattern; this one is constant.
	entries, _ := fs.Glob(FS, "*.sql")
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = strings.TrimSuffix(e, ".sql")
	}
	return names
}

// Query is a saved query.
type Query struct {
	Name        string
	Description string // the first line's comment
	SQL         string // the whole file
}

// Get returns the saved query name. The error names the queries that exist.
func Get(name string) (Query, error) {
	b, err := FS.ReadFile(path.Clean(name) + ".sql")
	if err != nil || strings.ContainsAny(name, "/\\") {
		return Query{}, fmt.Errorf("no saved query %q (saved queries: %s)", name, strings.Join(Names(), ", "))
	}
	sql := string(b)
	first, _, _ := strings.Cut(sql, "\n")
	desc, _ := strings.CutPrefix(strings.TrimSpace(first), "--")
	return Query{Name: name, Description: strings.TrimSpace(desc), SQL: sql}, nil
}

// All returns every saved query in name order.
func All() []Query {
	var out []Query
	for _, n := range Names() {
		q, err := Get(n)
		if err == nil {
			out = append(out, q)
		}
	}
	return out
}

package query

import (
	"fmt"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// Bind puts params into the ? placeholders of sql, in order, as Athena applies a
// StartQueryExecution's ExecutionParameters: each value is SQL text (a string is
// given with its quotes, see Literal) that replaces one placeholder. A ? inside a
// string literal, a quoted identifier or a comment is not a placeholder. The saved
// report queries are bound this way on DuckDB, and by the Athena stand-in, so the
// text both engines run is the same.
func Bind(sql string, params []string) (string, error) {
	var b strings.Builder
	n := 0
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case c == '\'' || c == '"':
			end := closing(sql, i+1, c)
			b.WriteString(sql[i:end])
			i = end - 1
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = len(sql) - i
			}
			b.WriteString(sql[i : i+end])
			i += end - 1
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return "", apperr.New(apperr.InvalidArguments, "unterminated /* comment")
			}
			b.WriteString(sql[i : i+2+end+2])
			i += 2 + end + 1
		case c == '?':
			if n >= len(params) {
				return "", apperr.New(apperr.InvalidArguments, fmt.Sprintf("the query has more than %d parameter placeholders", len(params)))
			}
			b.WriteString(params[n])
			n++
		default:
			b.WriteByte(c)
		}
	}
	if n != len(params) {
		return "", apperr.New(apperr.InvalidArguments, fmt.Sprintf("%d parameters given for %d placeholders", len(params), n))
	}
	return b.String(), nil
}

// closing returns the index just past the quote q that closes the quoted text
// starting at from; a doubled quote is an escaped one. Unterminated text runs to the
// end (the engine reports it).
func closing(sql string, from int, q byte) int {
	for i := from; i < len(sql); i++ {
		if sql[i] == q {
			if i+1 < len(sql) && sql[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(sql)
}

// Literal is s as a SQL string literal, the form a string execution parameter takes.
func Literal(s string) string { return quoteString(s) }

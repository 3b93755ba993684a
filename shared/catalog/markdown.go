package catalog

import (
	"fmt"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// MarkdownTable renders the tool table of the README from the catalog, so the
// documentation cannot drift from what the server enforces (a test compares them).
func (c *Catalog) MarkdownTable() string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	var b strings.Builder
	b.WriteString("| tool | readOnly | destructive | idempotent | openWorld | scopes | confirm | idempotency_key |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, t := range c.tools {
		a := t.Annotations
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | `%s` | %s | %s |\n",
			t.Name, yes(a.ReadOnly), yes(a.Destructive), yes(a.Idempotent), yes(a.OpenWorld),
			strings.Join(t.Scopes, "` `"), requiredIf(t.RequiresConfirm()), acceptedIf(t.AcceptsIdempotencyKey()))
	}
	return b.String()
}

func requiredIf(b bool) string {
	if b {
		return "required"
	}
	return "-"
}

func acceptedIf(b bool) string {
	if b {
		return "accepted"
	}
	return "-"
}

// ErrorCodesMarkdown renders docs/architecture.md's error-code table from apperr, for the same
// reason: status codes and audit outcomes come from the code that applies them.
func ErrorCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | REST status | on `/mcp` | audit outcome | meaning |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, c := range apperr.Codes {
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s | %s |\n", c, c.HTTPStatus(), c.Spec().MCPForm, c.Outcome(), c.Describe())
	}
	return b.String()
}

package cli

import (
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// toolJSON is one tool in `aacmcp tools --json`: the catalog entry with the MCP
// annotation names, so scripts can compare it with what tools/list returns.
type toolJSON struct {
	Name                  string          `json:"name"`
	Title                 string          `json:"title"`
	Description           string          `json:"description"`
	Annotations           annotationsJSON `json:"annotations"`
	Scopes                []string        `json:"scopes"`
	RequiresConfirm       bool            `json:"requires_confirm"`
	AcceptsIdempotencyKey bool            `json:"accepts_idempotency_key"`
	InputSchema           json.RawMessage `json:"input_schema"`
	OutputSchema          json.RawMessage `json:"output_schema"`
}

type annotationsJSON struct {
	ReadOnlyHint    bool `json:"readOnlyHint"`
	DestructiveHint bool `json:"destructiveHint"`
	IdempotentHint  bool `json:"idempotentHint"`
	OpenWorldHint   bool `json:"openWorldHint"`
}

func newToolsCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "tools",
		Short: "Show the tool catalog: annotations and required scopes",
		Long: `Show every tool the server exposes, in catalog order, with its four MCP safety
annotations and the scopes a token needs to call it. Destructive tools need the JSON
boolean confirm: true in their arguments.`,
		Args: wrapArgs(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			// No handler runs here, so the catalog needs no dispatcher.
			tools := catalog.New(catalog.Deps{}).Tools()
			if asJSON {
				out := make([]toolJSON, 0, len(tools))
				for _, t := range tools {
					out = append(out, toolJSON{
						Name: t.Name, Title: t.Title, Description: t.Description,
						Annotations: annotationsJSON{
							ReadOnlyHint: t.Annotations.ReadOnly, DestructiveHint: t.Annotations.Destructive,
							IdempotentHint: t.Annotations.Idempotent, OpenWorldHint: t.Annotations.OpenWorld,
						},
						Scopes: t.Scopes, RequiresConfirm: t.Annotations.Destructive,
						AcceptsIdempotencyKey: t.AcceptsIdempotencyKey(),
						InputSchema:           t.InputSchema, OutputSchema: t.OutputSchema,
					})
				}
				return writeJSON(c.OutOrStdout(), out)
			}
			tb := newTable(c.OutOrStdout(), "TOOL", "READ-ONLY", "DESTRUCTIVE", "IDEMPOTENT", "OPEN-WORLD", "SCOPES", "TITLE")
			for _, t := range tools {
				a := t.Annotations
				tb.row(t.Name, yesNo(a.ReadOnly), yesNo(a.Destructive), yesNo(a.Idempotent), yesNo(a.OpenWorld),
					strings.Join(t.Scopes, " "), t.Title)
			}
			return tb.flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the catalog as JSON, schemas included")
	return c
}

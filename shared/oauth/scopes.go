package oauth

import (
	"slices"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// scopeInfo is what the consent page says about one scope: what it means and which
// tools it unlocks, straight from the catalog, so the page cannot drift from what
// the guard enforces.
type scopeInfo struct {
	Name  string
	What  string
	Tools []toolInfo
}

type toolInfo struct {
	Name, Title string
	Destructive bool
	Annotations string
	// AlsoNeeds lists the tool's other required scopes ("" when this one suffices).
	AlsoNeeds string
}

var scopeWhat = map[string]string{
	"issues:read":    "Read issues: list, search and open them.",
	"issues:write":   "Create, change and delete issues.",
	"comments:read":  "Read the comments on issues.",
	"comments:write": "Add and delete comments.",
	"dashboard:read": "Read the workspace's daily tool usage.",
	"agents:write":   "Assign issues to AI agents.",
	"autopilot:run":  "Start autopilot runs of agents on issues.",
}

func scopeCatalog(c *catalog.Catalog) []scopeInfo {
	tools := c.Tools()
	out := make([]scopeInfo, 0, len(auth.AllScopes))
	for _, s := range auth.AllScopes {
		si := scopeInfo{Name: s, What: scopeWhat[s]}
		for _, t := range tools {
			if !slices.Contains(t.Scopes, s) {
				continue
			}
			a := t.Annotations
			si.Tools = append(si.Tools, toolInfo{
				Name: t.Name, Title: t.Title, Destructive: a.Destructive,
				Annotations: annotationText(a.ReadOnly, a.Destructive, a.Idempotent, a.OpenWorld),
				AlsoNeeds:   strings.Join(minus(t.Scopes, []string{s}), ", "),
			})
		}
		out = append(out, si)
	}
	return out
}

func (s *Server) scope(name string) scopeInfo {
	for _, si := range s.scopes {
		if si.Name == name {
			return si
		}
	}
	return scopeInfo{Name: name}
}

// isReadScope: the scopes a person who asked for nothing in particular is offered
// checked. Writes stay unchecked, so allowing without reading grants only reads.
func isReadScope(s string) bool { return strings.HasSuffix(s, ":read") }

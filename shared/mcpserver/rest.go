package mcpserver

import (
	"encoding/json"
	"net/http"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/confirm"
)

// ToolAnnotations is the annotation block of GET /tools, with MCP's names.
type ToolAnnotations struct {
	ReadOnlyHint    bool `json:"readOnlyHint"`
	DestructiveHint bool `json:"destructiveHint"`
	IdempotentHint  bool `json:"idempotentHint"`
	OpenWorldHint   bool `json:"openWorldHint"`
}

// ToolInfo is one entry of GET /tools: the catalog entry plus what it means for
// this caller.
type ToolInfo struct {
	Name                  string          `json:"name"`
	Title                 string          `json:"title"`
	Description           string          `json:"description"`
	Annotations           ToolAnnotations `json:"annotations"`
	Scopes                []string        `json:"scopes"`
	InputSchema           json.RawMessage `json:"input_schema"`
	OutputSchema          json.RawMessage `json:"output_schema"`
	Allowed               bool            `json:"allowed"`
	RequiresConfirm       bool            `json:"requires_confirm"`
	AcceptsIdempotencyKey bool            `json:"accepts_idempotency_key"`
}

// ToolList is the body of GET /tools.
type ToolList struct {
	// DestructiveConfirmation is the caller's workspace policy for destructive
	// tools (flag, elicit or require; docs/security.md section 7), as the guard
	// enforces it: a client that cannot elicit learns up front whether its deletes
	// will be refused with human_confirmation_required.
	DestructiveConfirmation confirm.Policy `json:"destructive_confirmation"`
	Tools                   []ToolInfo     `json:"tools"`
}

// restOriginRefused is the REST endpoints' answer to a browser origin not allowed.
func restOriginRefused(w http.ResponseWriter) {
	writeJSON(w, http.StatusForbidden, map[string]string{"error": "origin not allowed", "code": "forbidden"})
}

// serveToolList is GET /tools: every tool, in catalog order, whether or not this
// caller may use it (allowed: its scopes and its role). Introspection is not a tool invocation and is not audited.
func (h *handler) serveToolList(w http.ResponseWriter, r *http.Request) {
	if !h.originAllowed(r) {
		restOriginRefused(w)
		return
	}
	p, ok := h.authenticate(w, r, "", nil, nil, false)
	if !ok {
		return
	}
	// allowed is what a call would be allowed now: scopes and the role in the
	// member record, read at list time.
	permitted, err := h.guard.Permitted(r.Context(), *p)
	if err != nil {
		h.log.Error("member record not read for GET /tools", "request_id", stateOf(r.Context()).requestID, "err", err)
		writeJSON(w, http.StatusInternalServerError, apperr.Internal(err).Body())
		return
	}
	policy, aerr := h.guard.DestructiveConfirmation(r.Context(), p.WorkspaceID)
	if aerr != nil {
		h.log.Error("confirmation policy not read for GET /tools", "request_id", stateOf(r.Context()).requestID, "err", aerr)
		writeJSON(w, aerr.Code.HTTPStatus(), aerr.Body())
		return
	}
	list := ToolList{DestructiveConfirmation: policy, Tools: []ToolInfo{}}
	for _, t := range h.cat.Tools() {
		list.Tools = append(list.Tools, ToolInfo{
			Name:        t.Name,
			Title:       t.Title,
			Description: t.Description,
			Annotations: ToolAnnotations{
				ReadOnlyHint:    t.Annotations.ReadOnly,
				DestructiveHint: t.Annotations.Destructive,
				IdempotentHint:  t.Annotations.Idempotent,
				OpenWorldHint:   t.Annotations.OpenWorld,
			},
			Scopes:                t.Scopes,
			InputSchema:           t.InputSchema,
			OutputSchema:          t.OutputSchema,
			Allowed:               permitted(t),
			RequiresConfirm:       t.RequiresConfirm(),
			AcceptsIdempotencyKey: t.AcceptsIdempotencyKey(),
		})
	}
	writeJSON(w, http.StatusOK, list)
}

// serveToolCall is POST /tools/{name}: the body is the arguments object; the
// answer is the result with 200, or the error body with the code's HTTP status.
func (h *handler) serveToolCall(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r.Context())
	r, body, done, ok := h.admit(w, r, restOriginRefused)
	defer done()
	if !ok {
		return
	}
	name := r.PathValue("name")
	if _, ok := h.authenticate(w, r, name, body, nil, false); !ok {
		return
	}
	res := h.guard.Call(r.Context(), h.baseRequest(r, name, body))
	st.tool, st.outcome = name, res.Record.Outcome
	if e := res.Err; e != nil {
		h.errorHeaders(w, r, e)
		writeJSON(w, e.Code.HTTPStatus(), e.Body())
		return
	}
	if res.Replay {
		w.Header().Set("Idempotent-Replay", "true")
	}
	writeRawJSON(w, http.StatusOK, res.JSON)
}

// ResourceMetadata is the RFC 9728 protected resource metadata document.
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

// serveResourceMetadata answers both the plain and the path-suffixed (/mcp)
// well-known URLs: the resource is the /mcp endpoint either way.
func (h *handler) serveResourceMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, ResourceMetadata{
		Resource:               h.baseURL(r) + "/mcp",
		AuthorizationServers:   h.authorizationServers(r),
		ScopesSupported:        auth.AllScopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           h.cfg.ServerName,
	})
}

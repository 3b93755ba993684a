package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/internal/jsondup"
	"github.com/aacworkflow/aacmcp/shared/internal/jsonstr"
)

// JSON-RPC error codes. The -320xx server range carries the HTTP-level refusals.
const (
	rpcInvalidRequest = -32600
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
	rpcUnauthorized   = -32001
	rpcForbidden      = -32003
)

// _meta keys this server adds to tool definitions and results.
const (
	metaScopes           = "aacmcp/scopes"
	metaRequiresConfirm  = "aacmcp/requires_confirm"
	metaAcceptsIdemKey   = "aacmcp/accepts_idempotency_key"
	metaIdempotentReplay = "aacmcp/idempotent_replay"
)

// rpcEnvelope is the part of a JSON-RPC message the pre-dispatch needs.
type rpcEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	// notification: the message has no id member at all (JSON-RPC 2.0 section 4.1;
	// "id": null is a request, if a discouraged one).
	notification bool
}

// toolCallParams are the params of tools/call, decoded once for every reader in
// the pre-dispatch (authentication, audit, protocol check).
type toolCallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      toolCallMeta    `json:"_meta"`
}

// toolCallMeta is the _meta of tools/call params. Its fields decode exactly as a
// map[string]json.RawMessage field would (the members of a repeated _meta merge, a
// null clears them); members counts the _meta members seen, which tells whether
// fields holds what a decoder keeping only the last _meta would see.
type toolCallMeta struct {
	fields  map[string]json.RawMessage
	members int
}

func (m *toolCallMeta) UnmarshalJSON(data []byte) error {
	m.members++
	return json.Unmarshal(data, &m.fields)
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type rpcErrorMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

func rpcErrorResponse(id json.RawMessage, code int, msg string, data any) rpcErrorMessage {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return rpcErrorMessage{JSONRPC: "2.0", ID: id, Error: rpcError{Code: code, Message: msg, Data: data}}
}

func rpcCodeFor(c apperr.Code) int {
	return c.RPCCode()
}

// parseEnvelope decodes a /mcp body far enough to route it. batch reports a JSON
// array (a JSON-RPC batch); err a body that is not one JSON object.
func parseEnvelope(body []byte) (env rpcEnvelope, batch bool, err error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return env, true, nil
	}
	err = json.Unmarshal(body, &env)
	env.notification = err == nil && env.ID == nil
	if err == nil && !validID(env.ID) {
		env.ID = nil
	}
	return env, false, err
}

// validID accepts the JSON-RPC id forms (string, number, null); anything else is
// not echoed back.
func validID(id json.RawMessage) bool {
	t := bytes.TrimSpace(id)
	if len(t) == 0 {
		return true
	}
	switch t[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'n':
		return true
	}
	return false
}

// parseToolCall decodes tools/call params; malformed params give zero values (the
// call is then refused as naming no known tool, and audited as such) and ok false.
func parseToolCall(params json.RawMessage) (p toolCallParams, ok bool) {
	if json.Unmarshal(params, &p) != nil {
		return toolCallParams{}, false
	}
	return p, true
}

// declaredVersion is the protocol version p's _meta declares, as checkProtocol
// reads it from the raw params (decoding _meta as an *mcp.Meta), without decoding
// them again. It is unknown when the two readings could differ: params that did
// not decode (decoded false) and a repeated _meta, whose members this decoding
// merges where *mcp.Meta keeps the last. A number beyond float64 anywhere in _meta
// makes *mcp.Meta fail to decode, hence declare nothing; it does the same here.
func (p toolCallParams) declaredVersion(decoded bool) bodyVersion {
	switch {
	case !decoded || p.Meta.members > 1:
		return bodyVersion{}
	case p.Meta.members == 0:
		return bodyVersion{known: true}
	}
	for _, raw := range p.Meta.fields {
		if !numbersFitFloat64(raw) {
			return bodyVersion{known: true}
		}
	}
	return bodyVersion{v: metaString(p.Meta.fields, mcp.MetaKeyProtocolVersion), known: true}
}

// numbersFitFloat64 reports whether every number in b, one valid JSON value, is
// within float64's range: what decoding b into an any (as *mcp.Meta does) needs.
func numbersFitFloat64(b []byte) bool {
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			i++
		case c == '-' || ('0' <= c && c <= '9'):
			j := i
			for j < len(b) && isNumberByte(b[j]) {
				j++
			}
			if _, err := strconv.ParseFloat(string(b[i:j]), 64); err != nil {
				return false
			}
			i = j
		default:
			i++
		}
	}
	return true
}

func isNumberByte(c byte) bool {
	return ('0' <= c && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// rpcIDString renders a JSON-RPC id for the audit record.
func rpcIDString(id json.RawMessage) string {
	t := bytes.TrimSpace(id)
	if len(t) == 0 || string(t) == "null" {
		return ""
	}
	if t[0] == '"' {
		if s, err := strconv.Unquote(string(t)); err == nil {
			return s
		}
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	return string(t)
}

// clientInfo reads the self-reported client from a request's _meta (protocol
// 2026-07-28 sends it on every request; a stateless server has no session that
// would remember it from initialize).
func clientInfo(meta map[string]json.RawMessage) (name, version string) {
	raw, ok := meta[mcp.MetaKeyClientInfo]
	if !ok {
		return "", ""
	}
	var impl struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if json.Unmarshal(raw, &impl) != nil {
		return "", ""
	}
	return impl.Name, impl.Version
}

func metaString(meta map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := meta[key]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// serveMCP is POST /mcp. It reads the body once, authenticates, and decides the
// refusals that must not look like tool results (unknown tool, insufficient
// scope: HTTP 403 with a challenge) before mcp-go sees the message; everything else
// goes to mcp-go, whose tool handlers call the guard.
func (h *handler) serveMCP(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r.Context())
	if !h.originAllowed(r) {
		writeJSON(w, http.StatusForbidden, rpcErrorResponse(nil, rpcForbidden, "origin not allowed", nil))
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	env, batch, perr := parseEnvelope(body)
	isCall := perr == nil && !batch && env.Method == string(mcp.MethodToolsCall)
	var (
		tc       toolCallParams
		declared bodyVersion
	)
	if isCall {
		var decoded bool
		tc, decoded = parseToolCall(env.Params)
		declared = tc.declaredVersion(decoded)
	}
	if _, ok := h.authenticate(w, r, tc.Name, tc.Arguments, env.ID, true); !ok {
		return
	}
	if batch {
		writeJSON(w, http.StatusBadRequest, rpcErrorResponse(nil, rpcInvalidRequest, "batch requests are not supported", nil))
		return
	}
	if isCall {
		req := h.baseRequest(r, tc.Name, tc.Arguments)
		req.JSONRPCID = rpcIDString(env.ID)
		req.ClientName, req.ClientVersion = clientInfo(tc.Meta.fields)
		if req.ProtocolVersion == "" {
			req.ProtocolVersion = metaString(tc.Meta.fields, mcp.MetaKeyProtocolVersion)
		}
		st.call = &req
	}
	if name, dup := jsondup.Find(body); dup {
		// Refused before anything reads it further: mcp-go and the pre-dispatch read
		// the last of two members, a proxy or policy layer may have read the first.
		e := apperr.Newf(apperr.InvalidArguments, "the message repeats the member name %s", strconv.Quote(truncateText(name, 64)))
		writeJSON(w, http.StatusBadRequest, rpcErrorResponse(env.ID, rpcInvalidRequest, e.Message, e.Body()))
		if isCall {
			h.guard.RecordRejected(r.Context(), *st.call, e)
			st.invoked = true
			st.tool, st.outcome = tc.Name, string(e.Code.Outcome())
		}
		return
	}
	if isCall && env.notification {
		// A notification gets no response, so a tool run for one would have an
		// effect its sender never learns of; mcp-go ran it or not depending on the
		// headers. It never runs, and the answer is the same whatever the headers:
		// 202 with no body, as Streamable HTTP answers every notification.
		e := apperr.New(apperr.InvalidArguments, "tools/call sent as a notification (no id) is not run")
		h.guard.RecordRejected(r.Context(), *st.call, e)
		st.invoked = true
		st.tool, st.outcome = tc.Name, string(e.Code.Outcome())
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// A message the protocol layer refuses is refused before enforcement: a
	// malformed request is a 400, never a scope challenge.
	pe := checkContentType(r.Header)
	if pe == nil && perr == nil {
		pe = checkProtocol(r.Header, env, declared)
	}
	if pe != nil {
		writeJSON(w, http.StatusBadRequest, rpcErrorResponse(env.ID, pe.code, pe.msg, pe.data))
		if isCall {
			e := apperr.New(apperr.InvalidArguments, "malformed tools/call request")
			h.guard.RecordRejected(r.Context(), *st.call, e)
			st.invoked = true
			st.tool, st.outcome = tc.Name, string(e.Code.Outcome())
		}
		return
	}
	if isCall && h.refuseEarly(w, r, env.ID, *st.call) {
		return
	}
	if isCall && (plainToolCall(r.Header, env) || !mcpDecodes(body)) {
		// mcp-go cannot decode these params (arguments holding a number beyond
		// float64, such as 1e400) and would answer with its decoder's Go text. It is
		// still a tools/call: the guard, whose decoder keeps numbers exact, answers
		// it as on REST (invalid_arguments, as a tool error) and audits it once.
		h.callDirect(w, r, env.ID, *st.call)
		return
	}

	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	// Every /mcp answer depends on the caller's token (tools/list is filtered by
	// scope): no shared cache may keep one.
	w.Header().Set("Cache-Control", "no-store")
	h.mcp.ServeHTTP(w, r)

	if isCall && !st.invoked {
		// mcp-go refused the message before any tool ran (malformed params, an
		// unsupported protocol version...). It is still a tools/call: audit it.
		e := apperr.New(apperr.InvalidArguments, "malformed tools/call request")
		h.guard.RecordRejected(r.Context(), *st.call, e)
		st.tool, st.outcome = tc.Name, string(e.Code.Outcome())
	}
}

// plainToolCall reports whether a tools/call is one that mcp-go would only route to
// the tool handler and wrap: a JSON body, JSON-RPC 2.0, and a pre-2026-07-28
// protocol version in the header (whose results mcp-go leaves undecorated). Such a
// call is answered directly, with its result encoded once (bench/REPORT.md: mcp-go
// re-compacts the encoded result twice, about 44% of a list_issues call); anything
// else still goes through mcp-go.
func plainToolCall(h http.Header, env rpcEnvelope) bool {
	hv := h.Get(mcp.HeaderProtocolVersion)
	if env.JSONRPC != mcp.JSONRPC_VERSION || hv == "" || mcp.IsModernProtocol(hv) || !mcp.IsValidProtocolVersion(hv) {
		return false
	}
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// mcpDecodes reports whether mcp-go can decode body as a tools/call request (it
// decodes the whole message into mcp.CallToolRequest).
func mcpDecodes(body []byte) bool {
	var req mcp.CallToolRequest
	return json.Unmarshal(body, &req) == nil
}

// callDirect runs a tools/call through the guard without mcp-go and writes the
// JSON-RPC response carrying its tool result.
func (h *handler) callDirect(w http.ResponseWriter, r *http.Request, id json.RawMessage, req guard.Request) {
	st := stateOf(r.Context())
	res := h.guard.Call(r.Context(), req)
	st.invoked = true
	st.tool, st.outcome = req.Tool, res.Record.Outcome
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Cache-Control", "no-store")
	if b, ok := toolResponseJSON(id, res); ok {
		writeRawJSON(w, http.StatusOK, b)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		JSONRPC string              `json:"jsonrpc"`
		ID      json.RawMessage     `json:"id"`
		Result  *mcp.CallToolResult `json:"result"`
	}{"2.0", id, toolResult(res)})
}

// refuseEarly answers unknown tools and insufficient scopes as JSON-RPC errors (the
// latter with HTTP 403 and a challenge, which a tool result could not carry). The
// refusal is audited by running the call through the guard, which records it.
func (h *handler) refuseEarly(w http.ResponseWriter, r *http.Request, id json.RawMessage, req guard.Request) bool {
	pre := h.guard.Authorize(req)
	if pre == nil {
		return false
	}
	st := stateOf(r.Context())
	res := h.guard.Call(r.Context(), req)
	st.invoked = true
	st.tool, st.outcome = req.Tool, res.Record.Outcome
	e := res.Err
	if e == nil {
		// Authorize and Call disagree only if the catalog changed between them,
		// which it cannot; answer safely anyway.
		e = pre
	}
	status := http.StatusOK
	if e.Code == apperr.InsufficientScope {
		status = http.StatusForbidden
		h.insufficientScope(w, r, e)
	}
	writeJSON(w, status, rpcErrorResponse(id, rpcCodeFor(e.Code), e.Message, e.Body()))
	return true
}

// newMCPHandler builds the mcp-go server with one tool per catalog entry.
func (h *handler) newMCPHandler() http.Handler {
	s := server.NewMCPServer(h.cfg.ServerName, h.cfg.ServerVersion,
		// Stateless: there is no session to notify of list changes.
		server.WithToolCapabilities(false),
		server.WithToolFilter(h.filterTools),
		// tools/list varies by token: under 2026-07-28 its result says so
		// (cacheScope "private"), whatever mcp-go's default becomes.
		server.WithMethodCacheHints(mcp.MethodToolsList, 0, mcp.CacheScopePrivate),
		server.WithRecovery(),
	)
	for _, t := range h.cat.Tools() {
		s.AddTool(mcpTool(t), h.toolHandler(t.Name))
	}
	return server.NewStreamableHTTPServer(s,
		server.WithStateLess(true),
		server.WithEndpointPath("/mcp"),
		// Host and Origin are checked once, in this package, for every route.
		server.WithDisableLocalhostProtection(true),
		server.WithDisableStreaming(true),
		server.WithStreamableHTTPLogger(h.log),
	)
}

// filterTools keeps the tools the caller may call, in catalog order (mcp-go hands
// them over sorted by name). No principal: none (fail closed).
//
// mcp-go runs the filter for tools/list and for tools/call. For tools/list it is
// the caller's scopes and role (guard.Permitted reads the member record now); a
// member record that cannot be read lists nothing. For a tools/call it stays the
// scopes only: refuseEarly has already answered those, and a role refusal is the
// guard's to make (permission_denied, audited), not mcp-go's "tool not found".
func (h *handler) filterTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	st := stateOf(ctx)
	p := st.principal
	if p == nil {
		return []mcp.Tool{}
	}
	allowed := func(t catalog.Tool) bool { return p.Has(t.Scopes...) }
	if st.call == nil {
		permitted, err := h.guard.Permitted(ctx, *p)
		if err != nil {
			h.log.Error("member record not read; tools/list lists nothing", "request_id", st.requestID, "err", err)
			return []mcp.Tool{}
		}
		allowed = permitted
	}
	byName := make(map[string]mcp.Tool, len(tools))
	for _, t := range tools {
		byName[t.Name] = t
	}
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range h.cat.Tools() {
		if mt, ok := byName[t.Name]; ok && allowed(t) {
			out = append(out, mt)
		}
	}
	return out
}

// mcpTool is the MCP definition of a catalog tool: every annotation explicit (the
// MCP defaults would call most tools destructive and open-world), the scopes and
// confirm/idempotency facts in _meta for clients that want to plan.
func mcpTool(t catalog.Tool) mcp.Tool {
	b := func(v bool) *bool { return &v }
	return mcp.Tool{
		Name:            t.Name,
		Title:           t.Title,
		Description:     t.Description,
		RawInputSchema:  t.InputSchema,
		RawOutputSchema: t.OutputSchema,
		Annotations: mcp.ToolAnnotation{
			Title:           t.Title,
			ReadOnlyHint:    b(t.Annotations.ReadOnly),
			DestructiveHint: b(t.Annotations.Destructive),
			IdempotentHint:  b(t.Annotations.Idempotent),
			OpenWorldHint:   b(t.Annotations.OpenWorld),
		},
		Meta: &mcp.Meta{AdditionalFields: map[string]any{
			metaScopes:          t.Scopes,
			metaRequiresConfirm: t.Annotations.Destructive,
			metaAcceptsIdemKey:  t.AcceptsIdempotencyKey,
		}},
	}
}

// toolHandler runs a tools/call through the guard. Errors become tool results with
// isError (MCP 2025-11-25: the model can read them and act), never JSON-RPC errors.
func (h *handler) toolHandler(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, in mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st := stateOf(ctx)
		st.invoked = true
		var req guard.Request
		if st.call != nil {
			req = *st.call
		} else {
			req.Transport = "mcp"
			req.Args = in.Params.RawArguments
		}
		req.Tool = name
		res := h.guard.Call(ctx, req)
		st.tool, st.outcome = name, res.Record.Outcome
		return toolResult(res), nil
	}
}

func toolResult(res guard.Result) *mcp.CallToolResult {
	if res.Err != nil {
		b, err := json.Marshal(res.Err.Body())
		if err != nil {
			b = []byte(`{"error":"internal error","code":"internal_error"}`)
		}
		// No structuredContent: clients validate it against the output schema even
		// on errors, and the error shape is not the success shape.
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(b))}, IsError: true}
	}
	out := &mcp.CallToolResult{
		Content:              []mcp.Content{mcp.NewTextContent(string(res.JSON))},
		RawStructuredContent: res.JSON,
	}
	if res.Replay {
		out.Meta = &mcp.Meta{AdditionalFields: map[string]any{metaIdempotentReplay: true}}
	}
	return out
}

// toolResponseJSON encodes the JSON-RPC response of a successful, first-time tool
// result with the bytes mcp-go writes for it (keys in its order, strings escaped as
// encoding/json does), but without re-encoding: res.JSON is already compact JSON,
// copied once as structuredContent and once, quoted, as the text content. ok is
// false for results it does not shape (errors, idempotent replays), which take the
// general path.
func toolResponseJSON(id json.RawMessage, res guard.Result) (b []byte, ok bool) {
	if res.Err != nil || res.Replay || len(res.JSON) == 0 {
		return nil, false
	}
	cid, ok := plainID(id)
	if !ok {
		return nil, false
	}
	b = make([]byte, 0, len(responseHead)+len(cid)+len(responseMid)+quotedSize(res.JSON)+
		len(responseTail)+len(res.JSON)+len(responseEnd))
	b = append(b, responseHead...)
	b = append(b, cid...)
	b = append(b, responseMid...)
	// The text content is json.Marshal(string(res.JSON)), escaped in one pass
	// straight into the response (quoting into a buffer of its own, in two passes,
	// was 10.7% of a list_issues call's CPU).
	b = jsonstr.Append(b, res.JSON)
	b = append(b, responseTail...)
	b = append(b, res.JSON...)
	return append(b, responseEnd...), true
}

// The fixed parts of a direct tool response, in mcp-go's key order.
const (
	responseHead = `{"jsonrpc":"2.0","id":`
	responseMid  = `,"result":{"content":[{"type":"text","text":`
	responseTail = `}],"structuredContent":`
	responseEnd  = `}}`
)

// quotedSize is the length of b quoted as a JSON string when b is output of
// encoding/json, which has already escaped everything but '"' and '\\' (bytes.Count
// of one byte is vectorised, so the two counts cost little beside the copy). Other
// input only sizes the buffer too small, which costs a regrowth, not a difference.
func quotedSize(b []byte) int {
	return len(b) + len(`""`) + bytes.Count(b, []byte{'"'}) + bytes.Count(b, []byte{'\\'})
}

// plainID renders a JSON-RPC id as mcp-go echoes it: strings re-encoded by
// encoding/json (HTML-escaped), integers as written. Other forms (1.0, 1e3, null)
// are left to the general path, which normalises them its own way.
func plainID(id json.RawMessage) ([]byte, bool) {
	t := bytes.Trim(id, " \t\r\n") // JSON's whitespace, no more
	if len(t) == 0 {
		return nil, false
	}
	if t[0] == '"' {
		b, err := json.Marshal(json.RawMessage(t))
		return b, err == nil
	}
	digits := bytes.TrimPrefix(t, []byte("-"))
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return nil, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	return t, true
}

// truncateText bounds caller-chosen text quoted in an error message, on a rune
// boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

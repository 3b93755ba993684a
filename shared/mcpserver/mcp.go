package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/internal/jsondup"
	"github.com/aacworkflow/aacmcp/shared/internal/jsonstr"
)

// JSON-RPC error codes. The -320xx server range carries the HTTP-level refusals.
const (
	rpcInvalidRequest = -32600
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
	// badID: the id is an object, an array or a boolean, which JSON-RPC 2.0
	// (section 4) does not allow; ID is then nil.
	badID bool
}

// toolCallParams are the params of tools/call, decoded once for every reader in
// the dispatch (authentication, audit, protocol check, the guard). A repeated
// _meta is refused before any of them reads it (jsondup), so the one map is what
// every reader sees.
type toolCallParams struct {
	Name      string                     `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
	Meta      map[string]json.RawMessage `json:"_meta"`
	// The MRTR retry's members (2026-07-28, SEP-2322), handed to the guard
	// verbatim: the state is sealed and the answers are decoded there, in one
	// place for every transport.
	RequestState   string          `json:"requestState"`
	InputResponses json.RawMessage `json:"inputResponses"`
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
		env.ID, env.badID = nil, true
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

// declaredVersion is the protocol version p's _meta declares, for checkProtocol.
// tools/call is answered here, not by mcp-go, so this decoding is the only reading
// of it; params that did not decode declare none.
func (p toolCallParams) declaredVersion(decoded bool) bodyVersion {
	if !decoded {
		return bodyVersion{known: true}
	}
	return bodyVersion{v: metaString(p.Meta, mcp.MetaKeyProtocolVersion), known: true}
}

// requestIDOf is the id of the response to a request with id raw, as mcp-go's
// RequestId decodes it (string; number as int64 when integral, else float64;
// null or invalid: none). A number, the usual id, is parsed with strconv as
// encoding/json parses a float64, rather than through RequestId.UnmarshalJSON,
// which first fails to decode it as a string and allocates that error.
func requestIDOf(raw json.RawMessage) mcp.RequestId {
	var id mcp.RequestId
	if len(raw) == 0 {
		return id
	}
	if c := raw[0]; c == '-' || (c >= '0' && c <= '9') {
		// raw is one valid JSON value (parseEnvelope), so this is a JSON number;
		// one out of float64's range fails here and below alike.
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			if f == float64(int64(f)) {
				return mcp.NewRequestId(int64(f))
			}
			return mcp.NewRequestId(f)
		}
	}
	if json.Unmarshal(raw, &id) != nil {
		return mcp.RequestId{}
	}
	return id
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

// canElicitForm reports whether a request's _meta declares form elicitation in
// its client capabilities. From 2026-07-28 there is no initialize handshake, so
// each request says what its client can do; "elicitation": {} with neither mode
// named means form, as the spec keeps it for clients older than the modes.
func canElicitForm(meta map[string]json.RawMessage) bool {
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	var caps mcp.ClientCapabilities
	if json.Unmarshal(raw, &caps) != nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// canElicitURL reports whether a request's client capabilities declare URL
// elicitation, which the policy approve uses to send its approval page.
func canElicitURL(meta map[string]json.RawMessage) bool {
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	var caps mcp.ClientCapabilities
	return json.Unmarshal(raw, &caps) == nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
}

func metaString(meta map[string]json.RawMessage, key string) string {
	raw, ok := meta[key]
	if !ok {
		return ""
	}
	// Declared here, not above: &s escapes into json.Unmarshal, so s is a heap
	// allocation on every call that reaches its declaration, member or not.
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// serveMCP is POST /mcp. It reads the body once, authenticates, and decides the
// protocol refusals before anything runs. A tools/call is answered here, by
// callTool through the guard; every other method goes to mcp-go, whose tool
// handlers are never called (errToolsCallDispatched).
func (h *handler) serveMCP(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r.Context())
	r, body, done, ok := h.admit(w, r, func(w http.ResponseWriter) {
		writeJSON(w, http.StatusForbidden, rpcErrorResponse(nil, rpcForbidden, "origin not allowed", nil))
	})
	defer done()
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
		req.ClientName, req.ClientVersion = clientInfo(tc.Meta)
		if req.ProtocolVersion == "" {
			req.ProtocolVersion = metaString(tc.Meta, mcp.MetaKeyProtocolVersion)
		}
		if mcp.IsModernProtocol(req.ProtocolVersion) {
			// Only 2026-07-28 can carry an input_required result back; older
			// revisions keep the flag behaviour whatever their _meta says.
			// checkProtocol refuses the call below if header and body disagree.
			req.CanElicit = canElicitForm(tc.Meta)
			req.CanElicitURL = canElicitURL(tc.Meta)
			req.RequestState = tc.RequestState
			req.InputResponses = tc.InputResponses
		}
		st.call = &req
	}
	if env.badID {
		// Not a request: its answer could not carry its id (mcp-go answered id
		// null), so no result, and no effect, may come of it.
		e := apperr.New(apperr.InvalidArguments, "the id must be a string, a number or null")
		writeJSON(w, http.StatusBadRequest, rpcErrorResponse(nil, rpcInvalidRequest, e.Message, e.Body()))
		h.rejectCall(r, isCall, e)
		return
	}
	if name, dup := jsondup.Find(body); dup {
		// Refused before anything reads it further: mcp-go and the pre-dispatch read
		// the last of two members (names folded as encoding/json folds them), a
		// proxy or policy layer may have read the first.
		e := apperr.Newf(apperr.InvalidArguments, "the message repeats the member name %s", strconv.Quote(truncateText(name, 64)))
		writeJSON(w, http.StatusBadRequest, rpcErrorResponse(env.ID, rpcInvalidRequest, e.Message, e.Body()))
		h.rejectCall(r, isCall, e)
		return
	}
	if isCall {
		// No object of the body repeats a name, so neither does the arguments
		// object inside it: the guard is told, and does not look again.
		st.call.NamesChecked = true
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
	if isCall {
		h.callTool(w, r, env, *st.call)
		return
	}

	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	// Every /mcp answer depends on the caller's token (tools/list is filtered by
	// scope): no shared cache may keep one.
	w.Header().Set("Cache-Control", "no-store")
	h.mcp.ServeHTTP(w, r)
}

// rejectCall audits a tools/call refused before it reached the guard (once, as
// every refused call is); for any other message it does nothing.
func (h *handler) rejectCall(r *http.Request, isCall bool, e *apperr.Error) {
	if !isCall {
		return
	}
	st := stateOf(r.Context())
	h.guard.RecordRejected(r.Context(), *st.call, e)
	st.invoked = true
	st.tool, st.outcome = st.call.Tool, string(e.Code.Outcome())
}

// callTool answers a tools/call: the guard runs it once, and its one result
// decides the answer. An unknown tool or insufficient scope is a JSON-RPC error
// (the latter with HTTP 403 and a challenge, which a tool result could not carry);
// every other outcome is a tool result, isError for a refusal the model can act on
// (MCP 2025-11-25). mcp-go does not see tools/call: its handler would re-encode
// the result twice (bench/REPORT.md), and this server would have to smuggle the
// prepared request to it through the context.
func (h *handler) callTool(w http.ResponseWriter, r *http.Request, env rpcEnvelope, req guard.Request) {
	st := stateOf(r.Context())
	res := h.guard.Call(r.Context(), req)
	st.invoked = true
	st.tool, st.outcome = req.Tool, res.Record.Outcome
	// Every answer below goes through writeJSON, which sets Cache-Control.
	if e := res.Err; e != nil && (e.Code == apperr.InsufficientScope || e.Code == apperr.UnknownTool) {
		status := http.StatusOK
		if e.Code == apperr.InsufficientScope {
			status = http.StatusForbidden
			h.insufficientScope(w, r, e)
		}
		writeJSON(w, status, rpcErrorResponse(env.ID, rpcCodeFor(e.Code), e.Message, e.Body()))
		return
	}
	id := requestIDOf(env.ID)
	if ir := res.InputRequired; ir != nil {
		// Only a 2026-07-28 request sets CanElicit, so this answer never goes
		// to a client that could not read it.
		writeJSON(w, http.StatusOK, inputRequiredResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: h.inputRequiredResult(ir)})
		return
	}
	result := toolResult(res)
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		// What mcp-go stamps on every 2026-07-28 result (server.decorateResult);
		// checkProtocol has made the header and the body's _meta agree.
		result.ResultType = mcp.ResultTypeComplete
		result.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: h.cfg.ServerName, Version: h.cfg.ServerVersion})
	}
	writeAppendedJSON(w, http.StatusOK, func(dst []byte) ([]byte, error) { return appendToolCallResponse(dst, id, result) })
}

// inputRequiredResponse answers a destructive tools/call that a person must
// confirm first (MRTR, 2026-07-28): the form to show them and the sealed state
// the client echoes on its retry.
type inputRequiredResponse struct {
	JSONRPC string                   `json:"jsonrpc"`
	ID      mcp.RequestId            `json:"id"`
	Result  *mcp.InputRequiredResult `json:"result"`
}

// inputRequiredResult builds the input_required result with mcp-go's builder,
// so the wire shape is the one its client (and the spec's schema) reads, and
// stamps the serverInfo every 2026-07-28 result carries. It is an
// InputRequiredResult rather than a CallToolResult: the latter's encoding would
// add an empty content array that the spec's input_required shape has not.
func (h *handler) inputRequiredResult(ir *guard.InputRequired) *mcp.InputRequiredResult {
	params := mcp.ElicitationParams{
		Mode:            mcp.ElicitationModeForm,
		Message:         ir.Question.Message,
		RequestedSchema: ir.Question.Schema,
	}
	if ir.URL != "" {
		params = mcp.ElicitationParams{Mode: mcp.ElicitationModeURL, Message: ir.Message, URL: ir.URL, ElicitationID: ir.ID}
	}
	tr := server.NewInputRequestBuilder(ir.State).Elicit(confirm.ElicitationID, params).ToolResult()
	out := &mcp.InputRequiredResult{Result: tr.Result, MultiRoundTripResult: tr.MultiRoundTripResult}
	out.EnsureResultMeta().SetServerInfo(mcp.Implementation{Name: h.cfg.ServerName, Version: h.cfg.ServerVersion})
	return out
}

// appendToolCallResponse appends the JSON-RPC response to a tools/call that
// carries r, followed by a newline, byte for byte what encoding/json writes for
// mcp.JSONRPCResponse{ID: id, Result: r} (FuzzToolCallResponse holds the two equal).
// It is written by hand because encoding/json validates and compacts the output of
// every json.Marshaler it meets, json.RawMessage included: structuredContent, a page
// of 25 issues, was scanned byte by byte a second time, about a quarter of a
// list_issues call's CPU (docs/decisions.md, "The tools/call response is written by
// hand"). Copying it
// unread is safe because guard.Result.JSON is always json.Marshal's own output, or
// bytes equal to it (its contract), so compacting it again would change nothing. The
// members are in mcp-go's order (its MarshalJSON goes through a map: sorted keys).
func appendToolCallResponse(dst []byte, id mcp.RequestId, r *mcp.CallToolResult) ([]byte, error) {
	idJSON, err := id.MarshalJSON() // json.Marshal of a string, number or nil: compact already
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"jsonrpc":"`+mcp.JSONRPC_VERSION+`","id":`...)
	dst = append(append(dst, idJSON...), `,"result":{`...)
	if r.Meta != nil {
		b, err := json.Marshal(r.Meta)
		if err != nil {
			return dst, err
		}
		dst = append(append(append(dst, `"_meta":`...), b...), ',')
	}
	dst = append(dst, `"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		// toolResult makes plain text content; anything else takes encoding/json's path.
		if tc, ok := c.(mcp.TextContent); ok && tc.Annotations == nil && tc.Meta == nil {
			dst = jsonstr.Append(append(dst, `{"type":`...), tc.Type)
			dst = append(jsonstr.Append(append(dst, `,"text":`...), tc.Text), '}')
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return dst, err
		}
		dst = append(dst, b...)
	}
	dst = append(dst, ']')
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if r.ResultType != "" {
		dst = jsonstr.Append(append(dst, `,"resultType":`...), r.ResultType)
	}
	if len(r.RawStructuredContent) > 0 {
		dst = append(append(dst, `,"structuredContent":`...), r.RawStructuredContent...)
	}
	return append(dst, "}}\n"...), nil
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
		s.AddTool(mcpTool(t), notDispatched)
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
// them over sorted by name): its scopes and role (guard.Permitted reads the member
// record now). No principal, or a member record that cannot be read: none (fail
// closed). Only tools/list reaches it: tools/call never gets to mcp-go.
func (h *handler) filterTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	st := stateOf(ctx)
	if st.principal == nil {
		return []mcp.Tool{}
	}
	allowed, err := h.guard.Permitted(ctx, *st.principal)
	if err != nil {
		h.log.Error("member record not read; tools/list lists nothing", "request_id", st.requestID, "err", err)
		return []mcp.Tool{}
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
			metaRequiresConfirm: t.RequiresConfirm(),
			metaAcceptsIdemKey:  t.AcceptsIdempotencyKey(),
		}},
	}
}

// errToolsCallDispatched is what mcp-go's tool handler would answer: serveMCP
// answers every tools/call itself (callTool), so mcp-go registers the tools only
// to list them.
var errToolsCallDispatched = errors.New("tools/call is answered by serveMCP, not mcp-go")

func notDispatched(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errToolsCallDispatched
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
		Content:              []mcp.Content{mcp.NewTextContent(resultText(res.JSON))},
		RawStructuredContent: res.JSON,
	}
	if res.Replay {
		out.Meta = &mcp.Meta{AdditionalFields: map[string]any{metaIdempotentReplay: true}}
	}
	return out
}

// resultText is a tool's JSON result as the text content that carries it too,
// sharing its bytes instead of copying a result that can be a page of issues:
// the guard never changes a Result's JSON once Call has returned it (see
// guard.Result), so the string is as immutable as a string must be.
func resultText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
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

// Protocol revisions. mcp-go speaks every revision in mcp.ValidProtocolVersions and
// decides per request which era (initialize handshake, or the sessionless
// 2026-07-28 core) a message belongs to. This file adds the transport checks that
// must run before enforcement: a request the protocol layer would refuse as
// malformed must get its 400, not a 403 scope challenge or a tool result that the
// guard produced (and audited) for a message that was never valid.

// protocolError is a transport-level refusal of a /mcp message: HTTP 400 with a
// JSON-RPC error body.
type protocolError struct {
	code int
	msg  string
	data any
}

// bodyVersion is the protocol version a message's params declare in _meta, when
// the caller has read it already (known); "" declares none.
type bodyVersion struct {
	v     string
	known bool
}

// checkProtocol validates the MCP-Protocol-Version header against the revisions this
// server speaks and, for a 2026-07-28 (or later) request, the version declared in
// the body's _meta and the Mcp-Method / Mcp-Name headers that must mirror the body
// (SEP-2243). A missing header is accepted: 2025-03-26 clients send none, and the
// initialize request of later revisions precedes the negotiation. declared spares
// decoding the params again when the caller knows the body's version (a tools/call
// decodes its params once for every reader); its answer is the same either way.
func checkProtocol(header http.Header, env rpcEnvelope, declared bodyVersion) *protocolError {
	hv := header.Get(mcp.HeaderProtocolVersion)
	mv := declared.v
	if !declared.known {
		mv = metaProtocolVersion(env.Params)
	}

	// A 2026-07-28 request carries the version twice; when one place names a
	// supported 2026-07-28+ revision and the other differs, the disagreement is
	// the answer (HeaderMismatch), even when the other value is unknown.
	modernValid := func(v string) bool { return mcp.IsValidProtocolVersion(v) && mcp.IsModernProtocol(v) }
	if hv != "" && mv != "" && hv != mv && (modernValid(hv) || modernValid(mv)) {
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: mcp.HeaderProtocolVersion + " header " + hv + " does not match request " + mcp.MetaKeyProtocolVersion + " " + mv}
	}
	for _, v := range []string{hv, mv} {
		if v != "" && !mcp.IsValidProtocolVersion(v) {
			e := mcp.UnsupportedProtocolVersionError{Version: v, Supported: mcp.ValidProtocolVersions}.JSONRPCError()
			return &protocolError{code: e.Error.Code, msg: e.Error.Message, data: e.Error.Data}
		}
	}
	if !mcp.IsModernProtocol(hv) && !mcp.IsModernProtocol(mv) {
		return nil
	}
	// From 2026-07-28 the version travels in both places and they must agree.
	switch {
	case hv == "":
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: mcp.HeaderProtocolVersion + " header is required for requests carrying " + mcp.MetaKeyProtocolVersion}
	case mv == "":
		return &protocolError{code: mcp.INVALID_PARAMS, msg: "missing or invalid _meta field " + mcp.MetaKeyProtocolVersion}
	case hv != mv:
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: mcp.HeaderProtocolVersion + " header " + hv + " does not match request " + mcp.MetaKeyProtocolVersion + " " + mv}
	}
	if env.Method == "" {
		// A response or a message without a method: mcp-go refuses it.
		return nil
	}
	if err := mcp.ValidateStandardHeaders(header.Get, mv, mcp.MCPMethod(env.Method), env.Params); err != nil {
		var hm mcp.HeaderMismatchError
		if errors.As(err, &hm) {
			return &protocolError{code: mcp.HEADER_MISMATCH, msg: hm.Error()}
		}
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: "header mismatch"}
	}
	return nil
}

// metaProtocolVersion reads the protocol version declared in params' _meta as
// mcp-go reads it (an *mcp.Meta). Malformed params are mcp-go's to report (as
// -32602); here they only mean that no version is declared in the body.
func metaProtocolVersion(params json.RawMessage) string {
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Meta.ProtocolVersion()
}

// checkContentType refuses a body not declared as JSON, as the transport requires.
// mcp-go would refuse it too, but with a plain-text body; this answer is JSON-RPC
// like every other refusal on /mcp.
func checkContentType(header http.Header) *protocolError {
	ct := header.Get("Content-Type")
	if ct == "application/json" {
		return nil // what clients send; ParseMediaType would accept it, after allocating
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &protocolError{code: rpcInvalidRequest, msg: "Content-Type must be application/json"}
	}
	return nil
}

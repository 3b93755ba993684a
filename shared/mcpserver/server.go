// Package mcpserver is aacmcp's HTTP surface (docs/architecture.md section 5): MCP Streamable
// HTTP on /mcp (stateless, JSON responses), the REST routes /tools and
// /tools/{name}, RFC 9728 protected resource metadata, and /healthz.
//
// Every tool invocation, whichever route it comes by, goes through the same
// guard.Guard, so enforcement and audit are identical on both transports. This
// package only adds what is HTTP's: body limits, Host and Origin checks, bearer
// challenges, status codes, and JSON-RPC framing.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/guard"
	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
)

// DefaultMaxBodyBytes caps request bodies when Config.MaxBodyBytes is zero.
const DefaultMaxBodyBytes = 1 << 20

// Config configures the HTTP surface.
type Config struct {
	// PublicURL is the externally visible base URL (scheme://host[/base]). Empty:
	// derived per request from X-Forwarded-Proto and Host, plus BasePath.
	PublicURL string
	// BasePath is a prefix the outside world sees before every route, such as an API
	// Gateway stage ("/prod"). It is used in derived URLs and stripped from incoming
	// paths that carry it.
	BasePath string
	// AuthorizationServers are advertised in the protected resource metadata, after
	// the built-in one when OAuth is set.
	AuthorizationServers []string
	// OAuth is the built-in OAuth 2.1 authorization server (shared/oauth), served on
	// this origin with the public base URL as its issuer; nil serves none.
	OAuth AuthorizationServer
	// AllowedOrigins are the browser origins /mcp accepts (exact match). A request
	// without Origin is always accepted (non-browser clients send none).
	AllowedOrigins []string
	// AllowedHosts are the Host values accepted. Empty: loopback only (localhost,
	// 127.0.0.1, [::1], any port), against DNS rebinding. "*": any host, for
	// deployments where a gateway owns Host.
	AllowedHosts []string
	// MaxBodyBytes caps request bodies (default DefaultMaxBodyBytes); larger bodies
	// get 413 before anything is parsed.
	MaxBodyBytes int64
	// CPUSlots bounds the tool calls (POST /mcp, POST /tools/{name}) that run at
	// once, handing a free slot to the one that arrived first; a call gives its slot
	// up while it waits for the store's writer or the audit log. 0 runs every call
	// at once, as the Lambda function does (one call per instance). See
	// docs/architecture.md, "Oldest call first".
	CPUSlots int
	// ServerName and ServerVersion are reported in MCP initialize and the metadata.
	ServerName, ServerVersion string
	Logger                    *slog.Logger
}

// handler is the whole HTTP surface.
type handler struct {
	cfg     Config
	guard   *guard.Guard
	cat     *catalog.Catalog
	auth    PrincipalSource
	log     *slog.Logger
	mux     *http.ServeMux
	mcp     http.Handler
	maxBody int64
	slots   *cpuslot.Gate // nil: no bound
}

// New returns the HTTP handler serving every route of docs/architecture.md section 5.
func New(cfg Config, g *guard.Guard, cat *catalog.Catalog, src PrincipalSource) http.Handler {
	h := &handler{cfg: cfg, guard: g, cat: cat, auth: src, log: cfg.Logger, maxBody: cfg.MaxBodyBytes}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.cfg.ServerName == "" {
		h.cfg.ServerName = "aacmcp"
	}
	if h.cfg.ServerVersion == "" {
		h.cfg.ServerVersion = "dev"
	}
	h.cfg.BasePath = "/" + strings.Trim(h.cfg.BasePath, "/")
	if h.cfg.BasePath == "/" {
		h.cfg.BasePath = ""
	}
	h.cfg.PublicURL = strings.TrimRight(h.cfg.PublicURL, "/")
	h.mcp = h.newMCPHandler()
	if cfg.CPUSlots > 0 {
		h.slots = cpuslot.New(cfg.CPUSlots)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", h.serveMCP)
	mux.HandleFunc("/mcp", methodNotAllowed)
	mux.HandleFunc("GET /tools", h.serveToolList)
	mux.HandleFunc("POST /tools/{name}", h.serveToolCall)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", h.serveResourceMetadata)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", h.serveResourceMetadata)
	mux.HandleFunc("GET /healthz", serveHealth)
	if h.cfg.OAuth != nil {
		mux.HandleFunc("/oauth/", h.serveOAuth)
		for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
			// Every method: the authorization server answers CORS preflights and
			// refuses other methods itself.
			mux.HandleFunc(wk, h.serveOAuth)
			// RFC 8414 section 3.1 inserts the issuer's path after the well-known
			// name: with a base path (an API Gateway stage) the document of issuer
			// https://host/prod is at https://host/.well-known/.../prod, outside
			// the base path, where only the exact suffix is ours to answer.
			mux.HandleFunc(wk+"/{suffix...}", h.serveOAuthSuffixed)
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such route", "code": "not_found"})
	})
	h.mux = mux
	return h
}

// AuthorizationServer answers the OAuth routes; issuer is the request's public base
// URL, so one server serves every name the deployment is reached by.
type AuthorizationServer interface {
	ServeOAuth(w http.ResponseWriter, r *http.Request, issuer string)
}

func (h *handler) serveOAuth(w http.ResponseWriter, r *http.Request) {
	h.cfg.OAuth.ServeOAuth(w, r, h.baseURL(r))
}

func (h *handler) serveOAuthSuffixed(w http.ResponseWriter, r *http.Request) {
	if h.cfg.BasePath == "" || "/"+r.PathValue("suffix") != h.cfg.BasePath {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such route", "code": "not_found"})
		return
	}
	h.cfg.OAuth.ServeOAuth(w, r, h.baseURL(r))
}

// authorizationServers lists the issuers the resource metadata names: the built-in
// server first, then any configured ones.
func (h *handler) authorizationServers(r *http.Request) []string {
	if h.cfg.OAuth == nil {
		return h.cfg.AuthorizationServers
	}
	return append([]string{h.baseURL(r)}, h.cfg.AuthorizationServers...)
}

// methodNotAllowed answers GET and DELETE on /mcp: the server is stateless and
// answers every POST with JSON, so there is no stream to open and no session to end.
func methodNotAllowed(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed; use POST", "code": "method_not_allowed"})
}

func serveHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// ServeHTTP runs the checks every route shares, then the route, and logs one line.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := &reqState{requestID: requestID(r.Header.Get("X-Request-Id")), arrival: start}
	st.rw.ResponseWriter = w
	rw := &st.rw
	st.requestIDHeader[0] = st.requestID
	rw.Header()["X-Request-Id"] = st.requestIDHeader[:]
	r = r.WithContext(context.WithValue(r.Context(), reqStateKey{}, st))

	defer func() {
		if p := recover(); p != nil {
			// net/http would recover too, but would drop the connection without a
			// response and without our log line.
			h.log.Error("panic in HTTP handler", "path", r.URL.Path, "request_id", st.requestID, "panic", p)
			if !rw.wrote {
				writeJSON(rw, http.StatusInternalServerError, apperr.Internal(nil).Body())
			}
		}
		// LogAttrs: typed attributes, no boxing of each value into an any.
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", rw.status()),
			slog.Int64("duration_ms", time.Since(start).Milliseconds()),
			slog.Int64("queued_ms", cpuslot.Queued(st.slotCtx).Milliseconds()), slog.String("request_id", st.requestID),
			slog.String("tool", st.tool), slog.String("outcome", st.outcome))
	}()

	if !h.hostAllowed(r.Host) {
		writeJSON(rw, http.StatusForbidden, map[string]string{"error": "host not allowed", "code": "forbidden"})
		return
	}
	if h.cfg.BasePath != "" {
		if rest, ok := strings.CutPrefix(r.URL.Path, h.cfg.BasePath); ok && (rest == "" || rest[0] == '/') {
			r.URL.Path = "/" + strings.TrimPrefix(rest, "/")
			r.URL.RawPath = ""
		}
	}
	if r.ContentLength > h.maxBody {
		tooLarge(rw, r)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(rw, r.Body, h.maxBody)
	}
	h.mux.ServeHTTP(rw, r)
}

// admit is what both call endpoints (POST /mcp, POST /tools/{name}) do before they
// parse anything, in this order: the Origin check (refused in the endpoint's own
// wire format by forbidden), the body, then the CPU slot, so that a refused or slow
// request holds no slot. ok=false means the response is written or nobody waits for
// one; done is to be deferred either way.
func (h *handler) admit(w http.ResponseWriter, r *http.Request, forbidden func(http.ResponseWriter)) (_ *http.Request, body []byte, done func(), ok bool) {
	if !h.originAllowed(r) {
		forbidden(w)
		return r, nil, func() {}, false
	}
	body, ok = readBody(w, r)
	if !ok {
		return r, nil, func() {}, false
	}
	r, done, ok = h.takeSlot(r)
	return r, body, done, ok
}

// takeSlot waits for the call's CPU slot (Config.CPUSlots) once its body is read:
// a client slow to send its body holds no slot. ok=false means the client went away
// while the call was queued; there is nobody to answer.
func (h *handler) takeSlot(r *http.Request) (_ *http.Request, done func(), ok bool) {
	if h.slots == nil {
		return r, func() {}, true
	}
	st := stateOf(r.Context())
	ctx, done, err := h.slots.Enter(r.Context(), st.arrival)
	if err != nil {
		st.outcome = "client_gone" // for the access log
		return r, done, false
	}
	st.slotCtx = ctx
	return r.WithContext(ctx), done, true
}

// readBody reads the (already size-capped) body; ok=false means the response has
// been written (413 or 400).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil {
		return nil, true
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			tooLarge(w, r)
			return nil, false
		}
		writeJSON(w, http.StatusBadRequest, apperr.New(apperr.InvalidArguments, "could not read the request body").Body())
		return nil, false
	}
	return b, true
}

func tooLarge(w http.ResponseWriter, r *http.Request) {
	msg := "request body too large"
	if transportOf(r) == audit.TransportMCP {
		writeJSON(w, http.StatusRequestEntityTooLarge, rpcErrorResponse(nil, rpcInvalidRequest, msg, nil))
		return
	}
	writeJSON(w, http.StatusRequestEntityTooLarge, apperr.New(apperr.InvalidArguments, msg).Body())
}

// hostAllowed implements Config.AllowedHosts.
func (h *handler) hostAllowed(host string) bool {
	if slices.Contains(h.cfg.AllowedHosts, "*") {
		return true
	}
	name := hostOnly(host)
	name = strings.Trim(strings.ToLower(name), "[]")
	if len(h.cfg.AllowedHosts) == 0 {
		return name == "localhost" || name == "127.0.0.1" || name == "::1"
	}
	for _, a := range h.cfg.AllowedHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(strings.Trim(a, "[]"), name) {
			return true
		}
	}
	return false
}

// originAllowed: no Origin is fine (not a browser); otherwise an exact match of
// the allow-list, or a loopback page talking to a server reached on loopback (what
// the MCP SDKs' localhost protection accepts and the conformance suite's
// dns-rebinding-protection scenario requires). A rebinding attack cannot pass: its
// Host is the attacker's name, which hostAllowed has already refused.
func (h *handler) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o == "" || slices.Contains(h.cfg.AllowedOrigins, o) || (loopbackOrigin(o) && isLoopbackHost(r.Host))
}

// baseURL is the public base URL for links in responses.
func (h *handler) baseURL(r *http.Request) string {
	if h.cfg.PublicURL != "" {
		return h.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ","); p != "" {
		if p = strings.ToLower(strings.TrimSpace(p)); p == "http" || p == "https" {
			scheme = p
		}
	}
	return scheme + "://" + r.Host + h.cfg.BasePath
}

// resourceMetadataURL is the RFC 9728 document for the /mcp resource.
func (h *handler) resourceMetadataURL(r *http.Request) string {
	return h.baseURL(r) + "/.well-known/oauth-protected-resource/mcp"
}

// authenticate resolves the principal or writes the refusal (401, or 500 when the
// source itself failed) and audits it once. tool and jsonrpcID describe the request
// for the audit record; onMCP selects the JSON-RPC error framing.
func (h *handler) authenticate(w http.ResponseWriter, r *http.Request, tool string, args json.RawMessage, rpcID json.RawMessage, onMCP bool) (*auth.Principal, bool) {
	st := stateOf(r.Context())
	p, err := h.auth.Principal(r)
	if err == nil {
		st.principal = &p
		return &p, true
	}
	e := apperr.As(err)
	req := h.baseRequest(r, tool, args)
	req.JSONRPCID = rpcIDString(rpcID)
	var rej *auth.RejectError
	if errors.As(err, &rej) && rej.TokenID != "" {
		// An expired or revoked token is known: its public id helps spot misuse.
		req.Principal = &auth.Principal{TokenID: rej.TokenID, ClientID: rej.ClientID}
	}
	h.guard.RecordRejected(r.Context(), req, e)
	st.tool, st.outcome = tool, string(e.Code.Outcome())

	status := http.StatusUnauthorized
	if e.Code != apperr.InvalidToken {
		status = http.StatusInternalServerError
		e = apperr.Internal(err)
		h.log.Error("principal source failed", "request_id", st.requestID, "err", err)
	} else {
		h.errorHeaders(w, r, e)
	}
	if onMCP {
		writeJSON(w, status, rpcErrorResponse(rpcID, rpcCodeFor(e.Code), e.Message, e.Body()))
	} else {
		writeJSON(w, status, e.Body())
	}
	return nil, false
}

// baseRequest fills the transport facts of a guard.Request.
func (h *handler) baseRequest(r *http.Request, tool string, args json.RawMessage) guard.Request {
	st := stateOf(r.Context())
	transport := transportOf(r)
	src := hostOnly(r.RemoteAddr)
	// Header keys in their canonical spelling (mcp.HeaderProtocolVersion is):
	// Header.Get allocates to canonicalize any other.
	return guard.Request{
		Principal:       st.principal,
		Tool:            tool,
		Args:            args,
		Transport:       transport,
		RequestID:       st.requestID,
		ProtocolVersion: r.Header.Get(mcp.HeaderProtocolVersion),
		UserAgent:       r.Header.Get("User-Agent"),
		SourceIP:        src,
		PublicURL:       h.baseURL(r),
	}
}

// transportOf is the audit transport of a request to this server: the one route
// reading every record builder shares (record.Route), on the path the mux routed.
func transportOf(r *http.Request) string {
	_, transport := record.Route("", r.URL.Path, nil)
	return transport
}

// hostOnly is the host of a "host:port" address, and addr itself when it has no
// port. A colon is checked for first because net.SplitHostPort allocates its error,
// and a Host header without a port is common; every address SplitHostPort accepts
// contains one, so the answer is the same.
func hostOnly(addr string) string {
	if strings.IndexByte(addr, ':') < 0 {
		return addr
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// errorHeaders sets the header apperr.Table gives e's code (Spec.Header), so that
// no transport decides per code which headers an error answer carries.
func (h *handler) errorHeaders(w http.ResponseWriter, r *http.Request, e *apperr.Error) {
	switch e.Code.Spec().Header {
	case apperr.HeaderBearerChallenge:
		challenge := `Bearer resource_metadata="` + h.resourceMetadataURL(r) + `"`
		if strings.TrimSpace(r.Header.Get("Authorization")) != "" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	case apperr.HeaderScopeChallenge:
		h.insufficientScope(w, r, e)
	case apperr.HeaderRetryAfter:
		w.Header().Set("Retry-After", strconv.Itoa(max(e.Body().RetryAfterSeconds, 1)))
	case apperr.HeaderNone:
	}
}

// insufficientScope sets the RFC 6750 challenge for a scope refusal.
func (h *handler) insufficientScope(w http.ResponseWriter, r *http.Request, e *apperr.Error) {
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+
		strings.Join(e.Scopes, " ")+`", resource_metadata="`+h.resourceMetadataURL(r)+`"`)
}

// requestID keeps a client's X-Request-Id when it is short and plain, else mints one.
// '=' is plain: API Gateway's extended request ids (the id on AWS) end in base64
// padding.
func requestID(v string) string {
	if n := len(v); n > 0 && n <= 128 && !strings.ContainsFunc(v, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:=", c))
	}) {
		return v
	}
	// Encoded on the stack: ULID.String allocates a scratch buffer besides the string.
	var b [ulid.EncodedSize]byte
	_ = ulid.Make().MarshalTextTo(b[:]) // cannot fail: b has the encoded size
	return string(b[:])
}

// reqState is per-request state shared by the middleware, the routes and the MCP
// tool handlers (which see the request's context through mcp-go).
type reqState struct {
	requestID string
	// requestIDHeader is the X-Request-Id header's value slice, allocated with
	// the state instead of by Header.Set.
	requestIDHeader [1]string
	principal       *auth.Principal
	// call is the tools/call the /mcp pre-dispatch prepared for the tool handler.
	call    *guard.Request
	invoked bool // a tools/call reached the guard (and so was audited)
	// For the access log.
	tool, outcome string
	// rw is the request's response writer, allocated with the state it belongs to.
	rw statusWriter
	// arrival orders the call among those waiting for a CPU slot.
	arrival time.Time
	// slotCtx carries the call's slot ticket, once it has one: the access log reads
	// how long the call queued for a core (cpuslot.Queued).
	slotCtx context.Context
}

type reqStateKey struct{}

func stateOf(ctx context.Context) *reqState {
	if st, ok := ctx.Value(reqStateKey{}).(*reqState); ok {
		return st
	}
	return &reqState{}
}

// statusWriter records the status for the access log. It deliberately does not
// implement http.Flusher: mcp-go then never upgrades a response to SSE, so every
// /mcp answer is a single JSON document (what API Gateway and Lambda can carry).
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if !s.wrote {
		s.code, s.wrote = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) status() int {
	if !s.wrote {
		return http.StatusOK
	}
	return s.code
}

// jsonWriter is an encoder bound to its buffer. They are pooled: writeJSON
// answers every /mcp call, and json.Marshal would allocate each answer anew.
type jsonWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
	raw []byte // for the hand-written encoders (writeAppendedJSON)
}

var jsonWriters = sync.Pool{New: func() any {
	jw := &jsonWriter{}
	jw.enc = json.NewEncoder(&jw.buf)
	return jw
}}

// maxPooledJSON bounds the buffers kept: one large answer's buffer is dropped
// rather than held for every later small one.
const maxPooledJSON = 64 << 10

// writeJSON encodes v as the response body with status: json.Marshal's bytes and
// a newline (what json.Encoder writes).
func writeJSON(w http.ResponseWriter, status int, v any) {
	jw := jsonWriters.Get().(*jsonWriter)
	jw.buf.Reset()
	if err := jw.enc.Encode(v); err != nil {
		// Encode writes nothing when it fails.
		status = http.StatusInternalServerError
		_ = jw.enc.Encode(apperr.Internal(err).Body())
	}
	writeJSONHeader(w, status)
	_, _ = w.Write(jw.buf.Bytes()) // a Writer does not retain what it is given
	if jw.buf.Cap() <= maxPooledJSON {
		jsonWriters.Put(jw)
	}
}

// writeAppendedJSON is writeJSON for a hand-written encoder, which appends the body
// and its newline to the buffer it is given: the same pooled buffers, and the same
// answer when encoding fails (only a value that encoding/json would refuse as well).
func writeAppendedJSON(w http.ResponseWriter, status int, encode func(dst []byte) ([]byte, error)) {
	jw := jsonWriters.Get().(*jsonWriter)
	b, err := encode(jw.raw[:0])
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, apperr.Internal(err).Body())
	} else {
		writeJSONHeader(w, status)
		_, _ = w.Write(b) // a Writer does not retain what it is given
	}
	if cap(b) <= maxPooledJSON {
		jw.raw = b
		jsonWriters.Put(jw)
	}
}

// Header values every JSON answer carries. They are assigned, not Set: Set makes a
// new one-element slice per header per response. Nothing appends to or edits a
// response header's value slice in place (a one-element literal has no spare
// capacity, so an Add copies it), so one slice serves every response.
var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
)

func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	writeJSONHeader(w, status)
	_, _ = w.Write(b)
	_, _ = w.Write([]byte("\n"))
}

func writeJSONHeader(w http.ResponseWriter, status int) {
	hd := w.Header()
	hd["Content-Type"] = headerJSON
	hd["Cache-Control"] = headerNoStore
	w.WriteHeader(status)
}

// isLoopbackHost reports whether a Host header (or URL host) names this machine's
// loopback interface.
func isLoopbackHost(host string) bool {
	name := host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		name = hn
	}
	name = strings.Trim(strings.ToLower(name), "[]")
	return name == "localhost" || name == "127.0.0.1" || name == "::1"
}

// loopbackOrigin reports whether origin is a page served from this machine's
// loopback interface (http or https, any port).
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return false
	}
	return isLoopbackHost(u.Host)
}

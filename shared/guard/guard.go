// Package guard is the enforcement pipeline of aacmcp: one code path, shared by the
// MCP transport and the REST transport, that every tool call goes through in the
// spec's order (docs/architecture.md section 6), one table of steps (pipeline.go):
//
//	principal -> tool -> scope -> confirm -> rate limit -> arguments ->
//	idempotency key -> role -> human confirmation -> invoke, then one audit record
//	and the usage counter
//
// The order is observable and tested: a call that fails two checks is refused by the
// earlier one, whether the steps run in sequence or overlapped (runSteps). Whatever
// happens, including a panicking handler, Call writes exactly one audit record before
// it returns.
package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/confirm"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// DefaultIdempotencyTTL is how long an idempotency key is remembered (docs/architecture.md section 2
// asks for at least 24 h).
const DefaultIdempotencyTTL = 24 * time.Hour

// idempotencyKeyArg is the argument name tools with AcceptsIdempotencyKey take.
const idempotencyKeyArg = catalog.IdempotencyKeyArg

// The record's caps live in shared/audit/record; these names keep the guard's
// tests reading naturally.
const (
	maxAuditText   = record.MaxText
	maxClientID    = record.MaxClientID
	maxRecordBytes = record.MaxLine
)

// Config wires a Guard.
type Config struct {
	Catalog *catalog.Catalog
	Store   store.Queries
	Audit   audit.Sink
	// Limiter throttles calls; nil turns rate limiting off.
	Limiter Limiter
	// Now is the clock; nil means time.Now. Timestamps are taken in UTC.
	Now func() time.Time
	// Logger receives operational logs; nil means slog.Default().
	Logger *slog.Logger
	// IdempotencyTTL overrides DefaultIdempotencyTTL when positive.
	IdempotencyTTL time.Duration
	// HMAC keys args_hmac and idempotency_key_hmac (computed by audit/record) with
	// the deployment's digest key. Nil: a random key for this process (tests). A
	// server sets it, or its digests change at every restart.
	HMAC *audit.HMAC
	// Confirmations and Keyring turn on the workspace policy for destructive
	// tools (flag, elicit, require); either nil keeps every workspace on flag.
	Confirmations store.Confirmations
	Keyring       *confirm.Keyring
	// Approvals holds the policy approve's approvals (shared/approval); nil
	// refuses every destructive call of a workspace on approve as internal_error.
	Approvals store.Approvals
}

// Guard runs tool calls through the enforcement pipeline. It is safe for concurrent
// use; build one per process.
type Guard struct {
	cat     *catalog.Catalog
	store   store.Queries
	sink    audit.Sink
	limiter Limiter
	now     func() time.Time
	log     *slog.Logger
	idemTTL time.Duration
	digest  *audit.HMAC
	// schemas holds every tool's input schema, compiled on the tool's first call
	// (or by SchemaErrors). A schema that does not compile is a catalog defect: the
	// tool answers internal_error.
	schemas map[string]*toolSchema
	// parallelReads: the store's calls are network round trips (ConcurrentReads),
	// so runSteps overlaps the pipeline's round trips (the limiter, the member
	// check, a delete's human confirmation) with the handler, and finish updates
	// usage beside the audit write. On an in-process store both run in sequence,
	// with no goroutines.
	parallelReads bool
	confirms      store.Confirmations
	keys          *confirm.Keyring
	approvals     store.Approvals
}

// toolSchema compiles one tool's input schema once, when first needed. Compiling
// validates the schema against the JSON Schema metaschema, about 0.2 ms a tool: all
// eleven at once were most of the MCP Lambda's own init time, and a Lambda instance
// often serves a few tools only.
type toolSchema struct {
	once sync.Once
	name string
	raw  json.RawMessage
	sch  *jsonschema.Schema
	err  error
	log  *slog.Logger
}

func (ts *toolSchema) get() (*jsonschema.Schema, error) {
	ts.once.Do(func() {
		ts.sch, ts.err = compileSchema(ts.name, ts.raw)
		if ts.err != nil {
			ts.log.Error("tool input schema does not compile; the tool will answer internal_error",
				"tool", ts.name, "err", ts.err)
		}
	})
	return ts.sch, ts.err
}

// New builds a Guard. Input schemas compile on each tool's first call; startup code
// that wants a broken catalog to stop it calls SchemaErrors.
func New(cfg Config) *Guard {
	g := &Guard{
		cat:      cfg.Catalog,
		store:    cfg.Store,
		sink:     cfg.Audit,
		limiter:  cfg.Limiter,
		now:      cfg.Now,
		log:      cfg.Logger,
		idemTTL:  cfg.IdempotencyTTL,
		confirms: cfg.Confirmations,
		keys:     cfg.Keyring,
		digest:   cfg.HMAC,
		schemas:  map[string]*toolSchema{},
	}
	g.approvals = cfg.Approvals
	if g.digest == nil {
		g.digest = audit.EphemeralHMAC()
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.idemTTL <= 0 {
		g.idemTTL = DefaultIdempotencyTTL
	}
	if cr, ok := cfg.Store.(concurrentReader); ok {
		g.parallelReads = cr.ConcurrentReads()
	}
	for _, t := range g.cat.Tools() {
		g.schemas[t.Name] = &toolSchema{name: t.Name, raw: t.InputSchema, log: g.log}
	}
	return g
}

// SchemaErrors compiles every tool's input schema that has not compiled yet and
// reports those that fail (empty when the catalog is sound). Startup code and tests
// use it to fail fast.
func (g *Guard) SchemaErrors() map[string]error {
	out := map[string]error{}
	for name, ts := range g.schemas {
		if _, err := ts.get(); err != nil {
			out[name] = err
		}
	}
	return out
}

// Request is one tool invocation as a transport saw it.
type Request struct {
	// Principal is the authenticated caller; nil when the request carried no valid
	// token.
	Principal *auth.Principal
	Tool      string
	Args      json.RawMessage
	Transport string // audit.TransportMCP or audit.TransportREST

	RequestID, JSONRPCID                       string
	ClientName, ClientVersion, ProtocolVersion string
	UserAgent, SourceIP                        string

	// CanElicit: the request's client capabilities (protocol 2026-07-28) declare
	// form elicitation, so the server may answer input_required.
	CanElicit bool
	// CanElicitURL: they declare URL elicitation, so the policy approve sends the
	// approval link as one rather than in a refusal.
	CanElicitURL bool
	// PublicURL is the server's public base URL as the request reached it (the
	// authorization server's issuer): the approval link's origin.
	PublicURL string
	// RequestState and InputResponses are an MRTR retry's params, verbatim.
	RequestState   string
	InputResponses json.RawMessage
	// NamesChecked: the transport has already refused any message that repeats a
	// member name in one of its objects, Args included (/mcp does, on the whole
	// body, before the call gets here), so the guard does not run the same check on
	// Args again. REST, whose body is Args, leaves it false.
	NamesChecked bool
}

// Result is the outcome of Call.
type Result struct {
	// JSON is the tool's success result, encoded once; nil when Err is set.
	// Nothing changes its bytes after Call returns (a replay's come from the
	// store's copy), so a transport may share them, as shared/mcpserver does
	// for the text content beside structuredContent.
	JSON json.RawMessage
	Err  *apperr.Error
	// Replay is true when JSON is the stored first result of an idempotency key.
	Replay bool
	// Record is the audit record that was written for the call.
	Record audit.Record
	// InputRequired is set, with JSON and Err nil, when a person must confirm
	// before the call runs.
	InputRequired *InputRequired
}

// call is the state of one Call as it moves through the pipeline.
type call struct {
	req     Request
	tool    catalog.Tool
	known   bool
	args    *args
	started time.Time // monotonic, for duration_ms
	now     time.Time // UTC, the one clock reading handlers see
	rec     audit.Record

	// What the steps decide, for the steps after them (pipeline.go).
	key    string         // the idempotency key, "" without one
	role   store.Role     // the member check's; read through memberRole
	held   *InputRequired // the question, when the human confirmation holds the call
	out    answer         // the handler's
	checks [numSteps]*check
	// running counts the steps started on goroutines of their own (checks).
	running int
}

// Call runs one tool invocation through the whole pipeline and returns after its
// audit record has been delivered.
func (g *Guard) Call(ctx context.Context, req Request) Result {
	c := g.newCall(req)
	res := g.run(ctx, c)
	g.finish(ctx, c, &res, true)
	return res
}

// RecordRejected audits a request that a transport refused before it could reach
// Call, such as one with a missing or invalid token. It writes exactly one record.
func (g *Guard) RecordRejected(ctx context.Context, req Request, err *apperr.Error) {
	if err == nil {
		err = apperr.Internal(fmt.Errorf("RecordRejected called without an error"))
	}
	c := g.newCall(req)
	if t, ok := g.cat.Lookup(req.Tool); ok {
		g.describeTool(c, t)
	}
	if len(req.Args) > 0 {
		c.args = parseArgs(req.Args, req.NamesChecked)
		record.SetArgs(&c.rec, g.digest, c.args.canonical)
	}
	res := Result{Err: err}
	// Counted like any other call: a malformed call of a known tool by an
	// authenticated caller is an invocation (as an error), and the usage replay
	// (shared/usagereplay) counts its audit record the same way. A rejected token
	// names no workspace, so finish does not count it. The Lambda authorizer's
	// guard only writes records and has no store: nothing to count there.
	g.finish(ctx, c, &res, g.store != nil)
}

func (g *Guard) newCall(req Request) *call {
	return &call{req: req, started: time.Now(), now: g.now().UTC(), rec: record.Start(record.Request{
		Principal:       req.Principal,
		Tool:            req.Tool,
		Transport:       req.Transport,
		RequestID:       req.RequestID,
		JSONRPCID:       req.JSONRPCID,
		ClientName:      req.ClientName,
		ClientVersion:   req.ClientVersion,
		ProtocolVersion: req.ProtocolVersion,
		UserAgent:       req.UserAgent,
		SourceIP:        req.SourceIP,
	})}
}

func (g *Guard) describeTool(c *call, t catalog.Tool) {
	c.tool, c.known = t, true
	record.Describe(&c.rec, t.Annotations.ReadOnly, t.Annotations.Destructive, t.Scopes)
}

// run executes the pipeline (runSteps) up to the encoded result. A panic anywhere
// in it is an internal_error, never a crash and never a missing audit record.
func (g *Guard) run(ctx context.Context, c *call) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("panic in tool pipeline", "tool", c.req.Tool, "panic", fmt.Sprint(r))
			res = Result{Err: apperr.Internal(fmt.Errorf("panic: %v", r))}
			// No step started beside the one that panicked may still be running
			// once the record is written.
			c.verdict(numSteps, nil)
		}
	}()
	switch err := g.runSteps(ctx, c); err {
	case nil:
		return Result{JSON: c.out.JSON, Err: c.out.Err, Replay: c.out.Replay}
	case held:
		return Result{InputRequired: c.held}
	default:
		return Result{Err: err}
	}
}

// idempotencyKey is the call's idempotency key, "" for a tool that takes none, and
// records its HMAC (the idempotency key step).
func (g *Guard) idempotencyKey(c *call, t catalog.Tool, a *args) string {
	if !t.AcceptsIdempotencyKey() {
		return ""
	}
	key := a.stringArg(idempotencyKeyArg)
	record.SetIdempotencyKey(&c.rec, g.digest, key)
	return key
}

// runTool runs the handler once the pipeline has admitted the call (or, on a
// network store, beside its checks): through its idempotency record when the call
// carries a key.
func (g *Guard) runTool(ctx context.Context, c *call, tc catalog.Call) Result {
	if tc.IdempotencyKey != "" {
		return g.runIdempotent(ctx, c, tc, tc.IdempotencyKey)
	}
	return g.invoke(ctx, c, tc)
}

func (g *Guard) rateLimit(ctx context.Context, p auth.Principal, tool string, now time.Time) *apperr.Error {
	if g.limiter == nil {
		return nil
	}
	retry, err := g.limiter.Allow(ctx, p, tool, now)
	if err != nil {
		// Fail open: see Limiter. The failure is loud so it is noticed.
		g.log.Warn("rate limiter unavailable; call allowed", "tool", tool, "workspace_id", p.WorkspaceID, "err", err)
		return nil
	}
	if retry > 0 {
		return &apperr.Error{Code: apperr.RateLimited, Message: "rate limit exceeded for this token and tool", RetryAfter: retry}
	}
	return nil
}

func (g *Guard) validate(t catalog.Tool, a *args) *apperr.Error {
	ts := g.schemas[t.Name]
	if ts == nil {
		return apperr.Internal(fmt.Errorf("no input schema for %s", t.Name))
	}
	sch, err := ts.get()
	if err != nil {
		return apperr.Internal(err)
	}
	if a.problem != "" {
		return apperr.New(apperr.InvalidArguments, a.problem)
	}
	if err := sch.Validate(any(a.obj)); err != nil {
		return apperr.New(apperr.InvalidArguments, describeValidation(err, a.obj))
	}
	return nil
}

// role reads the caller's member record now, not from the token, so a demotion or
// removal takes effect on the next call.
func (g *Guard) role(ctx context.Context, p auth.Principal, t catalog.Tool) (store.Role, *apperr.Error) {
	m, err := g.store.GetMember(ctx, p.WorkspaceID, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return "", apperr.New(apperr.PermissionDenied, "you are not a member of this workspace")
	}
	if err != nil {
		return "", errorOf(err)
	}
	if !m.Role.Valid() {
		return "", apperr.New(apperr.PermissionDenied, "your membership in this workspace has no valid role")
	}
	if !t.Annotations.ReadOnly && !m.Role.CanWrite() {
		return "", apperr.Newf(apperr.PermissionDenied, "the %s role cannot use %s", m.Role, t.Name)
	}
	return m.Role, nil
}

// concurrentReader is a store whose reads are network round trips (DynamoDB), so
// two independent reads issued together cost one round trip of waiting instead of
// two. A store whose reads are in-process CPU work (SQLite) does not implement it
// or answers false: running its reads side by side only adds a goroutine spawn and
// a futex wake-up to every call.
type concurrentReader interface {
	ConcurrentReads() bool
}

// readerOnly hides the Writer half of the store from read-only handlers, so that
// not even a type assertion can reach a mutating method.
type readerOnly struct{ store.Reader }

// invoke runs the handler and encodes its result once. A panicking handler becomes
// internal_error here, so that callers (idempotency) can release what they hold.
func (g *Guard) invoke(ctx context.Context, c *call, tc catalog.Call) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("panic in tool handler", "tool", c.tool.Name, "panic", fmt.Sprint(r))
			res = Result{Err: apperr.Internal(fmt.Errorf("panic in %s: %v", c.tool.Name, r))}
		}
	}()
	var (
		out any
		err error
	)
	switch {
	case c.tool.Annotations.ReadOnly && c.tool.Read != nil:
		out, err = c.tool.Read(ctx, tc, readerOnly{g.store})
	case !c.tool.Annotations.ReadOnly && c.tool.Write != nil:
		out, err = c.tool.Write(ctx, tc, g.store)
	default:
		err = apperr.Internal(fmt.Errorf("tool %s has no handler for its annotations", c.tool.Name))
	}
	if err != nil {
		return Result{Err: errorOf(err)}
	}
	// The hot results (shared/catalog's issues and issue pages) encode themselves
	// without reflection, byte for byte as json.Marshal does (catalog's tests hold
	// them to it). Any other result, and one such an encoder refuses, goes through
	// json.Marshal, so that a failure is reported with encoding/json's own error.
	var b []byte
	a, ok := out.(interface{ AppendJSON([]byte) ([]byte, error) })
	if ok {
		b, err = a.AppendJSON(nil)
	}
	if !ok || err != nil {
		if b, err = json.Marshal(out); err != nil {
			return Result{Err: apperr.Internal(fmt.Errorf("encode result of %s: %w", c.tool.Name, err))}
		}
	}
	if c.rec.ResourceID == "" && !c.tool.Annotations.ReadOnly {
		// A create names no target in its arguments; the created item's id is the
		// resource the call touched.
		record.SetResourceID(&c.rec, topLevelID(b))
	}
	return Result{JSON: b}
}

// topLevelID returns the "id" string of a JSON object ("" if none).
func topLevelID(b []byte) string {
	var v struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	return v.ID
}

// finish stamps the record, then delivers it and bumps the usage counter; both are
// done before finish returns.
//
// On a store whose calls are network round trips (concurrentReader answers true:
// DynamoDB), the usage update runs beside the audit write, so the call waits for
// one round trip instead of two. On any other store (SQLite, where UpdateUsage only
// queues the increment in memory) both run on the caller's goroutine, audit record
// first: a goroutine, a WaitGroup and two closures per call cost more than the
// queueing they would overlap. Either way the record is written and the increment
// is handed to the store before the call is answered; only the order in which the
// two complete differs, and nothing depends on it (the usage replay treats the
// audit log as the journal of every increment, whatever the order).
//
// If the audit sink fails, a successful result is replaced by internal_error: the
// side effect has happened, but nothing is answered as a success without a record.
// The record itself is written to the log as a fallback line (audit_fallback=true),
// the same convention the Kinesis sink uses on stdout, so it can still be recovered.
// A refusal stays a refusal: it changed nothing, and the caller learns why.
func (g *Guard) finish(ctx context.Context, c *call, res *Result, countUsage bool) {
	end := g.now().UTC()
	code := apperr.Code("")
	switch {
	case res.Err != nil:
		code = res.Err.Code
		res.JSON = nil
		res.Replay = false
	case res.InputRequired != nil:
		// Nothing was deleted: the call is held until a person confirms, and
		// the retry is a call (and a record) of its own. Recording it as a
		// success would count a delete that did not happen (docs/decisions.md).
		code = apperr.HumanConfirmationRequired
		if res.InputRequired.URL != "" {
			code = apperr.HumanApprovalRequired
		}
	}
	record.Finish(&c.rec, end, code, res.Replay, time.Since(c.started))

	// The caller may have gone away; the record must still be written, within the
	// time the request had (on Lambda, the function's remaining time). The inner
	// context is passed on, not the detached value: boxing that into a
	// context.Context would cost an allocation per use.
	d := detach(ctx)
	defer d.cancel()
	dctx := d.Context

	var auditErr, usageErr error
	switch {
	case !countUsage || !c.known || c.req.Principal == nil || c.req.Principal.WorkspaceID == "":
		auditErr = g.sink.Write(dctx, c.rec)
	case g.parallelReads:
		inc := g.usageIncrement(c, end)
		usageDone := make(chan error, 1)
		go func() { usageDone <- g.store.UpdateUsage(dctx, inc) }()
		auditErr = g.sink.Write(dctx, c.rec)
		usageErr = <-usageDone
	default:
		auditErr = g.sink.Write(dctx, c.rec)
		usageErr = g.store.UpdateUsage(dctx, g.usageIncrement(c, end))
	}

	if usageErr != nil {
		g.log.Warn("usage counter not updated", "tool", c.tool.Name, "workspace_id", c.rec.WorkspaceID,
			"event_id", c.rec.EventID, "err", usageErr)
	}
	if auditErr != nil {
		g.log.Error("audit record not delivered", "audit_fallback", true, "record", c.rec, "err", auditErr)
		if res.Err == nil {
			res.JSON, res.Replay, res.InputRequired = nil, false, nil
			res.Err = apperr.Internal(fmt.Errorf("audit: %w", auditErr))
		}
	}
	if res.Err != nil && res.Err.Code == apperr.InternalError {
		g.log.Error("tool call failed", "tool", c.rec.Tool, "request_id", c.rec.RequestID,
			"event_id", c.rec.EventID, "err", res.Err)
	}
	res.Record = c.rec
}

// usageIncrement is the usage count of the call finish has stamped; its event id
// is the record's, which makes a retried or replayed increment count once.
func (g *Guard) usageIncrement(c *call, end time.Time) store.UsageIncrement {
	return store.UsageIncrement{
		WorkspaceID: c.rec.WorkspaceID,
		Date:        end.Format(time.DateOnly),
		Tool:        c.tool.Name,
		Outcome:     c.rec.Outcome,
		EventID:     c.rec.EventID,
	}
}

type detached struct {
	context.Context
	cancel context.CancelFunc
}

// detach keeps ctx's values and deadline but not its cancellation. Only a deadline
// needs a context of its own (and a cancel to release its timer); without one,
// context.WithoutCancel is enough, and a context that can never be cancelled is
// already what detach would return. Each context left out is an allocation saved
// on every call.
func detach(ctx context.Context) detached {
	dl, ok := ctx.Deadline()
	switch {
	case ok:
		c, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl)
		return detached{c, cancel}
	case ctx.Done() == nil:
		return detached{ctx, func() {}}
	default:
		return detached{context.WithoutCancel(ctx), func() {}}
	}
}

func truncate(s string, n int) string { return record.Truncate(s, n) }

func errInvalidToken() *apperr.Error {
	return apperr.New(apperr.InvalidToken, "missing or invalid bearer token")
}

func errUnknownTool(name string) *apperr.Error {
	return apperr.Newf(apperr.UnknownTool, "unknown tool %s", strconv.Quote(truncate(name, 64)))
}

func errInsufficientScope(t catalog.Tool) *apperr.Error {
	e := apperr.Newf(apperr.InsufficientScope, "%s requires scope %s", t.Name, strings.Join(t.Scopes, " "))
	e.Scopes = slices.Clone(t.Scopes)
	return e
}

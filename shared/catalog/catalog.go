// Package catalog declares every tool aacmcp exposes, once: name, title, description,
// input and output schema, the four MCP annotations, the scopes it requires, and its
// handler. MCP registration, tools/list, GET /tools, enforcement, audit fields and the
// README's tool table all derive from this one list (docs/architecture.md section 11).
//
// Handlers run after the guard has checked scopes, confirm, the input schema and
// membership. They report failures as apperr values; the guard maps those to results,
// HTTP statuses and audit outcomes.
package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Annotations are the MCP tool annotations. All four are always sent explicitly: the
// MCP defaults (destructive and open-world true) would misdescribe most tools.
type Annotations struct{ ReadOnly, Destructive, Idempotent, OpenWorld bool }

// Call is what a handler sees. Args have already passed scope, confirm and schema checks.
type Call struct {
	Principal auth.Principal
	// Role gives the caller's role, from the member record read at call time; nil
	// for read-only handlers, which see none. On a network store the member check
	// runs beside a write's handler, so the handler's reads overlap it: Role waits
	// for that check, and answers "" if it refused (the guard then answers with its
	// refusal).
	Role           func() store.Role
	Args           json.RawMessage // validated against the tool's InputSchema
	Now            time.Time       // UTC; one clock per call
	IdempotencyKey string          // "" when absent
}

// KnownRole is a Call's Role where the member check has already decided.
func KnownRole(r store.Role) func() store.Role { return func() store.Role { return r } }

// ReadHandler runs a read-only tool. It gets a store.Reader, so the compiler refuses a
// mutation in it.
type ReadHandler func(ctx context.Context, c Call, r store.Reader) (any, error)

// WriteHandler runs any other tool.
type WriteHandler func(ctx context.Context, c Call, q store.Queries) (any, error)

// reads completes t with its read handler h, which takes the call's arguments decoded
// into A. A is also t.Args, so the struct the schema test checks is, by construction,
// the one the handler gets.
func reads[A any](t Tool, h func(ctx context.Context, c Call, a A, r store.Reader) (any, error)) Tool {
	t.Read, t.Args = decoding(h), *new(A)
	return t
}

// writes is reads for a tool that writes.
func writes[A any](t Tool, h func(ctx context.Context, c Call, a A, q store.Queries) (any, error)) Tool {
	t.Write, t.Args = decoding(h), *new(A)
	return t
}

// decoding runs h on the arguments decoded into A (see decode), S being the store
// access the handler is given.
func decoding[A, S any](h func(context.Context, Call, A, S) (any, error)) func(context.Context, Call, S) (any, error) {
	return func(ctx context.Context, c Call, s S) (any, error) {
		var a A
		if err := decode(c.Args, &a); err != nil {
			return nil, err
		}
		return h(ctx, c, a, s)
	}
}

// prose is a description written as a paragraph in a raw string: line breaks and the
// indentation of its lines are spaces between words, so the text can be reflowed
// freely and needs no escapes.
func prose(s string) string { return strings.Join(strings.Fields(s), " ") }

// Tool is one catalog entry.
type Tool struct {
	Name, Title, Description string
	Annotations              Annotations
	Scopes                   []string        // all required; never empty
	InputSchema              json.RawMessage // JSON Schema 2020-12, additionalProperties:false everywhere
	OutputSchema             json.RawMessage // schema of the success result (an object)
	Read                     ReadHandler     // set iff Annotations.ReadOnly
	Write                    WriteHandler    // set iff !Annotations.ReadOnly
	// ResourceArg names the argument that holds the issue or comment id the call
	// targets, for audit (ResourceID); "" for a tool that targets none.
	ResourceArg string
	// Confirm is what confirming a call means: set iff Annotations.Destructive.
	Confirm *Confirmation
	// Args is a zero value of the struct the handler's arguments are decoded into (reads
	// and writes set it from the handler's type). A test over every tool checks
	// InputSchema against it (each property a field of the same JSON type, required
	// properties the fields the schema requires), so the two cannot drift apart.
	Args any

	// idempotencyKey is computed by New from InputSchema: see AcceptsIdempotencyKey.
	idempotencyKey bool
}

// IdempotencyKeyArg is the argument a retried write carries to get its first result
// again; the guard handles it, before the tool.
const IdempotencyKeyArg = "idempotency_key"

// AcceptsIdempotencyKey reports whether the tool takes IdempotencyKeyArg. It is derived
// from the input schema (which a test checks against Args), never declared beside it,
// so the guard, tools/list, GET /tools and the README table cannot disagree with what
// the schema accepts.
func (t Tool) AcceptsIdempotencyKey() bool { return t.idempotencyKey }

// declaresProperty reports whether schema has a top-level property name.
func declaresProperty(schema json.RawMessage, name string) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	return json.Unmarshal(schema, &s) == nil && s.Properties[name] != nil
}

// ResourceID returns the issue or comment id the arguments target ("" if none), for
// audit. It takes the arguments as the guard decoded them (one JSON object; numbers
// may be json.Number) so that they are not decoded again per call. It never fails: a
// missing or mistyped value, or one longer than maxResourceIDLen, gives "".
func (t Tool) ResourceID(args map[string]any) string {
	if t.ResourceArg == "" {
		return ""
	}
	id, ok := args[t.ResourceArg].(string)
	if !ok || len(id) > maxResourceIDLen {
		return ""
	}
	return id
}

// RequiresConfirm reports whether a call must carry confirm: true. It is the one place
// that rule lives: the guard enforces it, and tools/list, GET /tools and the README
// table publish it.
func (t Tool) RequiresConfirm() bool { return t.Annotations.Destructive }

// Deps are the outside services handlers need.
type Deps struct {
	Dispatcher autopilot.Dispatcher // trigger_autopilot's agent runner
}

// Catalog is the ordered tool list with an index by name. It is immutable after New and
// safe for concurrent use. Callers must not modify the slices and schemas of the tools
// it returns.
type Catalog struct {
	tools  []Tool
	byName map[string]int
}

// registry holds every tool's constructor. Each tool's own file registers it (in an
// init function), so that adding a tool touches that file, its test and generated
// files only, never a central list (docs/adding-a-tool.md).
var registry []registration

type registration struct {
	rank  int
	build func(Deps) Tool
}

// register adds a tool to every catalog New builds. rank is its place in tools/list
// and GET /tools, ascending: docs/architecture.md section 11's order in steps of 10,
// so a new tool takes a free number where it belongs. TestRegistryRanks refuses two
// tools of one rank.
func register(rank int, build func(Deps) Tool) {
	registry = append(registry, registration{rank, build})
}

// New builds the catalog, in rank order (see register).
func New(deps Deps) *Catalog {
	regs := slices.Clone(registry)
	slices.SortStableFunc(regs, func(a, b registration) int { return cmp.Compare(a.rank, b.rank) })
	tools := make([]Tool, len(regs))
	for i, r := range regs {
		tools[i] = r.build(deps)
		tools[i].idempotencyKey = declaresProperty(tools[i].InputSchema, IdempotencyKeyArg)
	}
	c := &Catalog{tools: tools, byName: make(map[string]int, len(tools))}
	for i, t := range tools {
		c.byName[t.Name] = i
	}
	return c
}

// Tools returns every tool in catalog order.
func (c *Catalog) Tools() []Tool {
	out := make([]Tool, len(c.tools))
	copy(out, c.tools)
	return out
}

// Lookup finds a tool by its exact name.
func (c *Catalog) Lookup(name string) (Tool, bool) {
	i, ok := c.byName[name]
	if !ok {
		return Tool{}, false
	}
	return c.tools[i], true
}

package guard

import (
	"context"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// stepID is a step of the pipeline; its value is the step's place in steps, which
// is the order a caller observes: a call failing two steps is refused by the
// earlier one.
type stepID uint8

const (
	stepPrincipal stepID = iota
	stepTool
	stepScope
	stepConfirm
	stepRate
	stepArguments
	stepIdempotency
	stepRole
	stepHuman
	stepInvoke
	numSteps
)

// runsFor says which calls a step applies to. It is a value and not a func, so
// that skipping a step costs a comparison and no indirect call.
type runsFor uint8

const (
	everyCall        runsFor = iota
	withLimiter              // the guard has a rate limiter
	destructiveTools         // the tool is destructive
)

// step is one step of the pipeline. Both orders run the same table (runSteps):
// in sequence on an in-process store, and overlapped where the store's reads are
// network round trips (ConcurrentReads), so the two cannot decide differently.
type step struct {
	name string
	// run decides the step for the call; nil passes the call on, held stops it
	// for a person's answer, any other error refuses it.
	run     func(g *Guard, ctx context.Context, c *call) *apperr.Error
	runsFor runsFor
	// roundTrip: the step waits for a store round trip and yields only its
	// verdict, save the member check's role, which a later step reads through
	// call.memberRole (a wait). Overlapped, it starts on a goroutine of its own
	// and the later steps run beside it.
	roundTrip bool
	// writes: the step may write. Overlapped, its writes wait for the verdict of
	// every round trip started before it (store.WithWriteGate), so a refused or
	// held call writes nothing.
	writes bool
}

// steps is the pipeline, in the spec's order (docs/architecture.md section 6 lists
// the same names, TestStepsAreTheDocumentedOrder). The audit record is not a step:
// Call writes it after the steps, whatever they decided (finish).
var steps = [numSteps]step{
	stepPrincipal:   {name: "principal", run: (*Guard).checkPrincipal},
	stepTool:        {name: "tool", run: (*Guard).lookUpTool},
	stepScope:       {name: "scope", run: (*Guard).checkScope},
	stepConfirm:     {name: "confirm", run: (*Guard).checkConfirm},
	stepRate:        {name: "rate limit", run: (*Guard).checkRate, runsFor: withLimiter, roundTrip: true, writes: true},
	stepArguments:   {name: "arguments", run: (*Guard).checkArguments},
	stepIdempotency: {name: "idempotency key", run: (*Guard).readIdempotencyKey},
	stepRole:        {name: "role", run: (*Guard).checkRole, roundTrip: true},
	stepHuman:       {name: "human confirmation", run: (*Guard).confirmHuman, runsFor: destructiveTools, roundTrip: true, writes: true},
	stepInvoke:      {name: "invoke", run: (*Guard).invokeTool, writes: true},
}

// held is a step's outcome when the call waits for a person (call.held is the
// question). It ends the pipeline as a refusal does, and ranks as one: an earlier
// step's refusal outranks it. It never reaches a caller: run answers held's
// InputRequired instead.
var held = &apperr.Error{Code: apperr.HumanConfirmationRequired, Message: "the call waits for a person's confirmation"}

// runSteps runs every step that applies to the call, in the table's order, and
// answers the earliest refusal (nil when every step passed; the handler's answer
// is then c.out). On a store without ConcurrentReads each step runs and decides
// before the next starts. Otherwise a round-trip step starts on a goroutine and
// the steps after it go on at once: the rate limiter's count, the member record
// and the handler's reads (a delete's also the human confirmation's) are then one
// round trip of waiting instead of three or four. Either way the answer is the
// earliest refusal in the table's order (verdict), and no step writes before the
// steps ahead of it have passed.
func (g *Guard) runSteps(ctx context.Context, c *call) *apperr.Error {
	for i := range steps {
		s, id := &steps[i], stepID(i)
		if !g.applies(s.runsFor, c) {
			continue
		}
		sctx := ctx
		if s.writes && c.running > 0 {
			sctx = store.WithWriteGate(ctx, c.gate(id))
		}
		if s.roundTrip && g.parallelReads {
			c.checks[id] = g.goStep(sctx, s, c)
			c.running++
			continue
		}
		if err := s.run(g, sctx, c); err != nil {
			return c.verdict(id, err)
		}
	}
	return c.verdict(numSteps, nil)
}

func (g *Guard) applies(r runsFor, c *call) bool {
	switch r {
	case withLimiter:
		return g.limiter != nil
	case destructiveTools:
		return c.tool.Annotations.Destructive
	}
	return true
}

// verdict waits for every step started on a goroutine before step upTo and
// answers the earliest one's refusal, or err (upTo's own) if none refused. It
// waits for all of them even once one has refused, so that none is still running
// when the call is answered and its record written.
func (c *call) verdict(upTo stepID, err *apperr.Error) *apperr.Error {
	var out *apperr.Error
	for _, k := range c.checks[:upTo] {
		if e := k.wait(); e != nil && out == nil {
			out = e
		}
	}
	if out == nil {
		out = err
	}
	return out
}

// gate is the write gate of step id: it passes once every round trip started
// before it has passed.
func (c *call) gate(id stepID) func() error {
	return func() error {
		if err := c.verdict(id, nil); err != nil {
			return err
		}
		return nil
	}
}

// memberRole is the caller's role once the member check has decided: at once in
// sequence, after a wait where the check runs beside the step that asks (a
// delete's confirmation and handler read the item first, and the role only to
// judge it). A refused check gives none, so nobody is asked and nothing is judged
// deletable; the call is refused with the check's error anyway.
func (c *call) memberRole() store.Role {
	if c.checks[stepRole].wait() != nil {
		return ""
	}
	return c.role
}

// checkPrincipal refuses a call without one: the transport's authenticate decides
// the principal and answers 401 itself, so only a transport that skipped it gets
// here without one. Nothing is verified again.
func (g *Guard) checkPrincipal(_ context.Context, c *call) *apperr.Error {
	if c.req.Principal == nil {
		return errInvalidToken()
	}
	return nil
}

// lookUpTool finds the tool and reads the arguments, once, for every later step
// and the record.
func (g *Guard) lookUpTool(_ context.Context, c *call) *apperr.Error {
	t, ok := g.cat.Lookup(c.req.Tool)
	if !ok {
		return errUnknownTool(c.req.Tool)
	}
	g.describeTool(c, t)
	a := parseArgs(c.req.Args, c.req.NamesChecked)
	c.args = a
	record.SetArgs(&c.rec, g.digest, a.canonical)
	// confirm_present records whether the caller confirmed: the JSON boolean true,
	// the only value the destructive check accepts.
	c.rec.ConfirmPresent = a.confirmed()
	if a.obj != nil {
		record.SetResourceID(&c.rec, t.ResourceID(a.obj))
	}
	return nil
}

func (g *Guard) checkScope(_ context.Context, c *call) *apperr.Error {
	if !c.req.Principal.Has(c.tool.Scopes...) {
		return errInsufficientScope(c.tool)
	}
	return nil
}

// checkConfirm is the spec's confirm: true rule for destructive tools.
func (g *Guard) checkConfirm(ctx context.Context, c *call) *apperr.Error {
	if c.args.ambiguous {
		// Before confirm: which confirm the caller meant is exactly what is unknown.
		return apperr.New(apperr.InvalidArguments, c.args.problem)
	}
	if !c.tool.RequiresConfirm() {
		return nil
	}
	if !c.args.confirmed() {
		return g.unconfirmed(ctx, c, *c.req.Principal, c.tool, c.args)
	}
	// From here on the call carries the spec's flag; humanConfirmation raises it
	// to elicited once the person is asked.
	record.SetConfirmation(&c.rec, audit.ConfirmationFlag)
	return nil
}

func (g *Guard) checkRate(ctx context.Context, c *call) *apperr.Error {
	return g.rateLimit(ctx, *c.req.Principal, c.tool.Name, c.now)
}

func (g *Guard) checkArguments(_ context.Context, c *call) *apperr.Error {
	return g.validate(c.tool, c.args)
}

func (g *Guard) readIdempotencyKey(_ context.Context, c *call) *apperr.Error {
	c.key = g.idempotencyKey(c, c.tool, c.args)
	return nil
}

func (g *Guard) checkRole(ctx context.Context, c *call) *apperr.Error {
	role, err := g.role(ctx, *c.req.Principal, c.tool)
	c.role = role
	return err
}

// confirmHuman is the workspace's confirmation policy (confirmation.go).
func (g *Guard) confirmHuman(ctx context.Context, c *call) *apperr.Error {
	ir, err := g.humanConfirmation(ctx, c, *c.req.Principal, c.memberRole, c.tool, c.args)
	if err != nil {
		return err
	}
	if ir != nil {
		c.held = ir
		return held
	}
	return nil
}

// invokeTool runs the handler; its answer is c.out. Overlapped, it runs beside the
// round trips, so the answer is used only if they all pass (runSteps), and its
// writes wait for them: a refused call's handler has only read. Read-only
// handlers see no Role (reads are the same for every role).
func (g *Guard) invokeTool(ctx context.Context, c *call) *apperr.Error {
	tc := catalog.Call{Principal: *c.req.Principal, Args: c.args.raw, Now: c.now, IdempotencyKey: c.key}
	if !c.tool.Annotations.ReadOnly {
		tc.Role = c.memberRole
	}
	res := g.runTool(ctx, c, tc)
	c.out = answer{JSON: res.JSON, Err: res.Err, Replay: res.Replay}
	return nil
}

// answer is a handler's Result without the record, which finish adds: a call
// keeps it beside its own record, and a second copy of the record would make
// every call's state a size class larger.
type answer struct {
	JSON   []byte
	Err    *apperr.Error
	Replay bool
}

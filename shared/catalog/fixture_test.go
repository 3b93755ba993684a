package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/memory"
)

// The fixture: workspace "demo" (key AAC) with an admin, two members, a viewer and an
// agent; workspace "other" (key OTH) with its own admin and agent.
const (
	wsDemo     = "demo"
	wsOther    = "other"
	admin      = "ada"
	mia        = "mia"  // member
	ben        = "ben"  // member
	outsider   = "olga" // admin of "other"
	agentID    = "agent-1"
	otherAgent = "agent-x"
)

var testNow = time.Date(2026, 3, 10, 9, 30, 0, 0, time.UTC)

type fixture struct {
	t     *testing.T
	st    *memory.Store
	cat   *Catalog
	disp  *recordingDispatcher
	calls int // calls made so far: the clock
	in    map[string]*jsonschema.Schema
	out   map[string]*jsonschema.Schema
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith uses d as the autopilot dispatcher (a recording one when nil).
func newFixtureWith(t *testing.T, d autopilot.Dispatcher) *fixture {
	t.Helper()
	ctx := t.Context()
	st := memory.New()
	f := &fixture{t: t, st: st, disp: &recordingDispatcher{},
		in: map[string]*jsonschema.Schema{}, out: map[string]*jsonschema.Schema{}}
	if d == nil {
		d = f.disp
	}
	f.cat = New(Deps{Dispatcher: d})
	for _, tool := range f.cat.Tools() {
		f.in[tool.Name] = compileSchema(t, tool.Name+"/input", tool.InputSchema)
		f.out[tool.Name] = compileSchema(t, tool.Name+"/output", tool.OutputSchema)
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
	}
	for _, w := range []store.Workspace{{ID: wsDemo, Key: "AAC", Name: "Demo"}, {ID: wsOther, Key: "OTH", Name: "Other"}} {
		_, err := st.CreateWorkspace(ctx, w)
		must(err)
	}
	for _, m := range []store.Member{
		{WorkspaceID: wsDemo, UserID: admin, Role: store.RoleAdmin},
		{WorkspaceID: wsDemo, UserID: mia, Role: store.RoleMember},
		{WorkspaceID: wsDemo, UserID: ben, Role: store.RoleMember},
		{WorkspaceID: wsOther, UserID: outsider, Role: store.RoleAdmin},
	} {
		_, err := st.UpdateMember(ctx, m)
		must(err)
	}
	for _, a := range []store.Agent{{WorkspaceID: wsDemo, ID: agentID, Name: "Agent One"}, {WorkspaceID: wsOther, ID: otherAgent, Name: "X"}} {
		_, err := st.CreateAgent(ctx, a)
		must(err)
	}
	return f
}

// caller is who makes a call: the role is what the guard would read from the member
// record.
type caller struct {
	ws, user string
	role     store.Role
}

var (
	asAdmin    = caller{wsDemo, admin, store.RoleAdmin}
	asMia      = caller{wsDemo, mia, store.RoleMember}
	asBen      = caller{wsDemo, ben, store.RoleMember}
	asOutsider = caller{wsOther, outsider, store.RoleAdmin}
)

// call runs a tool the way the guard does after its checks: the arguments must pass
// the input schema (a test that sends invalid arguments is a broken test), and a
// success must encode to JSON that passes the output schema. It returns the JSON.
func (f *fixture) call(who caller, tool, args string) (string, error) {
	f.t.Helper()
	return f.callWith(f.st, who, tool, args)
}

func (f *fixture) callWith(q store.Queries, who caller, tool, args string) (string, error) {
	f.t.Helper()
	tl, ok := f.cat.Lookup(tool)
	if !ok {
		f.t.Fatalf("no tool %q", tool)
	}
	if err := f.in[tool].Validate(mustInstance(f.t, args)); err != nil {
		f.t.Fatalf("%s %s: arguments fail the input schema: %v", tool, args, err)
	}
	// Each call happens a second after the previous one, so "most recently updated"
	// has a meaning; all calls stay on testNow's day.
	f.calls++
	c := Call{
		Principal: auth.Principal{WorkspaceID: who.ws, UserID: who.user, TokenID: "tok", Scopes: auth.AllScopes},
		Role:      KnownRole(who.role), Args: json.RawMessage(args), Now: testNow.Add(time.Duration(f.calls) * time.Second),
	}
	var res any
	var err error
	if tl.Annotations.ReadOnly {
		res, err = tl.Read(f.t.Context(), c, q)
	} else {
		res, err = tl.Write(f.t.Context(), c, q)
	}
	if err != nil {
		if res != nil {
			f.t.Errorf("%s returned a result with its error", tool)
		}
		if !decided(err) {
			f.t.Errorf("%s: error %v is neither an apperr value nor a storage error", tool, err)
		}
		return "", err
	}
	b, err := json.Marshal(res)
	if err != nil {
		f.t.Fatalf("%s: result does not encode: %v", tool, err)
	}
	if err := f.out[tool].Validate(mustInstance(f.t, string(b))); err != nil {
		f.t.Errorf("%s: result fails the output schema: %v\n%s", tool, err, b)
	}
	return string(b), nil
}

// ok is call that must succeed; it decodes the result into a map.
func (f *fixture) ok(who caller, tool, args string) map[string]any {
	f.t.Helper()
	s, err := f.call(who, tool, args)
	if err != nil {
		f.t.Fatalf("%s %s: %v", tool, args, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		f.t.Fatal(err)
	}
	return m
}

// fails is a call that must fail with code.
// failsWith is a call that must fail with the storage error kind, passed on as is
// (the guard, not the handler, says what the client sees of it).
func (f *fixture) failsWith(who caller, tool, args string, kind error) {
	f.t.Helper()
	s, err := f.call(who, tool, args)
	if !errors.Is(err, kind) {
		f.t.Errorf("%s %s: error %v (result %s), want %v", tool, args, err, s, kind)
	}
}

func (f *fixture) fails(who caller, tool, args string, code apperr.Code) {
	f.t.Helper()
	s, err := f.call(who, tool, args)
	if got := apperr.CodeOf(err); got != code {
		f.t.Errorf("%s %s: code %q (result %s), want %q", tool, args, got, s, code)
	}
}

// newIssue creates an issue as who and returns its id and key.
func (f *fixture) newIssue(who caller, title string) (id, key string) {
	f.t.Helper()
	m := f.ok(who, "create_issue", `{"title":"`+title+`"}`)
	return m["id"].(string), m["key"].(string)
}

// decided reports whether err is a handler's own decision (an apperr value) or a
// storage error passed on as the store returned it, for the guard to map; anything
// else would reach the client as internal_error.
func decided(err error) bool {
	var ae *apperr.Error
	return errors.As(err, &ae) || store.IsStorage(err)
}

// recordingDispatcher records jobs and fails when told to.
type recordingDispatcher struct {
	mu   sync.Mutex
	jobs []autopilot.Job
	err  error
}

func (d *recordingDispatcher) Dispatch(_ context.Context, j autopilot.Job) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.jobs = append(d.jobs, j)
	return d.err
}

func (d *recordingDispatcher) Jobs() []autopilot.Job {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]autopilot.Job(nil), d.jobs...)
}

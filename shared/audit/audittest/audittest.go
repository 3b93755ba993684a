// Package audittest builds valid audit records for tests of sinks, readers and
// queries.
package audittest

import (
	"slices"
	"sync"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/catalog"
)

// Record returns a valid record of a successful get_issue call of a personal token
// completed at ts, with a fresh event id, changed by each mod in turn.
func Record(ts time.Time, mods ...func(*audit.Record)) audit.Record {
	r := audit.Record{
		EventID:         audit.NewEventIDAt(ts),
		EventVersion:    audit.EventVersion,
		Timestamp:       audit.FormatTime(ts),
		Tool:            "get_issue",
		Outcome:         audit.OutcomeSuccess,
		ScopesProvided:  []string{"issues:read"},
		ScopesRequired:  []string{"issues:read"},
		WorkspaceID:     "demo",
		UserID:          "dev",
		TokenID:         "tok_test",
		ReadOnly:        true,
		ResourceID:      "AAC-1",
		RequestID:       "req-1",
		JSONRPCID:       "1",
		ClientName:      "audittest",
		ClientVersion:   "1.0.0",
		ProtocolVersion: "2025-11-25",
		UserAgent:       "audittest/1.0",
		SourceIP:        "127.0.0.1",
		ArgsHMAC:        "6d2b1c3f1b2b0a5e8a7b4f9f0f1d3a2c4e5f60718293a4b5c6d7e8f901234567",
		DurationMS:      3,
		Transport:       audit.TransportMCP,
		EventType:       audit.EventToolCall,
	}
	for _, m := range mods {
		m(&r)
	}
	return r
}

// Denied returns a mod that makes the record a denial for reason (an apperr code).
func Denied(reason string) func(*audit.Record) {
	return func(r *audit.Record) { r.Outcome, r.Reason = audit.OutcomeDenied, reason }
}

// Failed returns a mod that makes the record an error outcome for reason.
func Failed(reason string) func(*audit.Record) {
	return func(r *audit.Record) { r.Outcome, r.Reason = audit.OutcomeError, reason }
}

// Tool returns a mod that sets the tool and the catalog's facts of it (read-only,
// destructive, the scopes it requires), read from the catalog so that a new tool
// needs no case here. A name the catalog does not hold keeps the scopes and is a
// write that destroys nothing.
func Tool(name string) func(*audit.Record) {
	return func(r *audit.Record) {
		r.Tool = name
		t, ok := tools().Lookup(name)
		if !ok {
			r.ReadOnly, r.Destructive = false, false
			return
		}
		r.ReadOnly, r.Destructive, r.ScopesRequired = t.Annotations.ReadOnly, t.Annotations.Destructive, slices.Clone(t.Scopes)
	}
}

// tools is the catalog Tool reads; its handlers are never run.
var tools = sync.OnceValue(func() *catalog.Catalog { return catalog.New(catalog.Deps{}) })

// Who returns a mod that sets the workspace and token.
func Who(workspace, token string) func(*audit.Record) {
	return func(r *audit.Record) { r.WorkspaceID, r.TokenID = workspace, token }
}

// Confirmed returns a mod that sets confirm_present.
func Confirmed(v bool) func(*audit.Record) {
	return func(r *audit.Record) { r.ConfirmPresent = v }
}

// Confirmation returns a mod that sets how a destructive call was confirmed
// (audit.ConfirmationFlag, audit.ConfirmationElicited, or "").
func Confirmation(kind string) func(*audit.Record) {
	return func(r *audit.Record) { r.Confirmation = kind }
}

// Client returns a mod that sets the OAuth client the token was issued to ("" for a
// personal token).
func Client(id string) func(*audit.Record) {
	return func(r *audit.Record) { r.ClientID = id }
}

// Authorization returns a mod that makes the record an authorization server event
// with action (an audit.Action* constant): no tool, no tool flags, no arguments.
func Authorization(action string) func(*audit.Record) {
	return func(r *audit.Record) {
		r.EventType, r.Action, r.Transport = audit.EventAuthorization, action, audit.TransportOAuth
		r.Tool, r.ReadOnly, r.Destructive, r.ConfirmPresent = "", false, false, false
		r.ScopesRequired, r.ResourceID, r.ArgsHMAC, r.JSONRPCID = []string{}, "", "", ""
	}
}

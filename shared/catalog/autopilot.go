package catalog

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/autopilot"
	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Autopilot tools: trigger_autopilot.

// statusUpdateTimeout bounds the write that records a dispatch's outcome; it runs even
// when the caller has gone away, so the run does not stay "queued" for ever.
const statusUpdateTimeout = 5 * time.Second

func init() {
	register(90, triggerAutopilotTool)
}

func triggerAutopilotTool(deps Deps) Tool {
	d := deps.Dispatcher
	return writes(Tool{
		Name:  "trigger_autopilot",
		Title: "Trigger autopilot",
		Description: prose(`
			Ask the external agent runner to work on an issue now, with optional
			instructions. Records an autopilot run and sends it to the runner, a
			third-party service outside this workspace. Returns the run: status
			dispatched when the runner accepted it, queued when the server only queues
			runs for a runner to collect, dispatch_failed (with error) when it could not
			be reached. Not idempotent: every call starts another run, so do not retry
			unless you pass the same idempotency_key, which makes the retry return the
			first run.`),
		Annotations: Annotations{ReadOnly: false, Destructive: false, Idempotent: false, OpenWorld: true},
		Scopes:      []string{"autopilot:run"},
		InputSchema: input([]string{"issue_id"},
			issueIDProp,
			`"instructions": {"type": "string", "maxLength": 8192, "description": "What the agent should do, beyond the issue itself."}`,
			idempotencyKeyProp,
		),
		OutputSchema: schema(`{
			"type": "object",
			"properties": {
				"id": {"type": "string", "description": "Run id (ULID)."},
				"issue_id": {"type": "string", "description": "UUID of the issue."},
				"issue_key": {"type": "string", "description": "Key of the issue, such as AAC-42."},
				"status": {"type": "string", "enum": ["queued", "dispatched", "dispatch_failed"]},
				"instructions": {"type": "string"},
				"requested_by": {"type": "string", "description": "User id of the caller."},
				"attempts": {"type": "integer", "minimum": 0, "description": "Dispatches of this run so far."},
				"error": {"type": "string", "description": "Why the dispatch failed, when it did."},
				"created_at": {` + timeField + `},
				"updated_at": {` + timeField + `}
			},
			"required": ["id", "issue_id", "issue_key", "status", "instructions", "requested_by",
				"attempts", "created_at", "updated_at"]
		}`),
		ResourceArg: "issue_id",
	}, (&autopilotHandler{dispatcher: d}).trigger)
}

type autopilotHandler struct {
	dispatcher autopilot.Dispatcher
}

type triggerArgs struct {
	IssueID        string `json:"issue_id"`
	Instructions   string `json:"instructions"`
	IdempotencyKey string `json:"idempotency_key"` // handled by the guard
}

// trigger records the run before dispatching it, so that a runner that calls back at
// once finds it, and a crash mid-dispatch leaves a visible "queued" run rather than
// nothing.
func (h *autopilotHandler) trigger(ctx context.Context, c Call, a triggerArgs, q store.Queries) (any, error) {
	if h.dispatcher == nil {
		return nil, apperr.Internal(errors.New("catalog: no autopilot dispatcher configured"))
	}
	ws := c.Principal.WorkspaceID
	iss, err := q.GetIssue(ctx, ws, a.IssueID)
	if err != nil {
		return nil, err
	}
	id, err := ulid.New(ulid.Timestamp(c.Now), rand.Reader)
	if err != nil {
		return nil, apperr.Internal(err)
	}
	run, err := q.CreateAutopilotRun(ctx, ws, store.AutopilotRun{
		ID: id.String(), IssueID: iss.ID, IssueKey: iss.Key, Status: store.RunQueued,
		Instructions: a.Instructions, RequestedBy: c.Principal.UserID,
		CreatedAt: c.Now, UpdatedAt: c.Now,
	})
	if err != nil {
		return nil, err
	}

	// A dispatch waits for an fsync or a webhook's answer and retries: the call's
	// CPU slot can serve another call meanwhile.
	resume := cpuslot.Park(ctx)
	derr := h.dispatcher.Dispatch(ctx, autopilot.Job{
		RunID: run.ID, WorkspaceID: ws, IssueID: run.IssueID, IssueKey: run.IssueKey,
		Instructions: run.Instructions, RequestedBy: run.RequestedBy, CreatedAt: run.CreatedAt,
	})
	resume()
	run.Attempts++
	run.UpdatedAt = c.Now
	switch {
	case derr == nil && autopilot.QueuesOnly(h.dispatcher):
		run.Status, run.Error = store.RunQueued, ""
	case derr == nil:
		run.Status, run.Error = store.RunDispatched, ""
	default:
		run.Status, run.Error = store.RunDispatchFailed, dispatchErrorText(derr)
		slog.WarnContext(ctx, "autopilot dispatch failed", "workspace_id", ws, "run_id", run.ID, "error", derr)
	}

	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusUpdateTimeout)
	defer cancel()
	saved, err := q.UpdateAutopilotRun(uctx, ws, run)
	if err != nil {
		// The dispatch happened (or failed) whatever the store says now. Failing the call
		// would invite a retry that starts a second run, so answer with the outcome and
		// leave the stale record to the operator; the runner deduplicates on the run id.
		slog.ErrorContext(ctx, "autopilot run status not saved", "workspace_id", ws, "run_id", run.ID,
			"status", run.Status, "error", err)
		return run, nil
	}
	return saved, nil
}

// dispatchErrorText is what the run records (and the caller sees) about a failure:
// the dispatcher's own safe message, or a generic one for errors that may carry
// internal detail.
func dispatchErrorText(err error) string {
	var de *autopilot.DispatchError
	if errors.As(err, &de) {
		return de.Error()
	}
	return "the agent runner did not accept the run"
}

// Package store declares the persistence contract of aacmcp.
//
// Handlers of read-only tools receive a Reader, so the compiler refuses a mutation in
// them; handlers of the other tools receive Queries. Mutating methods are named
// Create*, Update* or Delete* (the spec's invariant is phrased in those names, and a test
// wraps a Queries in a recorder that fails on any of them).
//
// Every method is scoped by workspace: the workspace comes from the caller's principal,
// never from tool arguments, and an id that belongs to another workspace is reported as
// ErrNotFound exactly like an id that does not exist.
//
// Backends: memory (tests), sqlite (embedded, local) and dynamo (AWS). All pass
// storetest. Their errors are the storage errors of errors.go.
package store

import (
	"context"
	"slices"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
)

// Reader is every read the tools need.
type Reader interface {
	GetWorkspace(ctx context.Context, ws string) (Workspace, error)
	// GetMember returns ErrNotFound when the user has no member record.
	GetMember(ctx context.Context, ws, user string) (Member, error)
	GetAgent(ctx context.Context, ws, agent string) (Agent, error)
	ListAgents(ctx context.Context, ws string) ([]Agent, error)
	// GetIssue accepts an issue UUID or a key such as "AAC-42".
	GetIssue(ctx context.Context, ws, idOrKey string) (Issue, error)
	// ListIssues returns issues most recently updated first.
	ListIssues(ctx context.Context, ws string, f IssueFilter) (IssuePage, error)
	GetComment(ctx context.Context, ws, commentID string) (Comment, error)
	// ListComments returns comments oldest first. issueIDOrKey as in GetIssue.
	ListComments(ctx context.Context, ws, issueIDOrKey string, p PageRequest) (CommentPage, error)
	// ListUsage returns the counters of the days from..to inclusive (YYYY-MM-DD), ordered
	// by date then tool, in one query whatever the span.
	ListUsage(ctx context.Context, ws, from, to string) ([]UsageRow, error)
	// GetIdempotency returns ErrNotFound when no record exists for the key.
	GetIdempotency(ctx context.Context, k IdempotencyKey) (IdempotencyRecord, error)
}

// Writer is every mutation. Method names start with Create, Update or Delete.
type Writer interface {
	// CreateWorkspace fails with ErrAlreadyExists when the id exists.
	CreateWorkspace(ctx context.Context, w Workspace) (Workspace, error)
	// UpdateMember creates or replaces a member record (the role).
	UpdateMember(ctx context.Context, m Member) (Member, error)
	// DeleteMember removes a member record; ErrNotFound when absent.
	DeleteMember(ctx context.Context, ws, user string) error
	// CreateAgent creates or replaces an agent.
	CreateAgent(ctx context.Context, a Agent) (Agent, error)

	// CreateIssue allocates the next key of the workspace (AAC-1, AAC-2, ...) and stores
	// the issue with version 1. in.ID may be set by the caller (a UUID); if empty the
	// store generates one.
	CreateIssue(ctx context.Context, ws string, in NewIssue) (Issue, error)
	// UpdateIssue applies the patch. If every value in the patch already holds, nothing
	// is written, the current issue is returned with changed=false, and ExpectedVersion
	// is not checked (docs/architecture.md section 2: a repeat of an idempotent update succeeds). Otherwise
	// a non-nil ExpectedVersion that differs from the stored version is ErrVersionMismatch; on
	// success the version is incremented and updated_at set.
	UpdateIssue(ctx context.Context, ws, idOrKey string, p IssuePatch) (issue Issue, changed bool, err error)
	// DeleteIssue deletes the issue, its comments and its key lookup, and leaves a
	// tombstone. Tombstones are resolved here and nowhere else: deleting an id (or
	// key) whose tombstone lives returns the original result with Replay=true. allow
	// judges both, the first delete and every repeat, by the owner (the issue's
	// created_by, kept in the tombstone) before anything is written; its error is
	// returned as it is. A missing issue is ErrNotFound, before allow is asked.
	DeleteIssue(ctx context.Context, ws, idOrKey string, allow DeleteCheck) (DeleteResult, error)
	// CreateComment adds a comment and increments the issue's comment_count (not its
	// version). in.ID may be set by the caller; if empty the store generates one (ULID).
	CreateComment(ctx context.Context, ws, issueIDOrKey string, in NewComment) (Comment, error)
	// DeleteComment deletes a comment, decrements comment_count, and leaves a tombstone
	// (repeat: original result with Replay=true); allow as in DeleteIssue, by the
	// comment's author.
	DeleteComment(ctx context.Context, ws, commentID string, allow DeleteCheck) (DeleteResult, error)

	CreateAutopilotRun(ctx context.Context, ws string, r AutopilotRun) (AutopilotRun, error)
	// UpdateAutopilotRun sets status, attempts, error and updated_at of an existing run.
	UpdateAutopilotRun(ctx context.Context, ws string, r AutopilotRun) (AutopilotRun, error)

	// UpdateUsage adds one call to the day's counter of the tool, and one to denied or
	// errors by outcome ("success", "denied", "error"). It must not apply twice when the
	// backend's client retries a request whose response was lost: each call carries a
	// unique EventID the backend may use to deduplicate.
	UpdateUsage(ctx context.Context, u UsageIncrement) error

	// CreateIdempotency claims the key: it stores rec with State "pending" and fails
	// with ErrConflict if any record for the key exists (the caller then reads it). With
	// rec.Supersedes set, the one record it names may be replaced too, atomically: see
	// IdempotencyRecord.Supersedes. The claim's CreatedAt, stored exactly, is what
	// names it to UpdateIdempotency and DeleteIdempotency: a caller that will settle
	// or release the claim sets it rather than leave it to default to now.
	CreateIdempotency(ctx context.Context, rec IdempotencyRecord) error
	// UpdateIdempotency settles the caller's claim with its final result (State
	// "completed"), in one conditional write: only while the key still holds that
	// claim, State "pending" and CreatedAt equal to rec.CreatedAt. A call that
	// outlived its lease may have been taken over meanwhile (see Supersedes); then
	// the record is the retry's, running or settled, and UpdateIdempotency leaves it
	// as it is and fails with ErrConflict. A key that holds nothing live of another call
	// (released, or taken over and since expired) is ErrNotFound; a zero rec.CreatedAt
	// is ErrInvalid. Whether a claim that itself expired (a day, far past any
	// call) can still be settled is the backend's choice.
	UpdateIdempotency(ctx context.Context, rec IdempotencyRecord) error
	// DeleteIdempotency releases the caller's claim, the pending record created at
	// createdAt, whose call failed, so a retry may run again. Like UpdateIdempotency it
	// fails with ErrConflict and leaves the record when the key holds another's (a
	// retry's claim or completed result: deleting it would let the next retry repeat
	// the effect). A key that holds no live record is released already: nil. A zero
	// createdAt is ErrInvalid.
	DeleteIdempotency(ctx context.Context, k IdempotencyKey, createdAt time.Time) error

	// UpdateRateCounter adds one to the counter named key in the window that starts at
	// windowStart, and returns the count after the increment. Counters expire after the
	// window (TTL). Used by the rate limiter; key is opaque to the store.
	UpdateRateCounter(ctx context.Context, ws, key string, windowStart time.Time, window time.Duration) (int64, error)
}

// Queries is what mutating tool handlers get.
type Queries interface {
	Reader
	Writer
}

// Role of a user in a workspace.
type Role string

const (
	RoleViewer Role = "viewer"
	RoleMember Role = "member"
	RoleAdmin  Role = "admin"
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r == RoleViewer || r == RoleMember || r == RoleAdmin }

// CanWrite reports whether the role may use tools that are not read-only.
func (r Role) CanWrite() bool { return r == RoleMember || r == RoleAdmin }

// Workspace is a tenant.
type Workspace struct {
	ID        string    `json:"id"`
	Key       string    `json:"key"` // issue key prefix, e.g. "AAC"
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Member is a user's role in a workspace.
type Member struct {
	WorkspaceID string `json:"workspace_id"`
	UserID      string `json:"user_id"`
	Role        Role   `json:"role"`
	// Email links the member to a person signing in through OAuth: an upstream
	// identity provider's verified e-mail, compared case-insensitively. "" for none.
	Email     string    `json:"email,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Agent is an AI agent issues can be assigned to.
type Agent struct {
	WorkspaceID string    `json:"workspace_id"`
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	CreatedAt   time.Time `json:"created_at"`
}

// Issue statuses and priorities.
var (
	Statuses   = []string{"open", "in_progress", "done", "closed"}
	Priorities = []string{"low", "medium", "high", "urgent"}
)

// Assignee of an issue.
type Assignee struct {
	Type string `json:"type"` // "user" or "agent"
	ID   string `json:"id"`
}

// Issue as tools return it.
type Issue struct {
	ID           string    `json:"id"`
	Key          string    `json:"key"`
	Title        string    `json:"title"`
	Description  string    `json:"description"`
	Status       string    `json:"status"`
	Priority     string    `json:"priority"`
	Labels       []string  `json:"labels"` // never nil on the wire
	Assignee     *Assignee `json:"assignee"`
	CreatedBy    string    `json:"created_by"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	Version      int64     `json:"version"`
	CommentCount int64     `json:"comment_count"`
}

// Clone returns a deep copy (labels never nil), for a holder that hands the same
// issue to several callers, each free to change what it got.
func (is Issue) Clone() Issue {
	is.Labels = slices.Clone(is.Labels)
	if is.Labels == nil {
		is.Labels = []string{}
	}
	if is.Assignee != nil {
		a := *is.Assignee
		is.Assignee = &a
	}
	return is
}

// NewIssue is the input of CreateIssue. Status and Priority are already defaulted and
// validated by the caller.
type NewIssue struct {
	ID          string
	Title       string
	Description string
	Status      string
	Priority    string
	Labels      []string
	CreatedBy   string
	CreatedAt   time.Time
}

// IssuePatch holds the fields to change; nil means unchanged. Assignee uses a double
// pointer so that "unassign" (set to null) differs from "unchanged".
type IssuePatch struct {
	Title           *string
	Description     *string
	Status          *string
	Priority        *string
	Labels          *[]string
	Assignee        **Assignee
	ExpectedVersion *int64
	UpdatedAt       time.Time
}

// IssueFilter selects issues for ListIssues. Empty fields do not filter.
type IssueFilter struct {
	Status   string
	Assignee string // assignee id (user or agent)
	Label    string
	Query    string // case-insensitive substring of title or description
	PageRequest
}

// PageRequest is a limit and an opaque cursor returned by a previous page.
type PageRequest struct {
	Limit  int
	Cursor string
}

// IssuePage is a page of issues; NextCursor is "" on the last page.
type IssuePage struct {
	Issues     []Issue `json:"issues"`
	NextCursor string  `json:"next_cursor"`
}

// Comment on an issue.
type Comment struct {
	ID        string    `json:"id"`
	IssueID   string    `json:"issue_id"`
	Author    string    `json:"author"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// NewComment is the input of CreateComment.
type NewComment struct {
	ID        string
	Author    string
	Body      string
	CreatedAt time.Time
}

// CommentPage is a page of comments.
type CommentPage struct {
	Comments   []Comment `json:"comments"`
	NextCursor string    `json:"next_cursor"`
}

// DeleteResult is what a delete returns, the first time and on every repeat.
type DeleteResult struct {
	Kind      string    `json:"-"` // "issue" or "comment"
	ID        string    `json:"-"`
	DeletedAt time.Time `json:"-"`
	// Replay is true when the item was already deleted and the tombstone answered.
	Replay bool `json:"-"`
	// Owner is the deleted issue's created_by or the comment's author. Backends keep it
	// in the tombstone, because a repeat is judged by the same rule as the first delete
	// (DeleteCheck) and the item itself is gone by then.
	Owner string `json:"-"`
}

// DeleteCheck decides whether a delete may go ahead, given the owner of the item (or
// of its tombstone, on a repeat). The store asks it in the delete itself, after it
// has read the item or its tombstone and before it writes anything, so the item
// judged is the item deleted, and no caller reads a tombstone beside the store; a
// non-nil error is returned to the caller unchanged. A nil DeleteCheck allows
// every delete (administration and tests).
type DeleteCheck func(owner string) error

// Allow reports c's decision for owner.
func (c DeleteCheck) Allow(owner string) error {
	if c == nil {
		return nil
	}
	return c(owner)
}

// Replay judges a repeat answered by a tombstone: a backend passes its tombstone
// lookup straight in, allow.Replay(tombstone(ws, id)), and returns what Replay does.
func (c DeleteCheck) Replay(r DeleteResult, err error) (DeleteResult, error) {
	if err == nil {
		err = c.Allow(r.Owner)
	}
	if err != nil {
		return DeleteResult{}, err
	}
	return r, nil
}

// Autopilot run statuses.
const (
	RunQueued         = "queued"
	RunDispatched     = "dispatched"
	RunDispatchFailed = "dispatch_failed"
)

// AutopilotRun is a request to the agent runner to work an issue.
type AutopilotRun struct {
	ID           string    `json:"id"`
	IssueID      string    `json:"issue_id"`
	IssueKey     string    `json:"issue_key"`
	Status       string    `json:"status"`
	Instructions string    `json:"instructions"`
	RequestedBy  string    `json:"requested_by"`
	Attempts     int       `json:"attempts"`
	Error        string    `json:"error,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// WithDefaults fills what a new run may leave empty, as every backend stores it: an
// id, the queued status, the creation time (now) and the update time (the creation
// time), all in UTC.
func (r AutopilotRun) WithDefaults(now time.Time) AutopilotRun {
	if r.ID == "" {
		r.ID = NewULID()
	}
	if r.Status == "" {
		r.Status = RunQueued
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.CreatedAt = r.CreatedAt.UTC()
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	r.UpdatedAt = r.UpdatedAt.UTC()
	return r
}

// UsageRow is one day's counters of one tool.
type UsageRow struct {
	Date   string `json:"date"`
	Tool   string `json:"tool"`
	Calls  int64  `json:"calls"`
	Denied int64  `json:"denied"`
	Errors int64  `json:"errors"`
}

// UsageIncrement is one call to count.
type UsageIncrement struct {
	WorkspaceID string
	Date        string // YYYY-MM-DD (UTC)
	Tool        string
	Outcome     string // "success", "denied", "error"
	EventID     string // the audit event id; lets a backend drop a retried duplicate
}

// Counts validates u the way every backend must (a workspace, a YYYY-MM-DD date, a
// known outcome) and returns what it adds to the day's denied and error counters;
// the call counter always grows by one.
func (u UsageIncrement) Counts() (denied, errs int64, err error) {
	if u.WorkspaceID == "" {
		return 0, 0, Invalid("usage needs a workspace")
	}
	if _, err := time.Parse(time.DateOnly, u.Date); err != nil {
		return 0, 0, Invalid("usage date must be YYYY-MM-DD")
	}
	switch apperr.Outcome(u.Outcome) {
	case apperr.OutcomeSuccess:
		return 0, 0, nil
	case apperr.OutcomeDenied:
		return 1, 0, nil
	case apperr.OutcomeError:
		return 0, 1, nil
	}
	return 0, 0, Invalid("usage outcome must be success, denied or error")
}

// IdempotencyKey identifies one idempotency record: per workspace, user and tool.
type IdempotencyKey struct {
	WorkspaceID string
	UserID      string
	Tool        string
	KeyHash     string // hex SHA-256 of the client's idempotency_key
}

// Idempotency record states.
const (
	IdemPending   = "pending"
	IdemCompleted = "completed"
)

// IdempotencyRecord remembers the first result of a non-idempotent call.
type IdempotencyRecord struct {
	IdempotencyKey
	State      string
	ArgsDigest string // hex SHA-256 of the canonical arguments minus idempotency_key
	Result     []byte // the JSON result of the first call, when completed
	ResourceID string
	CreatedAt  time.Time
	ExpiresAt  time.Time

	// Supersedes is read by CreateIdempotency only (stores never return it): it takes
	// the key over from a record that no longer counts (a pending claim whose call
	// died, an expired record not yet swept), the one the caller read. The claim then
	// replaces the stored record only if that is still this record, same State and
	// CreatedAt, in one conditional write; if it changed meanwhile (another retry took
	// the key over first, or the first call settled) the claim fails with ErrConflict,
	// like any claim of a held key. A free key is claimed as without it.
	Supersedes *IdempotencyRecord
}

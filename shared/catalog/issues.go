package catalog

import (
	"context"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Issue tools: list_issues, get_issue, create_issue, update_issue (delete_issue is
// in delete.go).

func init() {
	register(10, listIssuesTool)
	register(20, getIssueTool)
	register(50, createIssueTool)
	register(60, updateIssueTool)
}

func listIssuesTool(Deps) Tool {
	return reads(Tool{
		Name:  "list_issues",
		Title: "List issues",
		Description: prose(`
			List issues in the workspace, most recently updated first. Filter by status,
			assignee id, label, or a text query matched against title and description.
			Returns up to limit issues (default 25, max 100) and a next_cursor; pass it
			as cursor to get the next page. Read-only; safe to call any time.`),
		Annotations: Annotations{ReadOnly: true, Destructive: false, Idempotent: true, OpenWorld: false},
		Scopes:      []string{"issues:read"},
		InputSchema: input(nil,
			`"status": {`+statusField+`, "description": "Only issues with this status."}`,
			`"assignee": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Only issues assigned to this user or agent id."}`,
			`"label": {"type": "string", "minLength": 1, "maxLength": 64, "description": "Only issues carrying this label."}`,
			`"query": {"type": "string", "minLength": 1, "maxLength": 256, "description": "Case-insensitive text to find in title or description."}`,
			pageProps,
		),
		OutputSchema: pageOutput("issues", issueObject),
	}, listIssues)
}

type listIssuesArgs struct {
	Status   string `json:"status"`
	Assignee string `json:"assignee"`
	Label    string `json:"label"`
	Query    string `json:"query"`
	Limit    int    `json:"limit"`
	Cursor   string `json:"cursor"`
}

func listIssues(ctx context.Context, c Call, a listIssuesArgs, r store.Reader) (any, error) {
	if a.Status != "" {
		if err := checkEnum("status", a.Status, store.Statuses); err != nil {
			return nil, err
		}
	}
	limit, err := pageLimit(a.Limit)
	if err != nil {
		return nil, err
	}
	page, err := r.ListIssues(ctx, c.Principal.WorkspaceID, store.IssueFilter{
		Status: a.Status, Assignee: a.Assignee, Label: a.Label, Query: a.Query,
		PageRequest: store.PageRequest{Limit: limit, Cursor: a.Cursor},
	})
	if err != nil {
		return nil, err
	}
	out := issuePage{Issues: make([]issueResult, 0, len(page.Issues)), NextCursor: page.NextCursor}
	for _, i := range page.Issues {
		out.Issues = append(out.Issues, wireIssue(i))
	}
	return out, nil
}

func getIssueTool(Deps) Tool {
	return reads(Tool{
		Name:  "get_issue",
		Title: "Get issue",
		Description: prose(`
			Get one issue by its UUID or its key (such as AAC-42), with status,
			priority, labels, assignee, version and comment count. Read-only; safe to
			call any time.`),
		Annotations:  Annotations{ReadOnly: true, Destructive: false, Idempotent: true, OpenWorld: false},
		Scopes:       []string{"issues:read"},
		InputSchema:  input([]string{"issue_id"}, issueIDProp),
		OutputSchema: schema(issueObject),
		ResourceArg:  "issue_id",
	}, getIssue)
}

type issueRefArgs struct {
	IssueID string `json:"issue_id"`
}

func getIssue(ctx context.Context, c Call, a issueRefArgs, r store.Reader) (any, error) {
	iss, err := r.GetIssue(ctx, c.Principal.WorkspaceID, a.IssueID)
	if err != nil {
		return nil, err
	}
	return wireIssue(iss), nil
}

func createIssueTool(Deps) Tool {
	return writes(Tool{
		Name:  "create_issue",
		Title: "Create issue",
		Description: prose(`
			Create a new issue in the workspace and return it with its key (such as
			AAC-42). Status defaults to open, priority to medium. Not idempotent: every
			call creates another issue, so do not retry a failed or timed-out call
			unless you pass the same idempotency_key, which makes the retry return the
			first result instead of a duplicate.`),
		Annotations: Annotations{ReadOnly: false, Destructive: false, Idempotent: false, OpenWorld: false},
		Scopes:      []string{"issues:write"},
		InputSchema: input([]string{"title"},
			`"title": {`+titleField+`, "description": "Short summary, up to 256 characters."}`,
			`"description": {`+textField+`, "description": "Details, Markdown allowed."}`,
			`"status": {`+statusField+`, "description": "Initial status; default open."}`,
			`"priority": {`+priorityField+`, "description": "Default medium."}`,
			`"labels": {`+labelsField+`, "description": "Up to 20 labels; duplicates are dropped."}`,
			idempotencyKeyProp,
		),
		OutputSchema: schema(issueObject),
	}, createIssue)
}

type createIssueArgs struct {
	Title          string   `json:"title"`
	Description    string   `json:"description"`
	Status         string   `json:"status"`
	Priority       string   `json:"priority"`
	Labels         []string `json:"labels"`
	IdempotencyKey string   `json:"idempotency_key"` // handled by the guard
}

func createIssue(ctx context.Context, c Call, a createIssueArgs, q store.Queries) (any, error) {
	title, err := cleanTitle(a.Title)
	if err != nil {
		return nil, err
	}
	if a.Status == "" {
		a.Status = "open"
	}
	if a.Priority == "" {
		a.Priority = "medium"
	}
	if err := checkEnum("status", a.Status, store.Statuses); err != nil {
		return nil, err
	}
	if err := checkEnum("priority", a.Priority, store.Priorities); err != nil {
		return nil, err
	}
	labels, err := cleanLabels(a.Labels)
	if err != nil {
		return nil, err
	}
	iss, err := q.CreateIssue(ctx, c.Principal.WorkspaceID, store.NewIssue{
		Title: title, Description: a.Description, Status: a.Status, Priority: a.Priority,
		Labels: labels, CreatedBy: c.Principal.UserID, CreatedAt: c.Now,
	})
	if err != nil {
		return nil, err
	}
	return wireIssue(iss), nil
}

func updateIssueTool(Deps) Tool {
	return writes(Tool{
		Name:  "update_issue",
		Title: "Update issue",
		Description: prose(`
			Change an issue's title, description, status, priority or labels (labels
			replace the whole list). Give at least one field to change. Idempotent:
			repeating a call whose values already hold changes nothing and returns the
			issue. For optimistic locking pass expected_version (the issue's version);
			if someone changed the issue since, the call fails with conflict: get the
			issue again and reconsider.`),
		Annotations: Annotations{ReadOnly: false, Destructive: false, Idempotent: true, OpenWorld: false},
		Scopes:      []string{"issues:write"},
		InputSchema: input([]string{"issue_id"},
			issueIDProp,
			`"title": {`+titleField+`, "description": "New title."}`,
			`"description": {`+textField+`, "description": "New description."}`,
			`"status": {`+statusField+`, "description": "New status."}`,
			`"priority": {`+priorityField+`, "description": "New priority."}`,
			`"labels": {`+labelsField+`, "description": "New label list, replacing the old one."}`,
			`"expected_version": {"type": "integer", "minimum": 1, "description": "Fail with conflict unless the issue is at this version."}`,
		),
		OutputSchema: schema(issueObject),
		ResourceArg:  "issue_id",
	}, updateIssue)
}

type updateIssueArgs struct {
	IssueID         string    `json:"issue_id"`
	Title           *string   `json:"title"`
	Description     *string   `json:"description"`
	Status          *string   `json:"status"`
	Priority        *string   `json:"priority"`
	Labels          *[]string `json:"labels"`
	ExpectedVersion *int64    `json:"expected_version"`
}

func updateIssue(ctx context.Context, c Call, a updateIssueArgs, q store.Queries) (any, error) {
	if a.Title == nil && a.Description == nil && a.Status == nil && a.Priority == nil && a.Labels == nil {
		return nil, apperr.New(apperr.InvalidArguments,
			"give at least one of title, description, status, priority, labels")
	}
	p := store.IssuePatch{
		Description: a.Description, Status: a.Status, Priority: a.Priority,
		ExpectedVersion: a.ExpectedVersion, UpdatedAt: c.Now,
	}
	if a.Title != nil {
		t, err := cleanTitle(*a.Title)
		if err != nil {
			return nil, err
		}
		p.Title = &t
	}
	if a.Status != nil {
		if err := checkEnum("status", *a.Status, store.Statuses); err != nil {
			return nil, err
		}
	}
	if a.Priority != nil {
		if err := checkEnum("priority", *a.Priority, store.Priorities); err != nil {
			return nil, err
		}
	}
	if a.Labels != nil {
		l, err := cleanLabels(*a.Labels)
		if err != nil {
			return nil, err
		}
		p.Labels = &l
	}
	if a.ExpectedVersion != nil && *a.ExpectedVersion < 1 {
		return nil, apperr.New(apperr.InvalidArguments, "expected_version must be at least 1")
	}
	// The store decides "already holds" (no write, no version check) atomically with
	// the write, so a concurrent change cannot slip between a read here and the update.
	iss, _, err := q.UpdateIssue(ctx, c.Principal.WorkspaceID, a.IssueID, p)
	if err != nil {
		return nil, err
	}
	return wireIssue(iss), nil
}

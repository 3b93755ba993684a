package catalog

import (
	"context"
	"strings"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// Comment tools: list_comments, comment_issue (delete_comment is in delete.go).

func init() {
	register(30, listCommentsTool)
	register(70, commentIssueTool)
}

func listCommentsTool(Deps) Tool {
	return reads(Tool{
		Name:  "list_comments",
		Title: "List comments",
		Description: prose(`
			List the comments of one issue, oldest first. Returns up to limit comments
			(default 25, max 100) and a next_cursor; pass it as cursor to get the next
			page. Read-only; safe to call any time.`),
		Annotations:  Annotations{ReadOnly: true, Destructive: false, Idempotent: true, OpenWorld: false},
		Scopes:       []string{"comments:read"},
		InputSchema:  input([]string{"issue_id"}, issueIDProp, pageProps),
		OutputSchema: pageOutput("comments", commentObject),
		ResourceArg:  "issue_id",
	}, listComments)
}

type listCommentsArgs struct {
	IssueID string `json:"issue_id"`
	Limit   int    `json:"limit"`
	Cursor  string `json:"cursor"`
}

func listComments(ctx context.Context, c Call, a listCommentsArgs, r store.Reader) (any, error) {
	limit, err := pageLimit(a.Limit)
	if err != nil {
		return nil, err
	}
	ws := c.Principal.WorkspaceID
	// An issue with no comments and an issue that does not exist (here) must differ:
	// the second is not_found, never an empty page. The store tells them apart
	// (storetest), in the same round trip as the comments on DynamoDB.
	page, err := r.ListComments(ctx, ws, a.IssueID, store.PageRequest{Limit: limit, Cursor: a.Cursor})
	if err != nil {
		return nil, err
	}
	if page.Comments == nil {
		page.Comments = []store.Comment{}
	}
	return page, nil
}

func commentIssueTool(Deps) Tool {
	return writes(Tool{
		Name:  "comment_issue",
		Title: "Comment on issue",
		Description: prose(`
			Add a comment to an issue and return it. Not idempotent: every call adds
			another comment, so do not retry a failed or timed-out call unless you pass
			the same idempotency_key, which makes the retry return the first comment
			instead of a duplicate.`),
		Annotations: Annotations{ReadOnly: false, Destructive: false, Idempotent: false, OpenWorld: false},
		Scopes:      []string{"comments:write"},
		InputSchema: input([]string{"issue_id", "body"},
			issueIDProp,
			`"body": {"type": "string", "minLength": 1, "maxLength": 65536, "description": "Comment text, Markdown allowed."}`,
			idempotencyKeyProp,
		),
		OutputSchema: schema(commentObject),
		ResourceArg:  "issue_id",
	}, commentIssue)
}

type commentIssueArgs struct {
	IssueID        string `json:"issue_id"`
	Body           string `json:"body"`
	IdempotencyKey string `json:"idempotency_key"` // handled by the guard
}

func commentIssue(ctx context.Context, c Call, a commentIssueArgs, q store.Queries) (any, error) {
	if strings.TrimSpace(a.Body) == "" {
		return nil, apperr.New(apperr.InvalidArguments, "body must not be blank")
	}
	cm, err := q.CreateComment(ctx, c.Principal.WorkspaceID, a.IssueID, store.NewComment{
		Author: c.Principal.UserID, Body: a.Body, CreatedAt: c.Now,
	})
	if err != nil {
		return nil, err
	}
	return cm, nil
}

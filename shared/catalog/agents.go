package catalog

import (
	"context"
	"fmt"

	"github.com/aacworkflow/aacmcp/shared/apperr"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// Agent tools: assign_issue_to_agent.

func init() {
	register(80, assignIssueToAgentTool)
}

func assignIssueToAgentTool(Deps) Tool {
	return writes(Tool{
		Name:  "assign_issue_to_agent",
		Title: "Assign issue to agent",
		Description: prose(`
			Assign an issue to one of the workspace's AI agents, replacing any current
			assignee, and return the issue. The agent must exist in the workspace.
			Idempotent: assigning the agent that already holds the issue changes
			nothing. Assigning does not start work; use trigger_autopilot for that.`),
		Annotations: Annotations{ReadOnly: false, Destructive: false, Idempotent: true, OpenWorld: false},
		Scopes:      []string{"agents:write"},
		InputSchema: input([]string{"issue_id", "agent_id"},
			issueIDProp,
			`"agent_id": {`+agentIDField+`, "description": "Id of an agent of this workspace."}`,
		),
		OutputSchema: schema(issueObject),
		ResourceArg:  "issue_id",
	}, assignIssueToAgent)
}

type assignArgs struct {
	IssueID string `json:"issue_id"`
	AgentID string `json:"agent_id"`
}

func assignIssueToAgent(ctx context.Context, c Call, a assignArgs, q store.Queries) (any, error) {
	ws := c.Principal.WorkspaceID
	// Two independent reads, issued together (one round trip on DynamoDB); the
	// issue's not_found still outranks the agent's.
	var (
		iss      store.Issue
		agent    store.Agent
		agentErr error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				agentErr = apperr.Internal(fmt.Errorf("panic reading the agent: %v", r))
			}
		}()
		agent, agentErr = q.GetAgent(ctx, ws, a.AgentID)
	}()
	iss, err := q.GetIssue(ctx, ws, a.IssueID)
	<-done
	if err != nil {
		return nil, err
	}
	if agentErr != nil {
		return nil, agentErr
	}
	assignee := &store.Assignee{Type: "agent", ID: agent.ID}
	// The store writes nothing when the agent already holds the issue (same version,
	// same updated_at), which is what makes the repeat return the same issue.
	updated, _, err := q.UpdateIssue(ctx, ws, iss.ID, store.IssuePatch{Assignee: &assignee, UpdatedAt: c.Now})
	if err != nil {
		return nil, err
	}
	return wireIssue(updated), nil
}

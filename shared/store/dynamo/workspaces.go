package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

func decodeWorkspace(it item) (store.Workspace, error) {
	d := decoder{it: it}
	w := store.Workspace{ID: d.str("id"), Key: d.str("key"), Name: d.str("name"), CreatedAt: d.time("created_at")}
	return w, d.err
}

// GetWorkspace implements store.Reader.
func (s *Store) GetWorkspace(ctx context.Context, ws string) (store.Workspace, error) {
	if err := checkWS(ws); err != nil {
		return store.Workspace{}, err
	}
	it, err := s.get(ctx, s.table, key(wsPK(ws), skMeta), "GetWorkspace")
	if err != nil {
		return store.Workspace{}, err
	}
	if it == nil {
		return store.Workspace{}, notFound("workspace")
	}
	w, err := decodeWorkspace(it)
	return w, fail("GetWorkspace", err)
}

// CreateWorkspace implements store.Writer.
func (s *Store) CreateWorkspace(ctx context.Context, w store.Workspace) (store.Workspace, error) {
	if !validPart(w.ID) {
		return store.Workspace{}, store.Invalid("workspace id is required and must not contain '#'")
	}
	if err := store.CheckWorkspace(w); err != nil {
		return store.Workspace{}, err
	}
	w.CreatedAt = s.orNow(w.CreatedAt)
	n := nonce()
	it := key(wsPK(w.ID), skMeta)
	it["id"], it["key"], it["name"], it["created_at"] = avS(w.ID), avS(w.Key), avS(w.Name), avTime(w.CreatedAt)
	it["issue_seq"] = avN(0)
	it["nonce"] = avS(n)
	if err := s.claim(ctx, s.table, it, n, fmt.Sprintf("workspace %q already exists", w.ID), "CreateWorkspace"); err != nil {
		return store.Workspace{}, err
	}
	return w, nil
}

// workspaceExists is the foreign-key check of members and agents.
func (s *Store) workspaceExists(ctx context.Context, ws, op string) error {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:            aws.String(s.table),
		Key:                  key(wsPK(ws), skMeta),
		ProjectionExpression: aws.String("PK"),
	})
	if err != nil {
		return fail(op, err)
	}
	if len(out.Item) == 0 {
		return notFound("workspace")
	}
	return nil
}

func decodeMember(ws string, it item) (store.Member, error) {
	d := decoder{it: it}
	m := store.Member{WorkspaceID: ws, UserID: d.str("user_id"), Role: store.Role(d.str("role")), Email: d.str("email"),
		CreatedAt: d.time("created_at")}
	return m, d.err
}

// GetMember implements store.Reader.
func (s *Store) GetMember(ctx context.Context, ws, user string) (store.Member, error) {
	return getInWorkspace(ctx, s, ws, user, skMember, "member", "GetMember", decodeMember)
}

// ListMembers implements store.OAuthStore: the members of one workspace, ordered by
// user id (the sort key), one Query of the workspace's partition.
func (s *Store) ListMembers(ctx context.Context, ws string) ([]store.Member, error) {
	return listInWorkspace(ctx, s, ws, skMember, "ListMembers", decodeMember)
}

func decodeAgent(ws string, it item) (store.Agent, error) {
	d := decoder{it: it}
	a := store.Agent{WorkspaceID: ws, ID: d.str("agent_id"), Name: d.str("name"), CreatedAt: d.time("created_at")}
	return a, d.err
}

// GetAgent implements store.Reader.
func (s *Store) GetAgent(ctx context.Context, ws, agent string) (store.Agent, error) {
	return getInWorkspace(ctx, s, ws, agent, skAgent, "agent", "GetAgent", decodeAgent)
}

// ListAgents implements store.Reader; agents come ordered by id (the sort key).
func (s *Store) ListAgents(ctx context.Context, ws string) ([]store.Agent, error) {
	return listInWorkspace(ctx, s, ws, skAgent, "ListAgents", decodeAgent)
}

// getInWorkspace reads the item prefix+id of workspace ws, consistently. An id that
// could not be a key part is not_found without a round trip, as is a missing item.
func getInWorkspace[T any](ctx context.Context, s *Store, ws, id, prefix, what, op string,
	decode func(string, item) (T, error)) (T, error) {
	var zero T
	if err := checkWS(ws); err != nil || !validPart(id) {
		return zero, notFound(what)
	}
	it, err := s.get(ctx, s.table, key(wsPK(ws), prefix+id), op)
	if err != nil {
		return zero, err
	}
	if it == nil {
		return zero, notFound(what)
	}
	v, err := decode(ws, it)
	return v, fail(op, err)
}

// listInWorkspace reads every item of workspace ws whose sort key starts with prefix,
// in sort-key order, with one paginated consistent Query.
func listInWorkspace[T any](ctx context.Context, s *Store, ws, prefix, op string,
	decode func(string, item) (T, error)) ([]T, error) {
	if err := checkWS(ws); err != nil {
		return []T{}, nil
	}
	return queryDecoded(ctx, s, &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :p)"),
		ExpressionAttributeValues: item{
			":pk": avS(wsPK(ws)), ":p": avS(prefix),
		},
		ConsistentRead: aws.Bool(true),
	}, op, func(it item) (T, error) { return decode(ws, it) })
}

// CreateAgent implements store.Writer: it creates or replaces (the name); a replaced
// agent keeps its created_at.
func (s *Store) CreateAgent(ctx context.Context, a store.Agent) (store.Agent, error) {
	if !validPart(a.ID) {
		return store.Agent{}, store.Invalid("agent id is required and must not contain '#'")
	}
	if err := checkWS(a.WorkspaceID); err != nil {
		return store.Agent{}, err
	}
	if err := s.workspaceExists(ctx, a.WorkspaceID, "CreateAgent"); err != nil {
		return store.Agent{}, err
	}
	a.CreatedAt = s.orNow(a.CreatedAt)
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(wsPK(a.WorkspaceID), skAgent+a.ID),
		UpdateExpression:         aws.String("SET agent_id = :i, #name = :n, created_at = if_not_exists(created_at, :c)"),
		ExpressionAttributeNames: map[string]string{"#name": "name"},
		ExpressionAttributeValues: item{
			":i": avS(a.ID), ":n": avS(a.Name), ":c": avTime(a.CreatedAt),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return store.Agent{}, fail("CreateAgent", err)
	}
	got, err := decodeAgent(a.WorkspaceID, out.Attributes)
	return got, fail("CreateAgent", err)
}

// trimPrefix is strings.CutPrefix returning "" when the prefix is absent.
func trimPrefix(s, p string) string {
	r, ok := strings.CutPrefix(s, p)
	if !ok {
		return ""
	}
	return r
}

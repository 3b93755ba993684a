package dynamo_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/store"
	"github.com/aacworkflow/aacmcp/shared/store/dynamo"
)

// keyRecorder passes every request on and records its operation and the partition
// keys it names.
type keyRecorder struct {
	dynamo.API
	reqs []string // "GetItem <PK>"
}

func (r *keyRecorder) note(op string, keys ...map[string]types.AttributeValue) {
	for _, k := range keys {
		pk, _ := k["PK"].(*types.AttributeValueMemberS)
		if pk == nil {
			r.reqs = append(r.reqs, op+" <no PK>")
			continue
		}
		r.reqs = append(r.reqs, op+" "+pk.Value)
	}
}

func (r *keyRecorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.note("GetItem", in.Key)
	return r.API.GetItem(ctx, in, o...)
}

func (r *keyRecorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for _, ka := range in.RequestItems {
		r.note("BatchGetItem", ka.Keys...)
	}
	return r.API.BatchGetItem(ctx, in, o...)
}

func (r *keyRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.note("PutItem", in.Item)
	return r.API.PutItem(ctx, in, o...)
}

func (r *keyRecorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.note("UpdateItem", in.Key)
	return r.API.UpdateItem(ctx, in, o...)
}

func (r *keyRecorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.note("DeleteItem", in.Key)
	return r.API.DeleteItem(ctx, in, o...)
}

func (r *keyRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.reqs = append(r.reqs, "Query")
	return r.API.Query(ctx, in, o...)
}

func (r *keyRecorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	r.reqs = append(r.reqs, "BatchWriteItem")
	return r.API.BatchWriteItem(ctx, in, o...)
}

// TestApprovalPageRequests records what the approval page asks of the main table
// (the catalog's preview loaders, by key and by id, then GetApproval and
// DecideApproval, a refused second decision included) and checks it is only what
// the authorization server's role grants for it (infra/oauth.go, ReadDeletePreviews
// ReadCommentPreviews and DecideApprovals): GetItem on WS#<ws>#<kind>#<id> of the
// issue, issue key and comment reference kinds, BatchGetItem on the issue kind
// (a comment and its issue), GetItem and UpdateItem on the approval kind. A store change that reads another kind fails here before it fails
// on AWS.
func TestApprovalPageRequests(t *testing.T) {
	e := newEnv(t, envConfig{})
	ctx, s := t.Context(), e.store
	ws := memberWorkspace(t, s)
	is, err := s.CreateIssue(ctx, ws, store.NewIssue{Title: "to go", CreatedBy: "u_alice"})
	mustOK(t, "CreateIssue", err)
	cm, err := s.CreateComment(ctx, ws, is.ID, store.NewComment{Author: "u_alice", Body: "and this"})
	mustOK(t, "CreateComment", err)
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Approval{Workspace: ws, Binding: "b1nd1ng", Nonce: "n1", Token: "tok", User: "u_alice", Principal: "tok_1",
		Tool: "delete_issue", Target: is.Key, RequestedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
	mustOK(t, "PutApproval", s.PutApproval(ctx, a))

	// The item lies where the role's DecideApprovals condition looks, and carries
	// the table's TTL attribute (infra's TestTablesMatchSharedSpec pins the table's TTL on
	// dynamo.Main.TTLAttribute), after its expiry.
	it, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.main), Key: map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: dynamo.TenantPrefix + ws + "#" + dynamo.ApprovalKind + "#" + a.Binding},
		"SK": &types.AttributeValueMemberS{Value: "META"},
	}})
	mustOK(t, "GetItem approval", err)
	ttl, _ := it.Item[dynamo.Main.TTLAttribute].(*types.AttributeValueMemberN)
	if ttl == nil {
		t.Fatalf("approval item %v lacks %s", it.Item, dynamo.Main.TTLAttribute)
	}
	if n, err := strconv.ParseInt(ttl.Value, 10, 64); err != nil || n < a.ExpiresAt.Unix() {
		t.Errorf("approval %s = %s, want epoch seconds no earlier than its expiry %d", dynamo.Main.TTLAttribute, ttl.Value, a.ExpiresAt.Unix())
	}

	rec := &keyRecorder{API: e.client}
	page := dynamo.New(rec, e.main, e.tokens)
	cat := catalog.New(catalog.Deps{})
	for tool, targets := range map[string][]string{"delete_issue": {is.Key, is.ID}, "delete_comment": {cm.ID}} {
		tl, ok := cat.Lookup(tool)
		if !ok || tl.Confirm == nil {
			t.Fatalf("%s: no confirmation declared", tool)
		}
		for _, target := range targets {
			if _, err := tl.Confirm.Load(ctx, page, ws, target, true); err != nil {
				t.Fatalf("%s preview of %s: %v", tool, target, err)
			}
		}
	}
	_, err = page.GetApproval(ctx, ws, a.Binding)
	mustOK(t, "GetApproval", err)
	mustOK(t, "DecideApproval", page.DecideApproval(ctx, ws, a.Binding, a.Nonce, store.ApprovalGranted, "alice", "192.0.2.1", now))
	if err := page.DecideApproval(ctx, ws, a.Binding, a.Nonce, store.ApprovalDenied, "alice", "192.0.2.1", now); err == nil {
		t.Fatal("a second decision was taken")
	}

	reads := []string{dynamo.IssueKind, dynamo.IssueKeyKind, dynamo.CommentRefKind}
	granted := map[string][]string{
		"GetItem":      append(slices.Clone(reads), dynamo.ApprovalKind),
		"BatchGetItem": {dynamo.IssueKind},
		"UpdateItem":   {dynamo.ApprovalKind},
	}
	seen := map[string]bool{}
	for _, r := range rec.reqs {
		op, pk, _ := strings.Cut(r, " ")
		rest, ok := strings.CutPrefix(pk, dynamo.TenantPrefix+ws+"#")
		kind, id, _ := strings.Cut(rest, "#")
		if !ok || id == "" || strings.Contains(id, "#") || !slices.Contains(granted[op], kind) {
			t.Errorf("the approval page makes %s, which its role does not grant", r)
			continue
		}
		seen[op+" "+kind] = true
	}
	// Every grant is used: a kind the page no longer reads is a grant to drop.
	for op, kinds := range granted {
		for _, k := range kinds {
			if !seen[op+" "+k] {
				t.Errorf("granted %s on %s, which the page does not use", op, k)
			}
		}
	}
}

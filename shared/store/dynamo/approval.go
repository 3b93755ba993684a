package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

var _ store.Approvals = (*Store)(nil)

// approvalRetention keeps an approval readable an hour past its expiry (its page
// then says what became of it) before the table's TTL removes it. The TTL is an
// upper bound on storage only: every read judges expiry itself, since TTL
// deletes late (and dynalite never does, NOTES.md).
const approvalRetention = time.Hour

func approvalPK(ws, binding string) string { return wsPK(ws) + "#" + ApprovalKind + "#" + binding }

// PutApproval implements store.Approvals with one unconditional put: the caller
// replaces only what it read as spent or expired.
func (s *Store) PutApproval(ctx context.Context, a store.Approval) error {
	if err := checkWS(a.Workspace); err != nil {
		return err
	}
	if !validPart(a.Binding) || a.Nonce == "" {
		return store.Invalid("binding and nonce are required")
	}
	it := key(approvalPK(a.Workspace, a.Binding), skMeta)
	it["nonce"], it["token"], it["user_id"], it["principal"] = avS(a.Nonce), avS(a.Token), avS(a.User), avS(a.Principal)
	it["client_id"], it["tool"], it["target"], it["status"] = avS(a.ClientID), avS(a.Tool), avS(a.Target), avS(string(store.ApprovalPending))
	it["requested_at"], it["expires_at"], it[attrTTL] = avTime(a.RequestedAt), avTime(a.ExpiresAt), ttlOf(a.ExpiresAt.Add(approvalRetention))
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: it})
	return fail("PutApproval", err)
}

// GetApproval implements store.Approvals.
func (s *Store) GetApproval(ctx context.Context, ws, binding string) (store.Approval, error) {
	if err := checkWS(ws); err != nil || !validPart(binding) {
		return store.Approval{}, notFound("approval")
	}
	it, err := s.get(ctx, s.table, key(approvalPK(ws, binding), skMeta), "GetApproval")
	if err != nil {
		return store.Approval{}, err
	}
	if it == nil {
		return store.Approval{}, notFound("approval")
	}
	return decodeApproval(ws, binding, it)
}

func decodeApproval(ws, binding string, it item) (store.Approval, error) {
	d := decoder{it: it}
	a := store.Approval{
		Workspace: ws, Binding: binding,
		Nonce: d.str("nonce"), Token: d.str("token"), User: d.str("user_id"), Principal: d.str("principal"),
		ClientID: d.str("client_id"), Tool: d.str("tool"), Target: d.str("target"), Status: store.ApprovalStatus(d.str("status")),
		DecidedBy: d.str("decided_by"), DecidedFrom: d.str("decided_from"),
		RequestedAt: d.time("requested_at"), DecidedAt: d.time("decided_at"), ExpiresAt: d.time("expires_at"),
	}
	if d.err != nil {
		return store.Approval{}, fail("approval", d.err)
	}
	return a, nil
}

// DecideApproval implements store.Approvals with one conditional update. A
// decision also goes to the decision attribute, which SpendApproval leaves as
// it is: a spend the SDK retries after a lost response reads it back.
func (s *Store) DecideApproval(ctx context.Context, ws, binding, nonceValue string, status store.ApprovalStatus, by, from string, at time.Time) error {
	if status != store.ApprovalGranted && status != store.ApprovalDenied {
		return store.Invalid("an approval is decided granted or denied")
	}
	if err := checkWS(ws); err != nil || !validPart(binding) {
		return notFound("approval")
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(approvalPK(ws, binding), skMeta),
		UpdateExpression:         aws.String("SET #st = :st, decision = :st, decided_by = :by, decided_from = :from, decided_at = :at"),
		ConditionExpression:      aws.String("attribute_exists(PK) AND nonce = :n AND #st = :pending AND expires_at > :at"),
		ExpressionAttributeNames: map[string]string{"#st": "status"},
		ExpressionAttributeValues: item{":st": avS(string(status)), ":by": avS(by), ":from": avS(from), ":at": avTime(at),
			":n": avS(nonceValue), ":pending": avS(string(store.ApprovalPending))},
	})
	if conditionFailed(err) {
		return s.approvalRefusal(ctx, ws, binding, "DecideApproval")
	}
	return fail("DecideApproval", err)
}

// SpendApproval implements store.Approvals with one conditional update that
// returns the item as it was. The spender attribute admits this very request
// retried by the SDK after a lost response.
func (s *Store) SpendApproval(ctx context.Context, ws, binding, nonceValue string, at time.Time) (store.Approval, error) {
	if err := checkWS(ws); err != nil || !validPart(binding) {
		return store.Approval{}, notFound("approval")
	}
	cond := "attribute_exists(PK) AND ((#st IN (:granted, :denied) AND expires_at > :at) OR spender = :w)"
	vals := item{":spent": avS(string(store.ApprovalSpent)), ":granted": avS(string(store.ApprovalGranted)),
		":denied": avS(string(store.ApprovalDenied)), ":at": avTime(at), ":w": avS(nonce())}
	if nonceValue != "" {
		cond += " AND nonce = :n"
		vals[":n"] = avS(nonceValue)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(approvalPK(ws, binding), skMeta),
		UpdateExpression:          aws.String("SET #st = :spent, spender = :w"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#st": "status"},
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllOld,
	})
	if conditionFailed(err) {
		return store.Approval{}, s.approvalRefusal(ctx, ws, binding, "SpendApproval")
	}
	if err != nil {
		return store.Approval{}, fail("SpendApproval", err)
	}
	a, err := decodeApproval(ws, binding, out.Attributes)
	if err != nil {
		return store.Approval{}, err
	}
	a.Status = store.ApprovalStatus((&decoder{it: out.Attributes}).str("decision"))
	return a, nil
}

// approvalRefusal tells not_found (no item) from conflict after a failed condition.
func (s *Store) approvalRefusal(ctx context.Context, ws, binding, op string) error {
	it, err := s.get(ctx, s.table, key(approvalPK(ws, binding), skMeta), op)
	if err != nil {
		return err
	}
	if it == nil {
		return notFound("approval")
	}
	return store.ErrConflict
}

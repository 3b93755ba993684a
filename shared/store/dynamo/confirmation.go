package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

var _ store.Confirmations = (*Store)(nil)

// attrPolicy is the workspace record's destructive_confirmation attribute;
// absent reads as the default.
const attrPolicy = "destructive_confirmation"

func confirmNoncePK(ws, nonce string) string { return wsPK(ws) + "#CONFIRM#" + nonce }

// DestructiveConfirmation implements store.Confirmations.
func (s *Store) DestructiveConfirmation(ctx context.Context, ws string) (string, error) {
	if err := checkWS(ws); err != nil {
		return "", err
	}
	it, err := s.get(ctx, s.table, key(wsPK(ws), skMeta), "DestructiveConfirmation")
	if err != nil {
		return "", err
	}
	if it == nil {
		return "", notFound("workspace")
	}
	d := decoder{it: it}
	p := d.str(attrPolicy)
	if d.err != nil {
		return "", fail("DestructiveConfirmation", d.err)
	}
	if p == "" {
		p = store.DefaultDestructiveConfirmation
	}
	return p, nil
}

// SetDestructiveConfirmation implements store.Confirmations: an update of the
// workspace record, conditional on it existing (an UpdateItem would otherwise
// create a bare record).
func (s *Store) SetDestructiveConfirmation(ctx context.Context, ws, policy string) error {
	if err := checkWS(ws); err != nil {
		return err
	}
	if policy == "" {
		return apperr.New(apperr.InvalidArguments, "destructive confirmation policy is required")
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(wsPK(ws), skMeta),
		UpdateExpression:          aws.String("SET #p = :p"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  map[string]string{"#p": attrPolicy},
		ExpressionAttributeValues: item{":p": avS(policy)},
	})
	if conditionFailed(err) {
		return notFound("workspace")
	}
	return fail("SetDestructiveConfirmation", err)
}

// ConsumeConfirmationNonce implements store.Confirmations with one conditional
// put. The condition admits an expired item TTL has not swept yet, and this very
// request retried by the SDK after a lost response (the writer attribute): without
// it, a person's accepted confirmation would be refused as a replay of itself.
func (s *Store) ConsumeConfirmationNonce(ctx context.Context, ws, nonceValue string, expires time.Time) error {
	if err := checkWS(ws); err != nil {
		return err
	}
	if !validPart(nonceValue) {
		return apperr.New(apperr.InvalidArguments, "nonce is required and must not contain '#'")
	}
	w := nonce()
	it := key(confirmNoncePK(ws, nonceValue), skMeta)
	it["expires_at"], it[attrTTL], it["writer"] = avTime(expires), ttlOf(expires), avS(w)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR writer = :w OR #ttl <= :now"),
		ExpressionAttributeNames:  map[string]string{"#ttl": attrTTL},
		ExpressionAttributeValues: item{":w": avS(w), ":now": avN(s.now().Unix())},
	})
	if conditionFailed(err) {
		return store.ErrNonceUsed
	}
	return fail("ConsumeConfirmationNonce", err)
}

package dynamo

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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
		return store.Invalid("destructive confirmation policy is required")
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
		return store.Invalid("nonce is required and must not contain '#'")
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

var _ store.WorkspaceLister = (*Store)(nil)

// scanner is the one call ListWorkspaces needs beyond API. It is not part of API
// because no call path may scan; the SDK client provides it.
type scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// ListWorkspaces implements store.WorkspaceLister with a filtered scan of the
// main table: workspaces are the META items that carry an issue sequence. It is
// for the administrator's command only; nothing on a call path lists workspaces.
func (s *Store) ListWorkspaces(ctx context.Context) ([]store.WorkspaceSettings, error) {
	sc, ok := s.db.(scanner)
	if !ok {
		return nil, fail("ListWorkspaces", errors.New("the DynamoDB client cannot scan"))
	}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(s.table),
		FilterExpression:          aws.String("SK = :meta AND attribute_exists(issue_seq) AND begins_with(PK, :ws)"),
		ExpressionAttributeValues: item{":meta": avS(skMeta), ":ws": avS(wsPK(""))},
		ConsistentRead:            aws.Bool(true),
	}
	out := []store.WorkspaceSettings{}
	for {
		page, err := sc.Scan(ctx, in)
		if err != nil {
			return nil, fail("ListWorkspaces", err)
		}
		for _, it := range page.Items {
			w, err := decodeWorkspace(it)
			if err != nil {
				return nil, fail("ListWorkspaces", err)
			}
			d := decoder{it: it}
			p := d.str(attrPolicy)
			if d.err != nil {
				return nil, fail("ListWorkspaces", d.err)
			}
			if p == "" {
				p = store.DefaultDestructiveConfirmation
			}
			out = append(out, store.WorkspaceSettings{Workspace: w, DestructiveConfirmation: p})
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

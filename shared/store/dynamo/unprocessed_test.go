package dynamo_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// halfProcessor is an http.RoundTripper in front of the real transport that makes
// dynalite look throttled: of every BatchWriteItem it forwards only the first half of
// the requests and answers the other half as UnprocessedItems, as DynamoDB does under
// load.
type halfProcessor struct {
	next     http.RoundTripper
	deferred atomic.Int64 // requests handed back as unprocessed
}

type batchBody struct {
	RequestItems map[string][]json.RawMessage `json:"RequestItems"`
}

func (h *halfProcessor) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-Amz-Target") != "DynamoDB_20120810.BatchWriteItem" || req.Body == nil {
		return h.next.RoundTrip(req)
	}
	raw, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	var in batchBody
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, err
	}
	send := batchBody{RequestItems: map[string][]json.RawMessage{}}
	back := map[string][]json.RawMessage{}
	for table, reqs := range in.RequestItems {
		keep := (len(reqs) + 1) / 2
		send.RequestItems[table] = reqs[:keep]
		if rest := reqs[keep:]; len(rest) > 0 {
			back[table] = rest
			h.deferred.Add(int64(len(rest)))
		}
	}
	body, err := json.Marshal(send)
	if err != nil {
		return nil, err
	}
	fwd := req.Clone(req.Context())
	fwd.Body = io.NopCloser(bytes.NewReader(body))
	fwd.ContentLength = int64(len(body))
	fwd.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp, err := h.next.RoundTrip(fwd)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	out, err := json.Marshal(map[string]any{"UnprocessedItems": back})
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	resp.Header.Del("X-Amz-Crc32") // the body changed; the SDK checks this when present
	return resp, nil
}

// TestCascadeDeleteRetriesUnprocessedItems deletes an issue whose comments need three
// BatchWriteItem batches while the server processes only half of every batch: the
// store must resend the rest until nothing of the issue remains.
func TestCascadeDeleteRetriesUnprocessedItems(t *testing.T) {
	hp := &halfProcessor{next: http.DefaultTransport.(*http.Transport).Clone()}
	e := newEnv(t, envConfig{transport: func(cfg *aws.Config) { cfg.HTTPClient = &http.Client{Transport: hp} }})
	ctx := t.Context()
	ws := "ws_unprocessed"
	if _, err := e.store.CreateWorkspace(ctx, store.Workspace{ID: ws, Key: "UNP", Name: "unprocessed"}); err != nil {
		t.Fatal(err)
	}
	is, err := e.store.CreateIssue(ctx, ws, store.NewIssue{Title: "busy", Status: "open", Priority: "low", CreatedBy: "u"})
	if err != nil {
		t.Fatal(err)
	}
	var comments []string
	for i := range 30 { // 30 comments + 30 lookups + 1 key item = 61 deletes
		c, err := e.store.CreateComment(ctx, ws, is.ID, store.NewComment{Author: "u", Body: strings.Repeat("x", i)})
		if err != nil {
			t.Fatal(err)
		}
		comments = append(comments, c.ID)
	}
	e.calls.Reset()
	res, err := e.store.DeleteIssue(ctx, ws, is.ID, nil)
	if err != nil || res.ID != is.ID || res.Replay {
		t.Fatalf("DeleteIssue = %+v, %v", res, err)
	}
	if hp.deferred.Load() == 0 || e.calls.Calls()["BatchWriteItem"] <= 3 {
		t.Fatalf("no unprocessed items were retried (deferred %d, BatchWriteItem calls %d)", hp.deferred.Load(), e.calls.Calls()["BatchWriteItem"])
	}
	t.Logf("BatchWriteItem calls: %d, requests handed back as unprocessed: %d", e.calls.Calls()["BatchWriteItem"], hp.deferred.Load())
	for _, id := range comments {
		if _, err := e.store.GetComment(ctx, ws, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetComment(%s) after the cascade = %v, want not_found", id, err)
		}
	}
	if _, err := e.store.GetIssue(ctx, ws, is.Key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetIssue by key after delete = %v, want not_found", err)
	}
	// Gone, not merely unreachable: the issue's partition and the comment lookups are
	// empty (keys as documented in keys.go).
	left, err := e.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(e.main),
		KeyConditionExpression:    aws.String("PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "WS#" + ws + "#ISSUE#" + is.ID}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil || len(left.Items) != 0 {
		t.Errorf("issue partition after delete: %d items, %v", len(left.Items), err)
	}
	for _, id := range comments {
		got, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(e.main),
			Key: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: "WS#" + ws + "#COMMENT#" + id},
				"SK": &types.AttributeValueMemberS{Value: "META"},
			},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil || len(got.Item) != 0 {
			t.Errorf("comment lookup %s after delete: %v, %v", id, got.Item, err)
		}
	}
}

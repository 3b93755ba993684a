// Package dynamo is the DynamoDB backend of store.Queries, auth.TokenStore and
// store.OAuthStore.
//
// Layout (docs/architecture.md section 9; the key schema itself is tablespec.go): one main table
// whose every tenant partition key starts with "WS#<workspace>", so IAM
// dynamodb:LeadingKeys can confine a role to one tenant, and a tokens table keyed by
// the secret's SHA-256. The authorization server's state and the member lookups live
// in the main table outside "WS#" ("OAUTH#", "MEMBERBY#"), out of a tenant role's reach.
// The item kinds and their keys are listed in keys.go and oauth_keys.go.
//
// There is no Scan and no TransactWriteItems anywhere (dynalite, the test server, has no
// transactions, and they cost double). Multi-item writes are ordered so that a crash
// between two of them leaves only something harmless (an unused issue number, a lookup
// item that points at nothing), and every single write that the SDK may retry after a
// lost response is made idempotent with a condition on a per-call nonce: a retried
// request finds its own mark and does not apply twice. Each write says why in a comment.
package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/auth"
	"github.com/aacworkflow/aacmcp/shared/retry"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// API is the part of *dynamodb.Client the store uses.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Retention of items that only answer repeats.
const (
	// TombstoneTTL is how long a delete's result is remembered (docs/architecture.md section 2: >= 24 h).
	TombstoneTTL = 25 * time.Hour
)

// Store implements store.Queries and auth.TokenStore on DynamoDB. Safe for concurrent use.
// Some housekeeping writes run after a method returns: Close (or Drain) waits for them.
type Store struct {
	db           API
	table        string
	tokensTable  string
	now          func() time.Time
	log          *slog.Logger
	cursorSecret []byte
	bg           *tasks // housekeeping writes after the answer (background.go)
}

var (
	_ store.Queries   = (*Store)(nil)
	_ auth.TokenStore = (*Store)(nil)
)

// ConcurrentReads reports true: every read is a network round trip, so the guard
// reads the caller's member record beside a read-only handler's own read and the
// call waits for one round trip instead of two.
func (*Store) ConcurrentReads() bool { return true }

// Option configures New.
type Option func(*Store)

// WithClock replaces time.Now (tests of expiry).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// WithCursorSecret makes every cursor carry an HMAC-SHA256 under secret, so a client can
// neither forge a start key nor reuse a cursor across deployments with other secrets.
// Every instance serving the same table must use the same secret (the servers derive it
// from the audit HMAC key with audit.CursorKey). Without it, cursors are still checked
// structurally (their keys must lie in the caller's own partition).
func WithCursorSecret(secret []byte) Option {
	return func(s *Store) { s.cursorSecret = append([]byte(nil), secret...) }
}

// New returns a store on the main table and the tokens table.
func New(db API, mainTable, tokensTable string, opts ...Option) *Store {
	s := &Store{
		db:          gatedAPI{db},
		table:       mainTable,
		tokensTable: tokensTable,
		now:         time.Now,
		log:         slog.Default(),
		bg:          newTasks(),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Store) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.now().UTC()
	}
	return t.UTC()
}

// fail passes storage errors (shared/store) through and names the operation on every
// other error, an SDK failure whose text must never reach a client (the guard maps it
// to internal_error).
func fail(op string, err error) error {
	if err == nil || store.IsStorage(err) {
		return err
	}
	return fmt.Errorf("dynamo %s: %w", op, err)
}

// conditionFailed reports whether err is DynamoDB's ConditionalCheckFailedException.
func conditionFailed(err error) bool {
	var e *types.ConditionalCheckFailedException
	return errors.As(err, &e)
}

// nonce returns a random token that marks one call's writes, so that a request the SDK
// retries after losing the response recognises its own earlier effect.
func nonce() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

func notFound(what string) error { return store.NotFound(what) }

// validPart reports whether s can be embedded in a key: non-empty, bounded, and free of
// the '#' separator, so that no id can name a key outside the item kind it is used for.
func validPart(s string) bool {
	return s != "" && len(s) <= 512 && !strings.Contains(s, "#")
}

// checkWS refuses a workspace id that cannot be a key part. Workspace ids come from the
// principal, so such an id has no data: it reads as not_found.
func checkWS(ws string) error {
	if !validPart(ws) {
		return notFound("workspace")
	}
	return nil
}

// ---- attribute values ----

type item = map[string]types.AttributeValue

func avS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func avN(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func avTime(t time.Time) types.AttributeValue { return avS(fmtTime(t)) }

func avStrings(v []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(v))
	for i, x := range v {
		l[i] = avS(x)
	}
	return &types.AttributeValueMemberL{Value: l}
}

func avSet(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

func avBytes(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }

func key(pk, sk string) item { return item{attrPK: avS(pk), attrSK: avS(sk)} }

// fmtTime is the stored form of a time: UTC, fixed width with nanoseconds, so that the
// strings sort like the times (GSI sort keys rely on it).
func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

const timeLayout = "2006-01-02T15:04:05.000000000Z"

// ttlOf is the epoch-seconds TTL attribute for an expiry.
func ttlOf(t time.Time) types.AttributeValue { return avN(t.Unix()) }

// decoder reads attributes of one item and remembers the first malformed one: a stored
// item that does not decode is corruption, reported as internal_error.
type decoder struct {
	it  item
	err error
}

func (d *decoder) fault(name string) {
	if d.err == nil {
		d.err = fmt.Errorf("dynamo: item %v: attribute %q is malformed", d.keyString(), name)
	}
}

func (d *decoder) keyString() string {
	pk, _ := d.it[attrPK].(*types.AttributeValueMemberS)
	sk, _ := d.it[attrSK].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return "?"
	}
	return pk.Value + "/" + sk.Value
}

// str returns a string attribute; absent is "".
func (d *decoder) str(name string) string {
	v, ok := d.it[name]
	if !ok {
		return ""
	}
	sv, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		d.fault(name)
		return ""
	}
	return sv.Value
}

// has reports whether the attribute is present.
func (d *decoder) has(name string) bool { _, ok := d.it[name]; return ok }

// num returns a number attribute; absent is 0.
func (d *decoder) num(name string) int64 {
	v, ok := d.it[name]
	if !ok {
		return 0
	}
	nv, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		d.fault(name)
		return 0
	}
	n, err := strconv.ParseInt(nv.Value, 10, 64)
	if err != nil {
		d.fault(name)
	}
	return n
}

// time returns a time attribute; absent is the zero time.
func (d *decoder) time(name string) time.Time {
	s := d.str(name)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d.fault(name)
	}
	return t.UTC()
}

// strings returns a list-of-strings attribute; absent is an empty (non-nil) slice.
func (d *decoder) strings(name string) []string {
	return listOf(d, name, func(e types.AttributeValue) (string, bool) {
		sv, ok := e.(*types.AttributeValueMemberS)
		if !ok {
			return "", false
		}
		return sv.Value, true
	})
}

// listOf decodes a list attribute element by element; absent is an empty (non-nil)
// slice, and an element that does not decode is a fault of the attribute.
func listOf[T any](d *decoder, name string, elem func(types.AttributeValue) (T, bool)) []T {
	out := []T{}
	v, ok := d.it[name]
	if !ok {
		return out
	}
	lv, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		d.fault(name)
		return out
	}
	for _, e := range lv.Value {
		x, ok := elem(e)
		if !ok {
			d.fault(name)
			return out
		}
		out = append(out, x)
	}
	return out
}

// set returns a string-set attribute; absent is nil.
func (d *decoder) set(name string) []string {
	v, ok := d.it[name]
	if !ok {
		return nil
	}
	sv, ok := v.(*types.AttributeValueMemberSS)
	if !ok {
		d.fault(name)
		return nil
	}
	return sv.Value
}

// bytes returns a binary attribute; absent is nil.
func (d *decoder) bytes(name string) []byte {
	v, ok := d.it[name]
	if !ok {
		return nil
	}
	bv, ok := v.(*types.AttributeValueMemberB)
	if !ok {
		d.fault(name)
		return nil
	}
	return bv.Value
}

// ---- small request helpers ----

// get reads one item with a strongly consistent read; nil when absent. Reads follow
// writes in the same call chain (update after read, delete after create), so an
// eventually consistent read could act on a stale version.
func (s *Store) get(ctx context.Context, table string, k item, op string) (item, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            k,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fail(op, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// claim puts it unless its key holds an item another call wrote: the key must be
// free or hold this call's own item (nonce n, which it carries), so that a request
// the SDK resends after losing the response passes its own condition. A key another
// call took is store.ErrAlreadyExists, saying taken.
func (s *Store) claim(ctx context.Context, table string, it item, n, taken, op string) error {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(table),
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR nonce = :n"),
		ExpressionAttributeValues: item{":n": avS(n)},
	})
	if conditionFailed(err) {
		return store.Errorf(store.ErrAlreadyExists, "%s", taken)
	}
	return fail(op, err)
}

// release deletes the item at k if it still carries nonce n: a write that failed
// part-way takes back what it claimed, and never an item another call has written
// there since. An item that is gone or another call's is left alone (nil).
func (s *Store) release(ctx context.Context, table string, k item, n string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(table),
		Key:                       k,
		ConditionExpression:       aws.String("nonce = :n"),
		ExpressionAttributeValues: item{":n": avS(n)},
	})
	if conditionFailed(err) {
		return nil
	}
	return err
}

// follow reads the lookup item k and returns the key part its attribute attr points to
// (a comment's issue id, a run's issue id, a token id's hash): not_found naming what when
// the lookup item is absent, an internal error when it is malformed.
func (s *Store) follow(ctx context.Context, table string, k item, attr, what, op string) (string, error) {
	ref, err := s.get(ctx, table, k, op)
	if err != nil {
		return "", err
	}
	if ref == nil {
		return "", notFound(what)
	}
	d := decoder{it: ref}
	v := d.str(attr)
	if d.err != nil || !validPart(v) {
		return "", fail(op, errors.Join(d.err, fmt.Errorf("%s lookup without %s", what, attr)))
	}
	return v, nil
}

// batchGet reads up to 100 keys of one table consistently, retrying unprocessed keys.
// Results come keyed by "PK/SK".
func (s *Store) batchGet(ctx context.Context, table string, keys []item, op string) (map[string]item, error) {
	out := make(map[string]item, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	pending := keys
	err := retry.Do(ctx, batchRetry(), func(int) error {
		res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{
				table: {Keys: pending, ConsistentRead: aws.Bool(true)},
			},
		})
		if err != nil {
			return err
		}
		for _, it := range res.Responses[table] {
			d := decoder{it: it}
			out[d.keyString()] = it
		}
		if pending = res.UnprocessedKeys[table].Keys; len(pending) > 0 {
			return errUnprocessed
		}
		return nil
	})
	if err != nil {
		return nil, fail(op, err)
	}
	return out, nil
}

func keyID(pk, sk string) string { return pk + "/" + sk }

// errUnprocessed is the batch calls' reason to retry: DynamoDB handed items back
// (throttling, or a response over its size limit), which is not an error of the call.
var errUnprocessed = errors.New("batch items still unprocessed after retries")

// batchRetry retries a batch call only for its unprocessed items: 8 retries, waiting
// 20 ms doubling to at most 1 s. An error of the call itself is final, since the SDK
// has already retried it.
func batchRetry() retry.Policy {
	return retry.Policy{
		Attempts:  9,
		Base:      20 * time.Millisecond,
		Max:       time.Second,
		Retryable: func(err error) bool { return errors.Is(err, errUnprocessed) },
	}
}

// batchDelete deletes keys of the main table in BatchWriteItem calls of 25, retrying
// unprocessed items with backoff. Deletes are idempotent, so a retried batch is safe.
func (s *Store) batchDelete(ctx context.Context, keys []item, op string) error {
	for start := 0; start < len(keys); start += 25 {
		var reqs []types.WriteRequest
		for _, k := range keys[start:min(start+25, len(keys))] {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
		}
		err := retry.Do(ctx, batchRetry(), func(int) error {
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{s.table: reqs},
			})
			if err != nil {
				return err
			}
			if reqs = out.UnprocessedItems[s.table]; len(reqs) > 0 {
				return errUnprocessed
			}
			return nil
		})
		if err != nil {
			return fail(op, err)
		}
	}
	return nil
}

// queryAll runs a query to its end, following LastEvaluatedKey. For small lists only
// (agents, tokens, a workspace's usage span).
// queryDecoded is queryAll with every item decoded: a malformed item fails the whole
// list (as op), and a query that matches nothing gives an empty list, not nil.
func queryDecoded[T any](ctx context.Context, s *Store, in *dynamodb.QueryInput, op string, decode func(item) (T, error)) ([]T, error) {
	items, err := s.queryAll(ctx, in, op)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		v, err := decode(it)
		if err != nil {
			return nil, fail(op, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Store) queryAll(ctx context.Context, in *dynamodb.QueryInput, op string) ([]item, error) {
	var items []item
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, fail(op, err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

package dynamo

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// Bounds of the retry loops that resolve races between concurrent writers.
const (
	maxAllocAttempts  = 5
	maxUpdateAttempts = 5
	// maxListQueries bounds the Query calls of one filtered ListIssues page; a page that
	// is still short then carries a cursor, so the client reads on.
	maxListQueries = 10
)

func fold(s string) string { return strings.ToLower(s) }

func encodeIssue(ws string, is store.Issue) item {
	it := key(issuePK(ws, is.ID), skMeta)
	it[attrGSI1PK] = avS(issueListPK(ws))
	it[attrGSI1SK] = avS(issueListSK(is.UpdatedAt, is.ID))
	it["id"] = avS(is.ID)
	it["key"] = avS(is.Key)
	it["title"] = avS(is.Title)
	it["description"] = avS(is.Description)
	it["title_lc"] = avS(fold(is.Title))
	it["desc_lc"] = avS(fold(is.Description))
	it["status"] = avS(is.Status)
	it["priority"] = avS(is.Priority)
	it["labels"] = avStrings(is.Labels)
	if is.Assignee != nil {
		it["assignee_type"] = avS(is.Assignee.Type)
		it["assignee_id"] = avS(is.Assignee.ID)
	}
	it["created_by"] = avS(is.CreatedBy)
	it["created_at"] = avTime(is.CreatedAt)
	it["updated_at"] = avTime(is.UpdatedAt)
	it["version"] = avN(is.Version)
	it["comment_count"] = avN(is.CommentCount)
	return it
}

func decodeIssue(it item) (store.Issue, error) {
	d := decoder{it: it}
	is := store.Issue{
		ID:           d.str("id"),
		Key:          d.str("key"),
		Title:        d.str("title"),
		Description:  d.str("description"),
		Status:       d.str("status"),
		Priority:     d.str("priority"),
		Labels:       d.strings("labels"),
		CreatedBy:    d.str("created_by"),
		CreatedAt:    d.time("created_at"),
		UpdatedAt:    d.time("updated_at"),
		Version:      d.num("version"),
		CommentCount: d.num("comment_count"),
	}
	if d.has("assignee_id") {
		is.Assignee = &store.Assignee{Type: d.str("assignee_type"), ID: d.str("assignee_id")}
	}
	if d.err == nil && (is.ID == "" || is.Key == "") {
		d.fault("id")
	}
	return is, d.err
}

// resolveIssue maps an id or key to the issue id. For a key it returns the canonical
// key too, which the caller checks against the issue it loads (see loadIssue).
func (s *Store) resolveIssue(ctx context.Context, ws, idOrKey, op string) (id, issueKey string, err error) {
	if prefix, n, ok := store.ParseIssueKey(idOrKey); ok {
		issueKey = store.IssueKey(prefix, n)
		it, err := s.get(ctx, s.table, key(issueKeyPK(ws, issueKey), skMeta), op)
		if err != nil {
			return "", "", err
		}
		if it == nil {
			return "", "", notFound("issue")
		}
		d := decoder{it: it}
		id = d.str("issue_id")
		if d.err != nil || !validPart(id) {
			return "", "", fail(op, errors.Join(d.err, errors.New("key item without issue id")))
		}
		return id, issueKey, nil
	}
	if !validPart(idOrKey) {
		return "", "", notFound("issue")
	}
	return idOrKey, "", nil
}

// loadIssue reads an issue by id or key. Reading by key costs two sequential reads (key
// item, then issue): denormalising the issue into the key item would double every
// issue write and, without transactions, let the copy go stale.
func (s *Store) loadIssue(ctx context.Context, ws, idOrKey, op string) (store.Issue, item, error) {
	if err := checkWS(ws); err != nil {
		return store.Issue{}, nil, notFound("issue")
	}
	id, issueKey, err := s.resolveIssue(ctx, ws, idOrKey, op)
	if err != nil {
		return store.Issue{}, nil, err
	}
	it, err := s.get(ctx, s.table, key(issuePK(ws, id), skMeta), op)
	if err != nil {
		return store.Issue{}, nil, err
	}
	if it == nil {
		return store.Issue{}, nil, notFound("issue")
	}
	is, err := decodeIssue(it)
	if err != nil {
		return store.Issue{}, nil, fail(op, err)
	}
	// A key item can outlive a create that lost a race for a caller-chosen id (see
	// CreateIssue); it then points at an issue with another key and must not answer.
	if issueKey != "" && is.Key != issueKey {
		return store.Issue{}, nil, notFound("issue")
	}
	return is, it, nil
}

// GetIssue implements store.Reader.
func (s *Store) GetIssue(ctx context.Context, ws, idOrKey string) (store.Issue, error) {
	is, _, err := s.loadIssue(ctx, ws, idOrKey, "GetIssue")
	return is, err
}

// CreateIssue implements store.Writer.
//
// Writes (1) the workspace counter, then (2) the key item and (3) the issue together:
// two round trips. A crash after (1) leaves an unused number. A crash between (2)
// and (3) leaves one of them: a key item whose issue does not exist, which reads as
// not_found, or an issue whose key does not resolve (found by id and in lists, not
// by its key) until it is deleted. No key is ever given to two issues: numbers come
// only from the counter, which only grows, and the key item's condition refuses a
// number already taken. One TransactWriteItems of (2) and (3) would make them
// atomic at the same two round trips (docs/decisions.md); dynalite cannot run it.
func (s *Store) CreateIssue(ctx context.Context, ws string, in store.NewIssue) (store.Issue, error) {
	if err := checkWS(ws); err != nil {
		return store.Issue{}, err
	}
	if in.ID == "" {
		in.ID = store.NewIssueID()
	} else {
		if !store.ValidIssueID(in.ID) {
			return store.Issue{}, store.Invalid("issue id must be a UUID")
		}
		// A caller-chosen id: refuse one in use, or deleted (its tombstone keeps
		// answering deletes; reusing the id would make that answer lie), before a
		// number is spent on it.
		got, err := s.batchGet(ctx, s.table, []item{
			key(issuePK(ws, in.ID), skMeta), key(goneIssuePK(ws, in.ID), skMeta),
		}, "CreateIssue")
		if err != nil {
			return store.Issue{}, err
		}
		if len(got) > 0 {
			return store.Issue{}, store.Errorf(store.ErrAlreadyExists, "issue id already used")
		}
	}
	created := s.orNow(in.CreatedAt)
	is := in.Issue(created)
	for range maxAllocAttempts {
		prefix, n, err := s.allocateIssueNumber(ctx, ws, in.ID)
		if err != nil {
			return store.Issue{}, err
		}
		is.Key = store.IssueKey(prefix, n)
		var saved store.Issue
		errs := together(func() error {
			// The key item names the issue id; a retried put (response lost) finds
			// its own issue id and passes.
			_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: aws.String(s.table),
				Item: item{
					attrPK: avS(issueKeyPK(ws, is.Key)), attrSK: avS(skMeta),
					"issue_id": avS(is.ID),
				},
				ConditionExpression:       aws.String("attribute_not_exists(PK) OR issue_id = :id"),
				ExpressionAttributeValues: item{":id": avS(is.ID)},
			})
			return err
		}, func() (err error) {
			saved, err = s.putNewIssue(ctx, ws, is)
			return err
		})
		keyErr, issueErr := errs[0], errs[1]
		switch {
		case conditionFailed(keyErr):
			// Only possible if the counter was reset under existing keys; take the
			// next number rather than steal the key. The issue written beside it
			// carries that key: withdraw it first (if it is ours).
			s.log.ErrorContext(ctx, "dynamo: issue key already taken; counter behind keys", "workspace", ws, "key", is.Key)
			if issueErr == nil {
				if err := s.withdrawIssue(ctx, ws, is); err != nil {
					return store.Issue{}, err
				}
			}
			if errors.Is(issueErr, store.ErrAlreadyExists) {
				return store.Issue{}, issueErr
			}
			continue
		case keyErr != nil:
			return store.Issue{}, fail("CreateIssue", keyErr)
		case issueErr != nil:
			if errors.Is(issueErr, store.ErrAlreadyExists) {
				s.dropKeyItem(ctx, ws, is)
			}
			return store.Issue{}, issueErr
		}
		return saved, nil
	}
	return store.Issue{}, errors.New("dynamo: could not allocate a free issue key")
}

// withdrawIssue deletes an issue just written under a key that turned out to be
// taken, unless something changed it meanwhile (then it stays, and the key is
// shared with it: logged, as the counter was reset by hand).
func (s *Store) withdrawIssue(ctx context.Context, ws string, is store.Issue) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(issuePK(ws, is.ID), skMeta),
		ConditionExpression:       aws.String("#key = :k AND #version = :v"),
		ExpressionAttributeNames:  map[string]string{"#key": "key", "#version": "version"},
		ExpressionAttributeValues: item{":k": avS(is.Key), ":v": avN(is.Version)},
	})
	if conditionFailed(err) {
		s.log.ErrorContext(ctx, "dynamo: issue on a taken key changed before it could be withdrawn", "workspace", ws, "key", is.Key)
		return nil
	}
	return fail("CreateIssue", err)
}

// dropKeyItem removes the key item written for a create that lost the race for a
// caller-chosen id: it points at the winner's issue (loadIssue would ignore it
// anyway, since the winner's key differs).
func (s *Store) dropKeyItem(ctx context.Context, ws string, is store.Issue) {
	if _, derr := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(issueKeyPK(ws, is.Key), skMeta),
		ConditionExpression:       aws.String("issue_id = :id"),
		ExpressionAttributeValues: item{":id": avS(is.ID)},
	}); derr != nil && !conditionFailed(derr) {
		s.log.WarnContext(ctx, "dynamo: could not remove an orphan key item", "key", is.Key, "err", derr)
	}
}

// allocateIssueNumber adds one to the workspace's issue counter and returns the new
// value with the workspace's key prefix.
//
// ADD alone would count twice when the SDK retries a request whose response was lost.
// The update therefore also records the claimant (the new issue's id) and is
// conditioned on the claimant being someone else: a retry of our own request fails the
// condition, and the re-read finds our claim with our number. If another create claimed
// in between, our number is lost (a gap in the keys), never shared.
func (s *Store) allocateIssueNumber(ctx context.Context, ws, claim string) (string, int64, error) {
	for range maxAllocAttempts {
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(wsPK(ws), skMeta),
			UpdateExpression:          aws.String("ADD issue_seq :one SET seq_claim = :c"),
			ConditionExpression:       aws.String("attribute_exists(PK) AND (attribute_not_exists(seq_claim) OR seq_claim <> :c)"),
			ExpressionAttributeValues: item{":one": avN(1), ":c": avS(claim)},
			ReturnValues:              types.ReturnValueAllNew,
		})
		var attrs item
		switch {
		case err == nil:
			attrs = out.Attributes
		case conditionFailed(err):
			it, gerr := s.get(ctx, s.table, key(wsPK(ws), skMeta), "CreateIssue")
			if gerr != nil {
				return "", 0, gerr
			}
			if it == nil {
				return "", 0, notFound("workspace")
			}
			d := decoder{it: it}
			if d.str("seq_claim") != claim {
				continue // someone else's claim overwrote ours: allocate again
			}
			attrs = it
		default:
			return "", 0, fail("CreateIssue", err)
		}
		d := decoder{it: attrs}
		prefix, n := d.str("key"), d.num("issue_seq")
		if d.err != nil || !store.ValidWorkspaceKey(prefix) || n < 1 {
			return "", 0, fail("CreateIssue", errors.Join(d.err, errors.New("workspace item lacks key or counter")))
		}
		return prefix, n, nil
	}
	return "", 0, errors.New("dynamo: issue counter contended beyond retries")
}

// putNewIssue writes the issue item. The condition keeps an existing issue; when it
// fails, the stored item is either our own (a retried request) or a concurrent create
// with the same caller-chosen id, which wins (conflict).
func (s *Store) putNewIssue(ctx context.Context, ws string, is store.Issue) (store.Issue, error) {
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                encodeIssue(ws, is),
		ConditionExpression: aws.String("attribute_not_exists(PK)"),
	})
	if err == nil {
		return is, nil
	}
	if !conditionFailed(err) {
		return store.Issue{}, fail("CreateIssue", err)
	}
	it, err := s.get(ctx, s.table, key(issuePK(ws, is.ID), skMeta), "CreateIssue")
	if err != nil {
		return store.Issue{}, err
	}
	if it != nil {
		got, err := decodeIssue(it)
		if err != nil {
			return store.Issue{}, fail("CreateIssue", err)
		}
		if got.Key == is.Key {
			return got, nil // our own write, retried by the SDK
		}
	}
	// Lost the race for the id to another create (CreateIssue removes our key item).
	return store.Issue{}, store.Errorf(store.ErrAlreadyExists, "issue id already used")
}

// UpdateIssue implements store.Writer with optimistic locking: the write is
// conditioned on the version read. It also stamps a per-call nonce, so that a retry of
// the same request (response lost, condition now false) re-reads, finds its own stamp
// and reports success instead of conflict, and the version moves exactly once.
func (s *Store) UpdateIssue(ctx context.Context, ws, idOrKey string, p store.IssuePatch) (store.Issue, bool, error) {
	n := nonce()
	for range maxUpdateAttempts {
		cur, _, err := s.loadIssue(ctx, ws, idOrKey, "UpdateIssue")
		if err != nil {
			return store.Issue{}, false, err
		}
		next, changed := p.Apply(cur)
		if !changed {
			// A repeat of an applied update: succeed without writing, whatever the
			// expected version says (docs/architecture.md section 2).
			return cur, false, nil
		}
		if p.ExpectedVersion != nil && *p.ExpectedVersion != cur.Version {
			return store.Issue{}, false, staleVersion(cur, *p.ExpectedVersion)
		}
		next.Version = cur.Version + 1
		next.UpdatedAt = s.orNow(p.UpdatedAt)
		vals := item{
			":title": avS(next.Title), ":desc": avS(next.Description),
			":tlc": avS(fold(next.Title)), ":dlc": avS(fold(next.Description)),
			":st": avS(next.Status), ":pr": avS(next.Priority), ":lb": avStrings(next.Labels),
			":upd": avTime(next.UpdatedAt), ":nv": avN(next.Version), ":cv": avN(cur.Version),
			":gsk": avS(issueListSK(next.UpdatedAt, next.ID)), ":nonce": avS(n),
		}
		expr := "SET #title = :title, #desc = :desc, title_lc = :tlc, desc_lc = :dlc, #status = :st, " +
			"priority = :pr, labels = :lb, updated_at = :upd, #version = :nv, GSI1SK = :gsk, upd_nonce = :nonce"
		if next.Assignee != nil {
			expr += ", assignee_type = :at, assignee_id = :ai"
			vals[":at"], vals[":ai"] = avS(next.Assignee.Type), avS(next.Assignee.ID)
		} else {
			expr += " REMOVE assignee_type, assignee_id"
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(issuePK(ws, cur.ID), skMeta),
			UpdateExpression:          aws.String(expr),
			ConditionExpression:       aws.String("#version = :cv"),
			ExpressionAttributeNames:  map[string]string{"#title": "title", "#desc": "description", "#status": "status", "#version": "version"},
			ExpressionAttributeValues: vals,
		})
		if err == nil {
			next.CommentCount = cur.CommentCount
			return next, true, nil
		}
		if !conditionFailed(err) {
			return store.Issue{}, false, fail("UpdateIssue", err)
		}
		// Someone moved the version, or the issue is gone, or the write was ours.
		it, err := s.get(ctx, s.table, key(issuePK(ws, cur.ID), skMeta), "UpdateIssue")
		if err != nil {
			return store.Issue{}, false, err
		}
		if it == nil {
			return store.Issue{}, false, notFound("issue")
		}
		got, err := decodeIssue(it)
		if err != nil {
			return store.Issue{}, false, fail("UpdateIssue", err)
		}
		d := decoder{it: it}
		if d.str("upd_nonce") == n {
			return got, true, nil
		}
		if p.ExpectedVersion != nil {
			return store.Issue{}, false, staleVersion(got, *p.ExpectedVersion)
		}
		// No expected version: the caller asked for last-writer-wins; apply the patch
		// again on the fresh state.
	}
	return store.Issue{}, false, store.Errorf(store.ErrConflict, "issue is being updated concurrently; retry")
}

func staleVersion(cur store.Issue, expected int64) error {
	return store.Errorf(store.ErrVersionMismatch, "issue %s is at version %d, not %d; read it again and retry",
		cur.Key, cur.Version, expected)
}

// tombstone is the stored result of a delete.
func encodeTombstone(pk string, r store.DeleteResult, n string) item {
	it := key(pk, skMeta)
	it["kind"], it["id"], it["owner"] = avS(r.Kind), avS(r.ID), avS(r.Owner)
	it["deleted_at"] = avTime(r.DeletedAt)
	it["nonce"] = avS(n)
	it[attrTTL] = ttlOf(r.DeletedAt.Add(TombstoneTTL))
	return it
}

func decodeTombstone(it item) (store.DeleteResult, string, error) {
	d := decoder{it: it}
	r := store.DeleteResult{Kind: d.str("kind"), ID: d.str("id"), Owner: d.str("owner"), DeletedAt: d.time("deleted_at")}
	return r, d.str("nonce"), d.err
}

// liveTombstone decodes a tombstone unless it has expired (TTL deletion lags by up to
// days, so expiry is checked on read).
func (s *Store) liveTombstone(it item, kind string) (store.DeleteResult, bool, error) {
	if it == nil {
		return store.DeleteResult{}, false, nil
	}
	r, _, err := decodeTombstone(it)
	if err != nil {
		return store.DeleteResult{}, false, err
	}
	if r.Kind != kind || !s.now().Before(r.DeletedAt.Add(TombstoneTTL)) {
		return store.DeleteResult{}, false, nil
	}
	r.Replay = true
	return r, true, nil
}

// putTombstone stores r under pk unless a tombstone is there already. It returns the
// stored result and whether it is ours; if not, it is the result of a delete that got
// there first (a concurrent one, or an earlier one that crashed before it finished).
// The nonce lets a retried put recognise itself.
func (s *Store) putTombstone(ctx context.Context, pk string, r store.DeleteResult, op string) (store.DeleteResult, bool, error) {
	for range 2 {
		n := nonce()
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String(s.table),
			Item:                      encodeTombstone(pk, r, n),
			ConditionExpression:       aws.String("attribute_not_exists(PK) OR nonce = :n OR #ttl < :now"),
			ExpressionAttributeNames:  map[string]string{"#ttl": attrTTL},
			ExpressionAttributeValues: item{":n": avS(n), ":now": avN(s.now().Unix())},
		})
		if err == nil {
			return r, true, nil
		}
		if !conditionFailed(err) {
			return store.DeleteResult{}, false, fail(op, err)
		}
		it, err := s.get(ctx, s.table, key(pk, skMeta), op)
		if err != nil {
			return store.DeleteResult{}, false, err
		}
		if it != nil {
			got, _, err := decodeTombstone(it)
			return got, false, fail(op, err)
		}
		// Expired and swept between the two calls: try once more.
	}
	return store.DeleteResult{}, false, errors.New("dynamo: tombstone vanished twice")
}

// DeleteIssue implements store.Writer.
//
// Three round trips, each of them one step that every concurrent delete of the issue
// runs (every write is idempotent, so they need not know of each other):
//
//  1. the issue, its tombstone and its children are read together (the children
//     beside the issue rather than after it: the read is in the issue's own
//     partition, and it costs a wasted read only when the issue is not there);
//  2. the id's tombstone beside the children and their lookup items;
//  3. the issue item beside the key's tombstone, whose content is the one step 2
//     decided.
//
// The issue item goes only once its children have, so a delete that crashed half way
// is finished by the next one (the issue is still found; the tombstone's result is
// reused). The key item is deleted after the answer (Store.later): until then, or
// forever if that write is lost, it is an orphan key item, which every read by key
// answers as not_found (see loadIssue) and a repeated delete by key follows to the
// id's tombstone; a key is never given twice, so it can block nothing.
func (s *Store) DeleteIssue(ctx context.Context, ws, idOrKey string, allow store.DeleteCheck) (store.DeleteResult, error) {
	const op = "DeleteIssue"
	if err := checkWS(ws); err != nil {
		return store.DeleteResult{}, notFound("issue")
	}
	id, reqKey := idOrKey, ""
	if prefix, n, ok := store.ParseIssueKey(idOrKey); ok {
		k := store.IssueKey(prefix, n)
		reqKey = k
		got, err := s.batchGet(ctx, s.table, []item{key(issueKeyPK(ws, k), skMeta), key(goneKeyPK(ws, k), skMeta)}, op)
		if err != nil {
			return store.DeleteResult{}, err
		}
		if ki := got[keyID(issueKeyPK(ws, k), skMeta)]; ki != nil {
			d := decoder{it: ki}
			id = d.str("issue_id")
		} else {
			r, ok, err := s.liveTombstone(got[keyID(goneKeyPK(ws, k), skMeta)], "issue")
			if err != nil {
				return store.DeleteResult{}, fail(op, err)
			}
			if ok {
				return allow.Replay(r, nil)
			}
			return store.DeleteResult{}, notFound("issue")
		}
	}
	if !validPart(id) {
		return store.DeleteResult{}, notFound("issue")
	}
	var (
		got      map[string]item
		children []item
	)
	errs := together(func() (err error) {
		got, err = s.batchGet(ctx, s.table, []item{key(issuePK(ws, id), skMeta), key(goneIssuePK(ws, id), skMeta)}, op)
		return err
	}, func() (err error) {
		children, err = s.queryAll(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(s.table),
			KeyConditionExpression:    aws.String("PK = :pk"),
			ExpressionAttributeValues: item{":pk": avS(issuePK(ws, id))},
			ProjectionExpression:      aws.String("PK, SK"),
			ConsistentRead:            aws.Bool(true),
		}, op)
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return store.DeleteResult{}, err
	}
	it := got[keyID(issuePK(ws, id), skMeta)]
	if it == nil {
		r, ok, err := s.liveTombstone(got[keyID(goneIssuePK(ws, id), skMeta)], "issue")
		if err != nil {
			return store.DeleteResult{}, fail(op, err)
		}
		if ok {
			return allow.Replay(r, nil)
		}
		return store.DeleteResult{}, notFound("issue")
	}
	is, err := decodeIssue(it)
	if err != nil {
		return store.DeleteResult{}, fail(op, err)
	}
	if reqKey != "" && is.Key != reqKey { // an orphan key item (see loadIssue)
		return store.DeleteResult{}, notFound("issue")
	}
	if err := allow.Allow(is.CreatedBy); err != nil {
		return store.DeleteResult{}, err
	}
	var keys []item
	for _, c := range children {
		d := decoder{it: c}
		sk := d.str(attrSK)
		if sk == skMeta {
			continue
		}
		keys = append(keys, key(d.str(attrPK), sk))
		if cid := trimPrefix(sk, skComment); cid != "" {
			keys = append(keys, key(commentRefPK(ws, cid), skMeta))
		}
		if rid := trimPrefix(sk, skRun); rid != "" {
			keys = append(keys, key(runRefPK(ws, rid), skMeta))
		}
	}
	res := store.DeleteResult{Kind: "issue", ID: is.ID, DeletedAt: s.now().UTC(), Owner: is.CreatedBy}
	errs = together(func() (err error) {
		res, _, err = s.putTombstone(ctx, goneIssuePK(ws, is.ID), res, op)
		return err
	}, func() error {
		return s.batchDelete(ctx, keys, op)
	})
	if err := errors.Join(errs...); err != nil {
		return store.DeleteResult{}, err
	}
	// The key's tombstone repeats the id's (same content: a plain put is idempotent).
	errs = together(func() error {
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.table),
			Item:      encodeTombstone(goneKeyPK(ws, is.Key), res, ""),
		})
		return fail(op, err)
	}, func() error {
		_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table),
			Key:       key(issuePK(ws, is.ID), skMeta),
		})
		return fail(op, err)
	})
	if err := errors.Join(errs...); err != nil {
		return store.DeleteResult{}, err
	}
	s.laterDelete(ctx, "delete an issue's key item", dynamodb.DeleteItemInput{
		Key:                       key(issueKeyPK(ws, is.Key), skMeta),
		ConditionExpression:       aws.String("issue_id = :id"),
		ExpressionAttributeValues: item{":id": avS(is.ID)},
	}, "issue", is.ID, "key", is.Key)
	res.Replay = false
	return res, nil
}

// issueListAttrs are the attributes of a GSI1 start key.
var issueListAttrs = []string{attrPK, attrSK, attrGSI1PK, attrGSI1SK}

// ListIssues implements store.Reader: newest update first (ties by id, descending),
// from the workspace's GSI1 partition. Filters are a FilterExpression; the loop reads
// on until the page is full or maxListQueries calls were spent. The cursor is the key
// of the last issue returned when the page filled, else the last key evaluated.
func (s *Store) ListIssues(ctx context.Context, ws string, f store.IssueFilter) (store.IssuePage, error) {
	const op = "ListIssues"
	limit := store.PageLimit(f.Limit)
	page := store.IssuePage{Issues: make([]store.Issue, 0, limit)}
	if err := checkWS(ws); err != nil {
		return page, nil
	}
	fp := fingerprint(ws, "issues", f.Status, f.Assignee, f.Label, f.Query)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(indexGSI1),
		KeyConditionExpression:    aws.String("GSI1PK = :pk"),
		ExpressionAttributeValues: item{":pk": avS(issueListPK(ws))},
		ScanIndexForward:          aws.Bool(false),
	}
	if f.Cursor != "" {
		start, err := s.decodeCursor(f.Cursor, fp, issueListAttrs, func(k map[string]string) bool {
			id, ok := strings.CutPrefix(k[attrPK], issuePK(ws, ""))
			return ok && validPart(id) && k[attrSK] == skMeta && k[attrGSI1PK] == issueListPK(ws) &&
				strings.HasPrefix(k[attrGSI1SK], "UPD#") && strings.HasSuffix(k[attrGSI1SK], "#"+id)
		})
		if err != nil {
			return store.IssuePage{}, err
		}
		in.ExclusiveStartKey = start
	}
	var conds []string
	names := map[string]string{}
	if f.Status != "" {
		conds = append(conds, "#status = :st")
		names["#status"] = "status"
		in.ExpressionAttributeValues[":st"] = avS(f.Status)
	}
	if f.Assignee != "" {
		conds = append(conds, "assignee_id = :as")
		in.ExpressionAttributeValues[":as"] = avS(f.Assignee)
	}
	if f.Label != "" {
		conds = append(conds, "contains(labels, :lb)")
		in.ExpressionAttributeValues[":lb"] = avS(f.Label)
	}
	if f.Query != "" {
		conds = append(conds, "(contains(title_lc, :q) OR contains(desc_lc, :q))")
		in.ExpressionAttributeValues[":q"] = avS(fold(f.Query))
	}
	if len(conds) > 0 {
		in.FilterExpression = aws.String(strings.Join(conds, " AND "))
		if len(names) > 0 {
			in.ExpressionAttributeNames = names
		}
		// Limit counts items read before the filter: read generously per call.
		in.Limit = aws.Int32(int32(min(max(4*(limit+1), 100), 500)))
	} else {
		// One more than the page: its presence says whether a next page exists.
		in.Limit = aws.Int32(int32(limit + 1))
	}
	var lastKey item
	for calls := 1; ; calls++ {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return store.IssuePage{}, fail(op, err)
		}
		for _, it := range out.Items {
			if len(page.Issues) == limit {
				// A further match exists: the next page starts after the last one returned.
				return s.finishIssuePage(page, fp, lastKey)
			}
			is, err := decodeIssue(it)
			if err != nil {
				return store.IssuePage{}, fail(op, err)
			}
			page.Issues = append(page.Issues, is)
			lastKey = item{}
			for _, a := range issueListAttrs {
				lastKey[a] = it[a]
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, nil
		}
		if len(page.Issues) == limit || calls == maxListQueries {
			return s.finishIssuePage(page, fp, out.LastEvaluatedKey)
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func (s *Store) finishIssuePage(page store.IssuePage, fp string, start item) (store.IssuePage, error) {
	c, err := s.encodeCursor(fp, start)
	if err != nil {
		return store.IssuePage{}, err
	}
	page.NextCursor = c
	return page, nil
}

package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// encodeRun is run r's item in its issue's partition, marked with nonce n, the
// writing call's; decodeRun reads it.
func encodeRun(ws string, r store.AutopilotRun, n string) item {
	it := key(issuePK(ws, r.IssueID), skRun+r.ID)
	it["id"], it["issue_id"], it["issue_key"], it["status"] = avS(r.ID), avS(r.IssueID), avS(r.IssueKey), avS(r.Status)
	it["instructions"], it["requested_by"], it["attempts"] = avS(r.Instructions), avS(r.RequestedBy), avN(int64(r.Attempts))
	it["error"], it["created_at"], it["updated_at"] = avS(r.Error), avTime(r.CreatedAt), avTime(r.UpdatedAt)
	it["nonce"] = avS(n)
	return it
}

func decodeRun(it item) (store.AutopilotRun, error) {
	d := decoder{it: it}
	r := store.AutopilotRun{
		ID:           d.str("id"),
		IssueID:      d.str("issue_id"),
		IssueKey:     d.str("issue_key"),
		Status:       d.str("status"),
		Instructions: d.str("instructions"),
		RequestedBy:  d.str("requested_by"),
		Attempts:     int(d.num("attempts")),
		Error:        d.str("error"),
		CreatedAt:    d.time("created_at"),
		UpdatedAt:    d.time("updated_at"),
	}
	return r, d.err
}

// CreateAutopilotRun implements store.Writer. The run lives in its issue's partition,
// so deleting the issue takes it along.
func (s *Store) CreateAutopilotRun(ctx context.Context, ws string, r store.AutopilotRun) (store.AutopilotRun, error) {
	const op = "CreateAutopilotRun"
	if r.ID == "" {
		r.ID = store.NewULID()
	} else if !validPart(r.ID) {
		return store.AutopilotRun{}, store.Invalid("run id must not be empty or contain '#'")
	}
	if checkWS(ws) != nil || !validPart(r.IssueID) {
		return store.AutopilotRun{}, notFound("issue")
	}
	r.CreatedAt = s.orNow(r.CreatedAt)
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	r.UpdatedAt = r.UpdatedAt.UTC()
	n := nonce()
	it := encodeRun(ws, r, n)
	ref := item{
		attrPK: avS(runRefPK(ws, r.ID)), attrSK: avS(skMeta),
		"issue_id": avS(r.IssueID), "nonce": avS(n),
	}
	// The issue must exist (the embedded store's foreign key). It is read beside the
	// two puts, not before them: one round trip instead of two; a run written for a
	// missing issue is taken back before the call answers. A crash between the puts
	// leaves a lookup item that points at no run (UpdateAutopilotRun answers
	// not_found) or a run without one, found in its issue's partition only (and
	// updated through its issue id, see UpdateAutopilotRun). The nonce lets a
	// retried put pass its own condition while another call reusing the id is a
	// conflict.
	put := func(x item) func() error {
		return func() error { return s.claim(ctx, s.table, x, n, "autopilot run id already used", op) }
	}
	var exists bool
	errs := together(func() error {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:            aws.String(s.table),
			Key:                  key(issuePK(ws, r.IssueID), skMeta),
			ProjectionExpression: aws.String("PK"),
			ConsistentRead:       aws.Bool(true),
		})
		if err != nil {
			return fail(op, err)
		}
		exists = len(out.Item) > 0
		return nil
	}, put(ref), put(it))
	if errs[0] == nil && exists && errs[1] == nil && errs[2] == nil {
		return r, nil
	}
	// Take back what was written: the items of ours that succeeded (by our nonce).
	for i, k := range []item{key(runRefPK(ws, r.ID), skMeta), key(issuePK(ws, r.IssueID), skRun+r.ID)} {
		if errs[i+1] != nil {
			continue
		}
		if err := s.release(ctx, s.table, k, n); err != nil {
			return store.AutopilotRun{}, fail(op, err)
		}
	}
	for _, err := range errs {
		if err != nil {
			return store.AutopilotRun{}, err
		}
	}
	return store.AutopilotRun{}, notFound("issue")
}

// UpdateAutopilotRun implements store.Writer: one UpdateItem of the run in the
// partition of the issue it names (the lookup item is read only when the run is not
// there). SET is idempotent, so a retried request is harmless.
func (s *Store) UpdateAutopilotRun(ctx context.Context, ws string, r store.AutopilotRun) (store.AutopilotRun, error) {
	const op = "UpdateAutopilotRun"
	if checkWS(ws) != nil || !validPart(r.ID) {
		return store.AutopilotRun{}, notFound("autopilot run")
	}
	// The run names its issue: update it there at once, and follow the lookup item
	// only if it is not there (an issue id the caller got wrong).
	if validPart(r.IssueID) {
		got, err := s.updateRun(ctx, ws, r.IssueID, r)
		if !errors.Is(err, store.ErrNotFound) {
			return got, err
		}
	}
	issueID, err := s.follow(ctx, s.table, key(runRefPK(ws, r.ID), skMeta), "issue_id", "autopilot run", op)
	if err != nil {
		return store.AutopilotRun{}, err
	}
	if issueID == r.IssueID {
		return store.AutopilotRun{}, notFound("autopilot run")
	}
	return s.updateRun(ctx, ws, issueID, r)
}

// updateRun is UpdateAutopilotRun's one UpdateItem on the run in issueID's partition.
func (s *Store) updateRun(ctx context.Context, ws, issueID string, r store.AutopilotRun) (store.AutopilotRun, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(issuePK(ws, issueID), skRun+r.ID),
		UpdateExpression:         aws.String("SET #status = :st, attempts = :at, #error = :er, updated_at = :up"),
		ConditionExpression:      aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#error": "error"},
		ExpressionAttributeValues: item{
			":st": avS(r.Status), ":at": avN(int64(r.Attempts)), ":er": avS(r.Error), ":up": avTime(s.orNow(r.UpdatedAt)),
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if conditionFailed(err) {
		return store.AutopilotRun{}, notFound("autopilot run")
	}
	if err != nil {
		return store.AutopilotRun{}, fail("UpdateAutopilotRun", err)
	}
	got, err := decodeRun(out.Attributes)
	return got, fail("UpdateAutopilotRun", err)
}

// UpdateUsage implements store.Writer with one conditional UpdateItem; it is the only
// call a tool call waits for.
//
// The ADD also puts the call's event id into the counter item's evs set and is
// conditioned on its absence, so the SDK resending an ADD whose response was lost
// fails the condition instead of counting twice. That is the contract's guarantee; it
// relies on EventID being unique per call, which the guard ensures (a fresh ULID per
// audit record). An EventID repeated by a second call after its cleanup is counted
// again. Until issue 7 a 24-hour marker item per event id also refused such repeats:
// it cost a sequential round trip on every tool call and guarded against something no
// caller does, so it was dropped (old markers expire by TTL).
//
// The id leaves the set after UpdateUsage returns (Store.later): the guard only has to
// stay while the SDK may still resend the ADD, and that ends when the call returns. A
// cleanup that never runs (a Lambda sandbox shut down while frozen, a DynamoDB error)
// leaves one 26-byte id in that day's item of the tool; counts stay exact.
func (s *Store) UpdateUsage(ctx context.Context, u store.UsageIncrement) error {
	const op = "UpdateUsage"
	if err := checkWS(u.WorkspaceID); err != nil {
		return store.Invalid("usage needs a valid workspace")
	}
	if !validPart(u.Tool) {
		return store.Invalid("usage needs a tool name without '#'")
	}
	denied, errs, err := u.Counts()
	if err != nil {
		return err
	}
	ev := u.EventID
	if ev == "" {
		ev = nonce() // still guard the ADD against its own retry
	} else if !validPart(ev) {
		return store.Invalid("usage event id must not contain '#'")
	}
	k := key(usagePK(u.WorkspaceID), usageSK(u.Date, u.Tool))
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      k,
		UpdateExpression:         aws.String("SET #date = :date, tool = :tool ADD calls :one, denied :dn, #errors :er, evs :evs"),
		ConditionExpression:      aws.String("NOT contains(evs, :ev)"),
		ExpressionAttributeNames: map[string]string{"#date": "date", "#errors": "errors"},
		ExpressionAttributeValues: item{
			":date": avS(u.Date), ":tool": avS(u.Tool), ":one": avN(1), ":dn": avN(denied), ":er": avN(errs),
			":evs": avSet(ev), ":ev": avS(ev),
		},
	})
	if conditionFailed(err) {
		// Our own ADD, resent by the SDK after it had applied: counted once. Its id
		// is in the set, so the cleanup below is still due.
		err = nil
	}
	if err != nil {
		return fail(op, err)
	}
	// The condition keeps an update from creating a key-only item (a row without
	// date or tool) should the counter item be gone by now.
	s.laterUpdate(ctx, "clear a usage guard", dynamodb.UpdateItemInput{
		Key:                       k,
		UpdateExpression:          aws.String("DELETE evs :evs"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: item{":evs": avSet(ev)},
	}, "workspace_id", u.WorkspaceID, "date", u.Date, "tool", u.Tool, "event", ev)
	return nil
}

// ListUsage implements store.Reader: one Query over the workspace's usage partition,
// whose sort key orders by date then tool.
func (s *Store) ListUsage(ctx context.Context, ws, from, to string) ([]store.UsageRow, error) {
	rows := []store.UsageRow{}
	f, ferr := time.Parse(time.DateOnly, from)
	t, terr := time.Parse(time.DateOnly, to)
	if ferr != nil || terr != nil {
		return nil, store.Invalid("dates must be YYYY-MM-DD")
	}
	if checkWS(ws) != nil || t.Before(f) {
		return rows, nil
	}
	return queryDecoded(ctx, s, &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("PK = :pk AND SK BETWEEN :a AND :b"),
		ExpressionAttributeValues: item{
			// '$' sorts right after '#', so ":b" is past every tool of the last day.
			":pk": avS(usagePK(ws)), ":a": avS("DAY#" + from + "#"), ":b": avS("DAY#" + to + "$"),
		},
		ConsistentRead: aws.Bool(true),
	}, "ListUsage", func(it item) (store.UsageRow, error) {
		d := decoder{it: it}
		r := store.UsageRow{Date: d.str("date"), Tool: d.str("tool"), Calls: d.num("calls"), Denied: d.num("denied"), Errors: d.num("errors")}
		return r, d.err
	})
}

func checkIdemKey(k store.IdempotencyKey) bool {
	return checkWS(k.WorkspaceID) == nil && validPart(k.UserID) && validPart(k.Tool) && validPart(k.KeyHash)
}

func idemKey(k store.IdempotencyKey) item {
	return key(idemPK(k.WorkspaceID, k.UserID, k.Tool, k.KeyHash), skMeta)
}

func encodeIdem(rec store.IdempotencyRecord) item {
	it := idemKey(rec.IdempotencyKey)
	it["state"], it["args_digest"], it["resource_id"] = avS(rec.State), avS(rec.ArgsDigest), avS(rec.ResourceID)
	if len(rec.Result) > 0 {
		it["result"] = avBytes(rec.Result)
	}
	it["created_at"], it["expires_at"] = avTime(rec.CreatedAt), avTime(rec.ExpiresAt)
	it[attrTTL] = ttlOf(rec.ExpiresAt)
	return it
}

// CreateIdempotency implements store.Writer: a conditional put claims the key. The
// condition admits our own retried request (nonce), an expired record that TTL has
// not swept yet, and the record rec.Supersedes names while it is stored unchanged
// (same state and created_at, which the fixed-width time layout compares exactly):
// of two takeovers of the same record, the second finds the first one's claim and
// fails with conflict.
func (s *Store) CreateIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	if !checkIdemKey(rec.IdempotencyKey) {
		return store.Invalid("idempotency key parts must be non-empty and without '#'")
	}
	rec.CreatedAt = s.orNow(rec.CreatedAt)
	if rec.State == "" {
		rec.State = store.IdemPending
	}
	n := nonce()
	it := encodeIdem(rec)
	it["nonce"] = avS(n)
	cond := "attribute_not_exists(PK) OR nonce = :n OR #ttl < :now"
	names := map[string]string{"#ttl": attrTTL}
	values := item{":n": avS(n), ":now": avN(s.now().Unix())}
	if p := rec.Supersedes; p != nil && p.State != "" {
		cond += " OR (#state = :supState AND created_at = :supCreated)"
		names["#state"] = "state"
		values[":supState"], values[":supCreated"] = avS(p.State), avTime(p.CreatedAt)
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      it,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if conditionFailed(err) {
		return store.Errorf(store.ErrConflict, "idempotency key already claimed")
	}
	return fail("CreateIdempotency", err)
}

// GetIdempotency implements store.Reader; an expired record is not_found.
func (s *Store) GetIdempotency(ctx context.Context, k store.IdempotencyKey) (store.IdempotencyRecord, error) {
	if !checkIdemKey(k) {
		return store.IdempotencyRecord{}, notFound("idempotency record")
	}
	it, err := s.get(ctx, s.table, idemKey(k), "GetIdempotency")
	if err != nil {
		return store.IdempotencyRecord{}, err
	}
	if it == nil {
		return store.IdempotencyRecord{}, notFound("idempotency record")
	}
	d := decoder{it: it}
	rec := store.IdempotencyRecord{
		IdempotencyKey: k,
		State:          d.str("state"),
		ArgsDigest:     d.str("args_digest"),
		Result:         d.bytes("result"),
		ResourceID:     d.str("resource_id"),
		CreatedAt:      d.time("created_at"),
		ExpiresAt:      d.time("expires_at"),
	}
	if d.err != nil {
		return store.IdempotencyRecord{}, fail("GetIdempotency", d.err)
	}
	if !s.now().Before(rec.ExpiresAt) {
		return store.IdempotencyRecord{}, notFound("idempotency record")
	}
	return rec, nil
}

// UpdateIdempotency implements store.Writer: a conditional put replaces the caller's
// claim with the final record. The condition admits the stored claim only while it is
// pending with the same created_at (the fixed-width time layout compares exactly), and
// our own retried request (nonce): a lost response's retry finds the record already
// completed by itself. Whether a refusal is conflict or not_found takes one read.
func (s *Store) UpdateIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	if !checkIdemKey(rec.IdempotencyKey) {
		return notFound("idempotency record")
	}
	if err := store.CheckClaimTime(rec.CreatedAt); err != nil {
		return err
	}
	if rec.State == "" {
		rec.State = store.IdemCompleted
	}
	n := nonce()
	it := encodeIdem(rec)
	it["nonce"] = avS(n)
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      it,
		ConditionExpression:       aws.String("(#state = :pending AND created_at = :claimCreated) OR nonce = :n"),
		ExpressionAttributeNames:  map[string]string{"#state": "state"},
		ExpressionAttributeValues: item{":pending": avS(store.IdemPending), ":claimCreated": avTime(rec.CreatedAt), ":n": avS(n)},
	})
	if conditionFailed(err) {
		return s.notOurClaim(ctx, rec.IdempotencyKey, notFound("idempotency record"))
	}
	return fail("UpdateIdempotency", err)
}

// DeleteIdempotency implements store.Writer: a conditional delete of the caller's
// claim, pending with the same created_at. Deleting nothing succeeds, so a retried
// request whose first attempt was applied succeeds too.
func (s *Store) DeleteIdempotency(ctx context.Context, k store.IdempotencyKey, createdAt time.Time) error {
	if !checkIdemKey(k) {
		return nil
	}
	if err := store.CheckClaimTime(createdAt); err != nil {
		return err
	}
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       idemKey(k),
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR (#state = :pending AND created_at = :claimCreated)"),
		ExpressionAttributeNames:  map[string]string{"#state": "state"},
		ExpressionAttributeValues: item{":pending": avS(store.IdemPending), ":claimCreated": avTime(createdAt)},
	})
	if conditionFailed(err) {
		return s.notOurClaim(ctx, k, nil)
	}
	return fail("DeleteIdempotency", err)
}

// notOurClaim classifies a refused settle or release: the key holds another call's
// live record (conflict), or only an expired one, which counts as nothing held
// (ifNone), as it does for GetIdempotency and for a new claim.
func (s *Store) notOurClaim(ctx context.Context, k store.IdempotencyKey, ifNone error) error {
	_, err := s.GetIdempotency(ctx, k)
	switch {
	case err == nil:
		return store.Errorf(store.ErrConflict, "idempotency key no longer holds this call's claim")
	case errors.Is(err, store.ErrNotFound):
		return ifNone
	default:
		return err
	}
}

// UpdateRateCounter implements store.Writer with one ADD. Unlike the other counters it
// is not guarded against the SDK retrying a lost response: a retry counts one call
// twice, which errs toward limiting, while a guard would cost a second write on every
// tool call. The window start is part of the key, so a new window starts at zero and
// TTL removes old ones.
func (s *Store) UpdateRateCounter(ctx context.Context, ws, k string, windowStart time.Time, window time.Duration) (int64, error) {
	if checkWS(ws) != nil || k == "" || len(k) > 512 {
		return 0, store.Invalid("rate counter needs a workspace and a key")
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      key(ratePK(ws, k, windowStart), skMeta),
		UpdateExpression:         aws.String("ADD #count :one SET #ttl = if_not_exists(#ttl, :ttl)"),
		ExpressionAttributeNames: map[string]string{"#count": "count", "#ttl": attrTTL},
		ExpressionAttributeValues: item{
			":one": avN(1), ":ttl": ttlOf(windowStart.Add(window).Add(time.Minute)),
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fail("UpdateRateCounter", err)
	}
	d := decoder{it: out.Attributes}
	n := d.num("count")
	if d.err != nil || n < 1 {
		return 0, fail("UpdateRateCounter", errors.Join(d.err, errors.New("counter missing from the answer")))
	}
	return n, nil
}

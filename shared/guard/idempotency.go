package guard

import (
	"context"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/catalog"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// PendingLease is how long a pending claim holds its key. A claim older than this
// belongs to a call whose process died between claiming and settling (kill -9, a
// Lambda timeout): nothing will ever complete or release it, and without a lease the
// client's retry would be refused as "in progress" until the record expires (24 h).
// It is far above the longest call (the local server's 90 s write timeout, the
// Lambda's timeout), so a live call is never taken over.
const PendingLease = 5 * time.Minute

// claimAttempts bounds the create-or-read loop: a key released (or expired) between
// our failed claim and our read is claimed again, but not forever.
const claimAttempts = 3

// runIdempotent runs a tool that accepts an idempotency key, generically for every
// such tool: the first call with a key claims it, runs and stores its result; a
// repeat with the same arguments gets that result again (Replay); a repeat with
// other arguments, or one that arrives while the first still runs, is conflict.
func (g *Guard) runIdempotent(ctx context.Context, c *call, tc catalog.Call, key string) Result {
	p := tc.Principal
	k := store.IdempotencyKey{
		WorkspaceID: p.WorkspaceID,
		UserID:      p.UserID,
		Tool:        c.tool.Name,
		KeyHash:     sha256Hex([]byte(key)),
	}
	claim := store.IdempotencyRecord{
		IdempotencyKey: k,
		State:          store.IdemPending,
		ArgsDigest:     c.args.digestWithout(idempotencyKeyArg),
		CreatedAt:      c.now,
		ExpiresAt:      c.now.Add(g.idemTTL),
	}

	claimed := false
	for range claimAttempts {
		err := g.store.CreateIdempotency(ctx, claim)
		if err == nil {
			claimed = true
			break
		}
		if !apperr.Is(err, apperr.Conflict) {
			return Result{Err: apperr.As(err)}
		}
		claim.Supersedes = nil
		prev, err := g.store.GetIdempotency(ctx, k)
		if apperr.Is(err, apperr.NotFound) {
			continue // released in between: claim again
		}
		if err != nil {
			return Result{Err: apperr.As(err)}
		}
		expired := !prev.ExpiresAt.IsZero() && !c.now.Before(prev.ExpiresAt)
		abandoned := prev.State == store.IdemPending && c.now.Sub(prev.CreatedAt) > PendingLease
		if expired || abandoned {
			// Expired but not yet swept (DynamoDB TTL is lazy), or claimed by a call
			// that died: it no longer counts, and the next claim takes the key over.
			// Only from this very record, though: several retries may have read it at
			// once, and a release followed by a fresh claim would let each one delete
			// the claim of the retry before it and run too. The store replaces it only
			// if it is still stored unchanged; a retry that finds it already replaced
			// gets conflict, reads the winner's claim and is refused as in progress,
			// like any duplicate of a running call.
			claim.Supersedes = &prev
			continue
		}
		if prev.ArgsDigest != claim.ArgsDigest {
			return Result{Err: apperr.New(apperr.Conflict, "idempotency key reused with different arguments")}
		}
		if prev.State == store.IdemCompleted {
			if prev.ResourceID != "" {
				c.rec.ResourceID = truncate(prev.ResourceID, maxAuditText)
			}
			return Result{JSON: prev.Result, Replay: true}
		}
		return Result{Err: errInProgress()}
	}
	if !claimed {
		return Result{Err: errInProgress()}
	}

	res := g.invoke(ctx, c, tc)

	// The claim must be settled even if the caller has gone away meanwhile.
	dctx := detach(ctx)
	defer dctx.cancel()
	if res.Err != nil {
		// Release the key so that a retry of a failed call may run again.
		if err := g.store.DeleteIdempotency(dctx, k); err != nil && !apperr.Is(err, apperr.NotFound) {
			g.log.Error("idempotency claim not released; retries with this key will conflict until it expires",
				"tool", c.tool.Name, "workspace_id", k.WorkspaceID, "err", err)
		}
		return res
	}
	done := claim
	done.Supersedes = nil
	done.State = store.IdemCompleted
	done.Result = res.JSON
	done.ResourceID = c.rec.ResourceID
	if err := g.store.UpdateIdempotency(dctx, done); err != nil {
		// The call succeeded and its effect is stored; failing it now would invite a
		// blind retry that duplicates it. Answer the result and make the gap loud.
		g.log.Error("idempotency result not stored; a retry with this key will conflict until it expires",
			"tool", c.tool.Name, "workspace_id", k.WorkspaceID, "err", err)
	}
	return res
}

func errInProgress() *apperr.Error {
	return apperr.New(apperr.Conflict, "a call with this idempotency key is in progress")
}

package guard

import (
	"context"
	"errors"
	"github.com/aacworkflow/aacmcp/shared/audit/record"
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
		if !errors.Is(err, store.ErrConflict) {
			return Result{Err: errorOf(err)}
		}
		claim.Supersedes = nil
		prev, err := g.store.GetIdempotency(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			continue // released in between: claim again
		}
		if err != nil {
			return Result{Err: errorOf(err)}
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
				record.SetResourceID(&c.rec, prev.ResourceID)
			}
			return Result{JSON: prev.Result, Replay: true}
		}
		return Result{Err: errInProgress()}
	}
	if !claimed {
		return Result{Err: errInProgress()}
	}

	res := g.invoke(ctx, c, tc)

	// The claim must be settled even if the caller has gone away meanwhile. Both the
	// release and the settle apply only while the key still holds this very claim
	// (its CreatedAt, as stored): a call that outlived PendingLease may have been
	// taken over by a retry, and overwriting or deleting the retry's record would
	// store a second result or let a third retry run the effect again.
	dctx := detach(ctx)
	defer dctx.cancel()
	if res.Err != nil {
		// Release the key so that a retry of a failed call may run again.
		err := g.store.DeleteIdempotency(dctx, k, claim.CreatedAt)
		switch {
		case err == nil || errors.Is(err, store.ErrNotFound):
		case errors.Is(err, store.ErrConflict):
			g.warnTakenOver(c, k, claim)
		default:
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
	err := g.store.UpdateIdempotency(dctx, done)
	if errors.Is(err, store.ErrNotFound) {
		// Our claim is gone and nothing holds the key: a retry took it over, failed
		// and released it (or the claim outlived its record). This call's effect is
		// stored, so its result must be, or the next retry would run the effect
		// again. Creating succeeds only on a free key: a call that claimed it since
		// keeps it (conflict).
		err = g.store.CreateIdempotency(dctx, done)
		if err == nil {
			g.warnTakenOver(c, k, claim)
			return res
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, store.ErrConflict):
		g.warnTakenOver(c, k, claim)
	default:
		// The call succeeded and its effect is stored; failing it now would invite a
		// blind retry that duplicates it. Answer the result and make the gap loud.
		g.log.Error("idempotency result not stored; a retry with this key will conflict until it expires",
			"tool", c.tool.Name, "workspace_id", k.WorkspaceID, "err", err)
	}
	return res
}

// warnTakenOver reports a call that finished after a retry had taken its key over:
// its record was left to the retry, and its answer still goes to its own caller. Not
// a failure of the call, but a sign that PendingLease is shorter than a real call
// took, so both ran the effect.
func (g *Guard) warnTakenOver(c *call, k store.IdempotencyKey, claim store.IdempotencyRecord) {
	g.log.Warn("idempotency claim was taken over by a retry while the call ran; the retry's record is kept",
		"tool", c.tool.Name, "workspace_id", k.WorkspaceID, "claimed_at", claim.CreatedAt,
		"ran_for", time.Since(c.started).Round(time.Millisecond), "lease", PendingLease)
}

func errInProgress() *apperr.Error {
	return apperr.New(apperr.Conflict, "a call with this idempotency key is in progress")
}

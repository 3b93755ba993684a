package guard

import (
	"context"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth"
)

// Limiter decides whether a call may proceed. It is consulted after the scope and
// confirm checks and before argument validation, so a flood of malformed calls is
// throttled too; and for a delete refused for its missing confirm, before the
// preview reads the item, so those refusals are not a way around it for reads.
//
// Allow returns retryAfter > 0 when the call must be refused. An error means the
// limiter could not decide (its store failed); the guard then lets the call through
// and logs, because rate limiting protects capacity, not data: scopes, roles and
// workspaces are still enforced.
type Limiter interface {
	Allow(ctx context.Context, p auth.Principal, tool string, now time.Time) (retryAfter time.Duration, err error)
}

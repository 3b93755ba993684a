package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

// edgeWAF is the distribution's web ACL: the stack's rate-based rules
// (ratelimit.EdgeLimits.Rules, the table infra builds them from), enforced before
// the request reaches the origin, with WAF's custom response: 429, a static
// Retry-After and the rule's body.
//
// WAF counts over a sliding window; this counts in fixed windows of the same
// length aligned to the epoch, so a limit holds the same number of requests and
// only the moment it lifts differs. As in WAF, rules are evaluated in order and
// the first that blocks ends the evaluation; a request counts towards every rule
// it reaches whose scope it is in, blocked or not, so a flood stays blocked.
type edgeWAF struct {
	rules []ratelimit.EdgeRule
	now   func() time.Time

	mu     sync.Mutex
	window time.Time
	counts map[edgeCounter]int
}

type edgeCounter struct {
	rule int
	key  string
}

func newEdgeWAF(rules []ratelimit.EdgeRule, now func() time.Time) *edgeWAF {
	if now == nil {
		now = time.Now
	}
	return &edgeWAF{rules: rules, now: now, counts: map[edgeCounter]int{}}
}

// block returns the rule that refuses r, or nil. ip is the viewer's address.
func (e *edgeWAF) block(r *http.Request, ip string) *ratelimit.EdgeRule {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.now().UTC().Truncate(ratelimit.EdgeWindow); !w.Equal(e.window) {
		e.window, e.counts = w, map[edgeCounter]int{}
	}
	for i := range e.rules {
		rule := &e.rules[i]
		if !rule.Scope.Matches(r.URL.Path, r.Header) {
			continue
		}
		key := ip
		if rule.Key == ratelimit.KeyToken {
			key = r.Header.Get("Authorization")
		}
		c := edgeCounter{rule: i, key: key}
		e.counts[c]++
		if e.counts[c] > rule.Limit {
			return rule
		}
	}
	return nil
}

// refuse writes WAF's custom response of rule.
func refuse(w http.ResponseWriter, rule *ratelimit.EdgeRule) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(ratelimit.EdgeRetryAfterSeconds))
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write([]byte(rule.Body()))
}

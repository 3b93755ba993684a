package gateway

import (
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// authorization is an authorizer's answer: its policy and context.
type authorization struct {
	principalID string
	policy      events.APIGatewayCustomAuthorizerPolicy
	context     map[string]any
}

// allows evaluates the policy for a method ARN the way IAM does for execute-api:
// an explicit Deny wins, else an Allow must match.
func (a *authorization) allows(methodArn string) bool {
	allowed := false
	for _, st := range a.policy.Statement {
		if !matchesAny(st.Action, "execute-api:Invoke") || !matchesAny(st.Resource, methodArn) {
			continue
		}
		switch st.Effect {
		case "Deny":
			return false
		case "Allow":
			allowed = true
		}
	}
	return allowed
}

func matchesAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if wildcard(p, s) {
			return true
		}
	}
	return false
}

// wildcard matches IAM-style patterns: '*' any run of characters, '?' one character.
func wildcard(p, s string) bool {
	// Iterative matcher with backtracking to the last '*': linear in practice and
	// without recursion on hostile input.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		// A '*' in the pattern is a wildcard even where s has a '*' too: checked
		// before the literal match, or "*" would fail to match "*0".
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	return strings.Trim(p[pi:], "*") == ""
}

// policyCache is the authorizer result cache, keyed by the identity source (the
// Authorization header), like API Gateway's.
type policyCache struct {
	ttl  time.Duration
	size int

	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	a       *authorization
	expires time.Time
}

func newPolicyCache(ttl time.Duration, size int) *policyCache {
	return &policyCache{ttl: ttl, size: size, entries: map[string]cacheEntry{}}
}

func (c *policyCache) get(key string, now time.Time) (*authorization, bool) {
	if c.ttl <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	if !now.Before(e.expires) {
		delete(c.entries, key)
		return nil, false
	}
	return e.a, true
}

func (c *policyCache) put(key string, a *authorization, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.size {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		// Still full: drop arbitrary entries; a miss only costs an authorizer call.
		for k := range c.entries {
			if len(c.entries) < c.size {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = cacheEntry{a: a, expires: now.Add(c.ttl)}
}

package oauth

import (
	"net/netip"
	"strconv"
	"time"
)

// DefaultPendingLimit is how many sign-ins one source address may start per
// PendingTTL (Config.PendingLimit).
const DefaultPendingLimit = 30

// Every sign-in an authorization request (or the grants page) starts stores a
// pending request of a few kilobytes before anyone has signed in, so it is the one
// row an anonymous caller can make this server store. The rows live PendingTTL;
// counting them per source in windows of PendingTTL bounds what one source can
// hold at once to twice Config.PendingLimit (a window's and the last one's).
//
// Not storing anything until sign-in (the request sealed into the browser's
// cookie) would need a key every instance of the OAuth function shares, and that
// function has none; the counter is the store's, shared already.

// sourceKey is what a per-source limit counts: the address, or for IPv6 its /64,
// since one subscriber commonly holds a whole /64 and would otherwise have 2^64
// sources. An IPv4-mapped address counts as the IPv4 address.
func sourceKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return addr
	}
	return p.String()
}

// countSource counts one more request of kind from this request's source in the
// current window of length window. It returns the seconds until the window ends
// when the source is over limit (0 when it is not); e is a store failure.
func (q *request) countSource(kind string, window time.Duration, limit int) (retry int64, e *Error) {
	now := q.s.now().UTC()
	start := now.Truncate(window)
	n, err := q.s.cfg.Counter.UpdateRateCounter(q.ctx(), "", kind+":"+sourceKey(sourceIP(q.r.RemoteAddr)), start, window)
	if err != nil {
		return 0, q.internal("counted the request", err)
	}
	if n <= int64(limit) {
		return 0, nil
	}
	retry = int64(start.Add(window).Sub(now)/time.Second) + 1
	q.w.Header().Set("Retry-After", strconv.FormatInt(retry, 10))
	return retry, nil
}

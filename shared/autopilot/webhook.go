package autopilot

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/retry"
)

// Webhook headers. The signature header carries the signing time and the HMAC of
// that time and the exact body bytes (see Sign); receivers verify it with Verify
// before parsing the body, and deduplicate on Idempotency-Key (the run id), since a
// retried POST whose answer was lost arrives twice.
const (
	HeaderSignature      = "X-AAC-Signature"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// SignatureTolerance is how far the signing time of a delivery may be from the
// receiver's clock, either way, for Verify to accept it. A captured delivery can be
// replayed only within this window, where Idempotency-Key deduplication catches it.
const SignatureTolerance = 5 * time.Minute

// Signature header parts: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">.
const (
	sigTimestampKey = "t"
	sigSchemeV1     = "v1"
	// maxSignatureHeader bounds the header Verify parses (a few signatures fit).
	maxSignatureHeader = 1024
)

// Verification failures, for receivers that want to log why (all mean "reject").
var (
	ErrSignatureMalformed = errors.New("autopilot webhook: signature header is missing or malformed")
	ErrSignatureExpired   = errors.New("autopilot webhook: signature is older than the tolerance (a replay?)")
	ErrSignatureFuture    = errors.New("autopilot webhook: signature time is too far in the future")
	ErrSignatureMismatch  = errors.New("autopilot webhook: no signature matches the body")
)

// Defaults keep a dispatch well inside an API Gateway / Lambda request budget.
const (
	defaultAttempts   = 3
	defaultBaseDelay  = 200 * time.Millisecond
	defaultMaxDelay   = 2 * time.Second
	defaultTimeout    = 10 * time.Second
	maxDrainBytes     = 4 << 10
	maxAllowedAttempt = 10
)

// Webhook POSTs jobs to the agent runner.
type Webhook struct {
	url       string
	secret    []byte
	client    *http.Client
	attempts  int
	baseDelay time.Duration
	maxDelay  time.Duration
	now       func() time.Time
	log       *slog.Logger
	// configErr is set when the URL or secret is unusable; Dispatch then fails without
	// touching the network and Validate reports it at startup.
	configErr error
}

// Option configures a Webhook.
type Option func(*Webhook)

// WithAttempts sets how many times a delivery is tried in all (1..10; default 3).
func WithAttempts(n int) Option {
	return func(w *Webhook) { w.attempts = min(max(n, 1), maxAllowedAttempt) }
}

// WithBackoff sets the delay before the first retry and the cap of every delay
// (default 200ms and 2s). Delays double per retry, with jitter.
func WithBackoff(base, maxDelay time.Duration) Option {
	return func(w *Webhook) {
		if base > 0 {
			w.baseDelay = base
		}
		if maxDelay >= w.baseDelay {
			w.maxDelay = maxDelay
		}
	}
}

// WithClock sets the clock the signatures' time is read from.
func WithClock(now func() time.Time) Option {
	return func(w *Webhook) {
		if now != nil {
			w.now = now
		}
	}
}

// WithLogger sets the logger for delivery failures (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(w *Webhook) {
		if l != nil {
			w.log = l
		}
	}
}

// NewWebhook returns a dispatcher that POSTs to rawURL. The URL must be https, or http on
// a loopback host (tests, local runners). client may be nil (a client with a 10 s
// timeout is used). Redirects are never followed: a redirect would replay the signed
// job to a host nobody configured. A bad URL or an empty secret does not fail here;
// call Validate at startup, and Dispatch refuses to send.
func NewWebhook(rawURL string, secret []byte, client *http.Client, opts ...Option) *Webhook {
	var c http.Client
	if client != nil {
		c = *client
	} else {
		c.Timeout = defaultTimeout
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	w := &Webhook{
		url:       rawURL,
		secret:    bytes.Clone(secret),
		client:    &c,
		attempts:  defaultAttempts,
		baseDelay: defaultBaseDelay,
		maxDelay:  defaultMaxDelay,
		now:       time.Now,
		log:       slog.Default(),
	}
	for _, o := range opts {
		o(w)
	}
	if err := ValidateURL(rawURL); err != nil {
		w.configErr = err
	} else if len(secret) == 0 {
		w.configErr = errors.New("autopilot webhook: a signing secret is required")
	}
	return w
}

// Validate reports whether the webhook is usable (URL allowed, secret set).
func (w *Webhook) Validate() error { return w.configErr }

// ValidateURL checks that rawURL is an absolute https URL, or http on a loopback host.
func ValidateURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return errors.New("autopilot webhook: the URL does not parse")
	}
	if u.Host == "" || u.Hostname() == "" {
		return errors.New("autopilot webhook: the URL needs a host")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("autopilot webhook: plain http is allowed only on a loopback host; use https")
	default:
		return errors.New("autopilot webhook: the URL scheme must be https")
	}
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Sign returns the X-AAC-Signature value of body signed at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<unix seconds>.<body>")>" (the scheme
// Stripe uses). The time is inside the MAC, so a delivery cannot be replayed later
// with a fresh time.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return sigTimestampKey + "=" + ts + "," + sigSchemeV1 + "=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a signature header made by Sign against body, at now (the
// receiver's clock): nil when one v1 signature matches, in constant time, and the
// signing time is within SignatureTolerance of now. It is what an agent runner
// written in Go calls before trusting a job. Several v1 entries are accepted, so a
// sender can sign with an old and a new secret while they are rotated.
func Verify(secret, body []byte, header string, now time.Time) error {
	if len(header) == 0 || len(header) > maxSignatureHeader {
		return ErrSignatureMalformed
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrSignatureMalformed
		}
		switch k {
		case sigTimestampKey:
			if ts != "" {
				return ErrSignatureMalformed
			}
			ts = v
		case sigSchemeV1:
			b, err := hex.DecodeString(v)
			if err != nil || len(b) != sha256.Size {
				return ErrSignatureMalformed
			}
			sigs = append(sigs, b)
		}
		// Other schemes are ignored: a later sender may add one beside v1.
	}
	if ts == "" || len(sigs) == 0 {
		return ErrSignatureMalformed
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sec < 0 || strconv.FormatInt(sec, 10) != ts {
		// Only the canonical decimal form: "0012" and "+12" would sign other bytes.
		return ErrSignatureMalformed
	}
	want := mac(secret, ts, body)
	matched := false
	for _, s := range sigs {
		// No early exit: the time taken does not depend on which entry matched.
		if hmac.Equal(s, want) {
			matched = true
		}
	}
	if !matched {
		return ErrSignatureMismatch
	}
	// Checked after the MAC, so an attacker learns nothing about the window from
	// forged headers.
	age := now.Sub(time.Unix(sec, 0))
	switch {
	case age > SignatureTolerance:
		return ErrSignatureExpired
	case age < -SignatureTolerance:
		return ErrSignatureFuture
	}
	return nil
}

// Dispatch POSTs the job. Network errors, 5xx and 429 are retried with backoff up to
// the configured attempts; a retry that cannot start before ctx's deadline is not
// tried. Any other status outside 2xx fails at once: the runner refused the job and
// sending it again will not help.
func (w *Webhook) Dispatch(ctx context.Context, j Job) error {
	if w.configErr != nil {
		return &DispatchError{Reason: "agent runner webhook is misconfigured", cause: w.configErr}
	}
	body, err := json.Marshal(j)
	if err != nil {
		return &DispatchError{Reason: "job could not be encoded", cause: err}
	}
	var last *DispatchError
	err = retry.Do(ctx, retry.Policy{
		Attempts:  w.attempts,
		Base:      w.baseDelay,
		Max:       w.maxDelay,
		Jitter:    0.5,
		Retryable: retryable,
	}, func(attempt int) error {
		// Signed per attempt: a retry after a long backoff must still be fresh.
		status, retryAfter, err := w.send(ctx, body, Sign(w.secret, w.now(), body), j.RunID)
		if err == nil && status >= 200 && status < 300 {
			return nil
		}
		last = &DispatchError{Attempts: attempt, StatusCode: status, cause: err}
		switch {
		case err != nil && ctx.Err() != nil:
			last.Reason = "dispatch cancelled"
		case err != nil:
			last.Reason = "agent runner unreachable"
		default:
			last.cause = fmt.Errorf("agent runner status %d", status)
		}
		w.log.LogAttrs(ctx, slog.LevelWarn, "autopilot webhook attempt failed",
			slog.String("run_id", j.RunID), slog.Int("attempt", attempt),
			slog.Int("status", status), slog.Any("error", err))
		// The runner's Retry-After replaces the backoff; one past the cap ends the retries.
		return retry.After(last, retryAfter)
	})
	if err == nil {
		return nil
	}
	return last
}

// send makes one attempt. It returns the status (0 without a response) and the
// runner's Retry-After, if any.
func (w *Webhook) send(ctx context.Context, body []byte, sig, runID string) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "aacmcp-autopilot/1")
	req.Header.Set(HeaderIdempotencyKey, runID)
	req.Header.Set(HeaderSignature, sig)
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	// Drain a little so the connection can be reused; the body itself is not needed.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
	_ = resp.Body.Close()
	return resp.StatusCode, parseRetryAfter(resp.Header.Get("Retry-After"), w.now()), nil
}

// retryable reports whether a failed delivery may succeed when sent again: there
// was no answer (StatusCode 0), or a 429 or 5xx.
func retryable(err error) bool {
	d, ok := errors.AsType[*DispatchError](err)
	return ok && (d.StatusCode == 0 || d.StatusCode == http.StatusTooManyRequests || d.StatusCode >= 500)
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date. Garbage,
// negative values and past dates give 0 (no hint).
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Anything beyond a day is as good as "not now"; capping avoids overflow.
		return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

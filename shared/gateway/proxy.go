package gateway

// The REST API's translation between HTTP and the function: the proxy event it
// hands the function, and what it does to the function's answer on the way back,
// including the headers it renames.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// proxyEvent builds the REST (v1) proxy event API Gateway sends the function.
func (g *gateway) proxyEvent(r *http.Request, rt route, params map[string]string, body []byte, x *exchange, ip string, authz *authorization, full string) events.APIGatewayProxyRequest {
	now := g.cfg.Now()
	headers := r.Header.Clone()
	headers.Set("X-Forwarded-Proto", "http")
	if r.TLS != nil {
		headers.Set("X-Forwarded-Proto", "https")
	}
	// API Gateway appends the address it saw to what came before it (the viewer's
	// address, which the front door put there).
	if prior := strings.Join(headers.Values("X-Forwarded-For"), ", "); prior != "" {
		headers.Set("X-Forwarded-For", prior+", "+ip)
	} else {
		headers.Set("X-Forwarded-For", ip)
	}
	headers.Set("Host", r.Host)
	ev := events.APIGatewayProxyRequest{
		Resource:                        rt.resource,
		Path:                            r.URL.Path,
		HTTPMethod:                      r.Method,
		Headers:                         singleHeaders(headers),
		MultiValueHeaders:               headers,
		QueryStringParameters:           singleQuery(r.URL.Query()),
		MultiValueQueryStringParameters: r.URL.Query(),
		PathParameters:                  params,
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID:  localAccount,
			ResourceID: "local",
			Stage:      g.cfg.Stage,
			DomainName: r.Host,
			RequestID:  x.requestID,
			// The id functions/mcp takes as the call's request id.
			ExtendedRequestID: x.requestID,
			Protocol:          r.Proto,
			Identity:          events.APIGatewayRequestIdentity{SourceIP: ip, UserAgent: r.UserAgent()},
			ResourcePath:      rt.resource,
			// The path the client used: /<stage>/mcp under StageInPath (the function
			// derives the base path /<stage> from it), else /mcp like a custom
			// domain without a base path.
			Path:             full,
			HTTPMethod:       r.Method,
			RequestTime:      now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			RequestTimeEpoch: now.UnixMilli(),
			APIID:            g.cfg.APIID,
		},
	}
	if authz != nil {
		ctx := make(map[string]any, len(authz.context)+1)
		for k, v := range authz.context {
			// API Gateway hands context values to the integration as strings.
			ctx[k] = fmt.Sprint(v)
		}
		ctx["principalId"] = authz.principalID
		ev.RequestContext.Authorizer = ctx
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body = base64.StdEncoding.EncodeToString(body)
		ev.IsBase64Encoded = true
	}
	return ev
}

func (g *gateway) invokeFunction(w http.ResponseWriter, ctx context.Context, fn Invoker, ev events.APIGatewayProxyRequest, x *exchange) int {
	payload, err := json.Marshal(ev)
	if err != nil {
		return writeMessage(w, http.StatusInternalServerError, "Internal server error")
	}
	ictx, cancel := context.WithTimeout(ctx, IntegrationTimeout)
	defer cancel()
	start := g.cfg.Now()
	out, err := fn.Invoke(ictx, payload)
	x.entry.IntegrationLatency = strconv.FormatInt(g.cfg.Now().Sub(start).Milliseconds(), 10)
	if err != nil {
		g.log.Error("function failed", "request_id", x.requestID, "err", err)
		if errors.Is(ictx.Err(), context.DeadlineExceeded) {
			x.entry.ResponseType = "INTEGRATION_TIMEOUT"
			return writeMessage(w, http.StatusGatewayTimeout, "Endpoint request timed out")
		}
		x.entry.ResponseType = "INTEGRATION_FAILURE"
		return writeMessage(w, http.StatusBadGateway, "Internal server error")
	}
	var resp events.APIGatewayProxyResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode < 100 || resp.StatusCode > 599 {
		g.log.Error("function answer is not a proxy response", "request_id", x.requestID, "err", err)
		x.entry.ResponseType = "INTEGRATION_FAILURE"
		return writeMessage(w, http.StatusBadGateway, "Internal server error")
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			x.entry.ResponseType = "INTEGRATION_FAILURE"
			return writeMessage(w, http.StatusBadGateway, "Internal server error")
		}
	}
	h := http.Header{}
	for k, v := range resp.Headers {
		h.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	remap(h)
	for k, vs := range h {
		w.Header()[k] = vs
	}
	w.Header().Set("X-Amzn-RequestId", x.requestID)
	w.Header().Del("Content-Length")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return resp.StatusCode
}

// remappedHeaders are the response headers of a Lambda (or HTTP) proxy integration
// that API Gateway REST does not pass on under their own name: it renames each to
// X-Amzn-Remapped-<name>, keeping the value ("Amazon API Gateway important notes",
// REST APIs; see docs/decisions.md). WWW-Authenticate is the one that matters
// here: a challenge from the function reaches the client under a name no OAuth
// client reads.
var remappedHeaders = []string{"Authorization", "Connection", "Content-MD5", "Date", "Max-Forwards", "Server", "User-Agent", "WWW-Authenticate"}

// RemappedPrefix is what API Gateway puts before a remapped header's name.
const RemappedPrefix = "X-Amzn-Remapped-"

func remap(h http.Header) {
	for _, name := range remappedHeaders {
		if vs := h.Values(name); len(vs) > 0 {
			h.Del(name)
			h[http.CanonicalHeaderKey(RemappedPrefix+name)] = vs
		}
	}
}

func singleHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			// API Gateway keeps the last value in the single-value map.
			out[k] = v[len(v)-1]
		}
	}
	return out
}

func singleQuery(q url.Values) map[string]string {
	if len(q) == 0 {
		return nil
	}
	out := make(map[string]string, len(q))
	for k, v := range q {
		if len(v) > 0 {
			out[k] = v[len(v)-1]
		}
	}
	return out
}

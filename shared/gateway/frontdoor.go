package gateway

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/ratelimit"
)

// RestoredHeader is the one header FrontDoor gives back its name.
const RestoredHeader = "WWW-Authenticate"

// Headers CloudFront adds to the requests it sends its origin ("Request and
// response behavior for custom origins"; "Add CloudFront request headers").
const (
	// HeaderViewerAddress is "<viewer IP>:<source port>", sent when the origin
	// request policy includes it (the stack's does: the authorizer reads the
	// viewer from it, since behind the distribution the stage sees edge addresses).
	HeaderViewerAddress = apigw.ViewerAddressHeader
	// HeaderCfID identifies the request at CloudFront; it comes back in the
	// response, and CloudFront's logs carry it.
	HeaderCfID = "X-Amz-Cf-Id"
)

// Distribution is the CloudFront distribution docs/decisions.md ("Challenges and
// discovery through API Gateway") puts in front of the REST API.
type Distribution struct {
	// Origin is the API's host (the execute-api domain in AWS; the local gateway's
	// own listener here), with scheme: what CloudFront connects to and, since the
	// origin request policy forwards every viewer header except Host, the Host the
	// API sees.
	Origin *url.URL
	// OriginPath is put before every request path: "/<stage>", so that the
	// distribution's root is the stage's root and the RFC 8414 and RFC 9728
	// well-known paths at the host root reach the API. "" forwards paths unchanged.
	OriginPath string
	// OriginHeaders are the distribution's origin custom headers, set on every
	// origin request over whatever the viewer sent under those names: the stack
	// sends apigw.OriginVerifyHeader, which the regional web ACL requires.
	OriginHeaders http.Header
	// Transport reaches the origin; nil is http.DefaultTransport.
	Transport http.RoundTripper
	// RateRules are the distribution's web ACL (the stack's: from
	// ratelimit.EdgeLimits.Rules); nil enforces none.
	RateRules []ratelimit.EdgeRule
	// Now is the web ACL's clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// FrontDoor is a stand-in for that distribution: a reverse proxy in front of the
// local gateway that does to requests and answers what the stack's distribution
// does, so that clients (and tests) see what they will see at its URL.
//
// Requests: the path gets the origin path in front; Host is the origin's; the
// viewer's address is appended to X-Forwarded-For (CloudFront appends to a
// header the viewer sent, or adds one); Via and X-Amz-Cf-Id are set, and
// CloudFront-Viewer-Address carries the viewer's address and port. Viewer-sent
// copies of CloudFront's own headers are dropped first, so that what the origin
// reads under those names is the distribution's word. Caching is off, as the
// stack's cache policy has it: every request reaches the origin.
//
// Its web ACL (RateRules) answers first: a request over one of the rate limits is
// 429 from CloudFront and never reaches the origin (edgeWAF).
//
// Answers: the Lambda@Edge origin-response function renames
// X-Amzn-Remapped-WWW-Authenticate back to WWW-Authenticate (restore), so the 401
// and 403 challenges the functions write reach OAuth clients. CloudFront runs
// origin-response functions for error answers too (viewer-response functions, and
// CloudFront Functions, it does not run for an origin status of 400 or more, which
// is why a CloudFront Function cannot do this). A challenge API Gateway set
// itself (a gateway response) passes unchanged. CloudFront's Via, X-Cache,
// X-Amz-Cf-Pop and X-Amz-Cf-Id are added. An origin that cannot be reached is
// CloudFront's 502.
func FrontDoor(d Distribution) http.Handler {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	// One edge server's name for the life of the stand-in, as Via shows it.
	var edge [16]byte
	_, _ = rand.Read(edge[:])
	via := "1.1 " + hex.EncodeToString(edge[:]) + ".cloudfront.net (CloudFront)"
	originPath := "/" + strings.Trim(d.OriginPath, "/")
	if originPath == "/" {
		originPath = ""
	}
	proxy := &httputil.ReverseProxy{
		Transport: d.Transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			in, out := pr.In, pr.Out
			out.URL.Scheme, out.URL.Host = d.Origin.Scheme, d.Origin.Host
			out.URL.Path = originPath + in.URL.Path
			out.URL.RawPath = ""
			if in.URL.RawPath != "" {
				out.URL.RawPath = originPath + in.URL.RawPath
			}
			out.Host = d.Origin.Host
			for name := range out.Header {
				if isCloudFrontHeader(name) {
					out.Header.Del(name)
				}
			}
			ip, port := viewer(in)
			// httputil.ReverseProxy has removed X-Forwarded-For from out: the
			// viewer's own value is in's.
			if prior := strings.Join(in.Header.Values("X-Forwarded-For"), ", "); prior != "" {
				out.Header.Set("X-Forwarded-For", prior+", "+ip)
			} else {
				out.Header.Set("X-Forwarded-For", ip)
			}
			out.Header.Set("Via", via)
			out.Header.Set(HeaderCfID, cfID())
			out.Header.Set(HeaderViewerAddress, ip+":"+port)
			for name, vs := range d.OriginHeaders {
				out.Header[http.CanonicalHeaderKey(name)] = append([]string(nil), vs...)
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			restore(resp.Header)
			// resp.Request is the origin request: the answer carries its id.
			markResponse(resp.Header, resp.StatusCode, via, resp.Request.Header.Get(HeaderCfID))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Error("front door: origin not reached", "err", err)
			markResponse(w.Header(), http.StatusBadGateway, via, cfID())
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = fmt.Fprint(w, "<html><body><h1>502 ERROR</h1><p>The request could not be satisfied. CloudFront wasn't able to connect to the origin.</p></body></html>\n")
		},
	}
	if d.RateRules == nil {
		return proxy
	}
	waf := newEdgeWAF(d.RateRules, d.Now)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _ := viewer(r)
		if rule := waf.block(r, ip); rule != nil {
			log.Info("front door: blocked by the web ACL", "rule", rule.Name, "viewer", ip)
			markResponse(w.Header(), http.StatusTooManyRequests, via, cfID())
			refuse(w, rule)
			return
		}
		proxy.ServeHTTP(w, r)
	})
}

// markResponse adds the headers CloudFront puts on every answer. X-Cache says
// "Miss": nothing is cached (the stack's cache policy), and "Error" for an error
// status, as CloudFront labels those.
func markResponse(h http.Header, status int, via, id string) {
	cache := "Miss from cloudfront"
	if status >= 400 {
		cache = "Error from cloudfront"
	}
	h.Set("Via", via)
	h.Set("X-Cache", cache)
	h.Set("X-Amz-Cf-Pop", "LOC50-C1")
	h.Set(HeaderCfID, id)
}

// isCloudFrontHeader names the request headers only the distribution sets.
func isCloudFrontHeader(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "cloudfront-") || strings.HasPrefix(n, "x-amz-cf-")
}

// viewer is the address and port of the connection the request came on.
func viewer(r *http.Request) (ip, port string) {
	host, port, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr, "0"
	}
	return host, port
}

// cfID is a new request id in CloudFront's format (56 base64url characters).
func cfID() string {
	var b [40]byte
	_, _ = rand.Read(b[:])
	return base64.URLEncoding.EncodeToString(b[:])
}

// restore is the origin-response function's whole logic (the stack's Lambda@Edge
// function, functions/edge, does exactly this): move the remapped challenge back unless the origin set the real
// header itself. Only the challenge is restored: the other remapped headers
// (Date, Server, ...) are ones the functions have no reason to send.
func restore(h http.Header) {
	remapped := http.CanonicalHeaderKey(RemappedPrefix + RestoredHeader)
	vs := h.Values(remapped)
	if len(vs) == 0 {
		return
	}
	h.Del(remapped)
	if len(h.Values(RestoredHeader)) == 0 {
		h[http.CanonicalHeaderKey(RestoredHeader)] = vs
	}
}

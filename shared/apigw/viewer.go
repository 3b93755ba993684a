package apigw

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// OriginVerifyHeader carries the CloudFront distribution's secret to the origin.
// The stack's regional web ACL refuses every request without it, so nothing
// reaches the stage around CloudFront and CloudFront-Viewer-Address can be
// believed; `aacmcp gateway --front-door` enforces the same.
const OriginVerifyHeader = "X-Aacmcp-Origin-Verify"

// NotThroughFrontDoor is the message of that refusal (code waf_blocked).
const NotThroughFrontDoor = "use the CloudFront URL of this API"

// ViewerAddressHeader is the header CloudFront adds to an origin request, when the
// origin request policy includes it, with the viewer's IP address and source port:
// "198.51.100.10:46532", or for IPv6 the address unbracketed with the port after its
// last colon ("Add CloudFront request headers", CloudFront developer guide).
const ViewerAddressHeader = "CloudFront-Viewer-Address"

// ViewerIP is the IP address of a CloudFront-Viewer-Address value. ok is false for
// anything that is not an address and a port: such a value did not come from
// CloudFront. A bracketed IPv6 form is accepted too.
func ViewerIP(value string) (addr netip.Addr, ok bool) {
	v := strings.TrimSpace(value)
	if ap, err := netip.ParseAddrPort(v); err == nil {
		if ap.Addr().Zone() != "" {
			return netip.Addr{}, false
		}
		return ap.Addr().Unmap(), true
	}
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return netip.Addr{}, false
	}
	port, err := strconv.ParseUint(v[i+1:], 10, 16)
	if err != nil || v[i+1:] != strconv.FormatUint(port, 10) {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(v[:i])
	// Only IPv6 may go unbracketed; a zone (fe80::1%eth0) is not a viewer address.
	if err != nil || !a.Is6() || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// SourceIP is the address a request is attributed to: rate limits, the
// authorizer's failed-attempt limit, audit records. identity is API Gateway's
// $context.identity.sourceIp, the TCP peer, which behind the CloudFront front door
// is an edge server shared by many viewers. With trustViewer (set only when the
// stack puts CloudFront in front and its regional WAF blocks every request without
// the distribution's origin secret, so no request reaches the stage around
// CloudFront) the one CloudFront-Viewer-Address value names the viewer instead. A
// missing, malformed or repeated value falls back to identity: which of two copies
// CloudFront wrote could not be told, and identity is never one a client chose.
func SourceIP(headers map[string]string, multi map[string][]string, identity string, trustViewer bool) string {
	if !trustViewer {
		return identity
	}
	var values []string
	for k, vs := range multi {
		if strings.EqualFold(k, ViewerAddressHeader) {
			values = append(values, vs...)
		}
	}
	if len(values) == 0 {
		for k, v := range headers {
			if strings.EqualFold(k, ViewerAddressHeader) {
				values = append(values, v)
			}
		}
	}
	if len(values) != 1 {
		return identity
	}
	a, ok := ViewerIP(values[0])
	if !ok {
		return identity
	}
	return a.String()
}

// WithViewerSourceIP returns ev with its identity's source IP replaced by SourceIP,
// so that everything downstream (the HTTP adapter's RemoteAddr, audit records,
// rate limits) sees the viewer.
func WithViewerSourceIP(ev events.APIGatewayProxyRequest, trustViewer bool) events.APIGatewayProxyRequest {
	ev.RequestContext.Identity.SourceIP = SourceIP(ev.Headers, ev.MultiValueHeaders, ev.RequestContext.Identity.SourceIP, trustViewer)
	return ev
}

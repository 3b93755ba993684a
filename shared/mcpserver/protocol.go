package mcpserver

import (
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Protocol revisions. mcp-go speaks every revision in mcp.ValidProtocolVersions and
// decides per request which era (initialize handshake, or the sessionless
// 2026-07-28 core) a message belongs to. This file adds the transport checks that
// must run before enforcement: a request the protocol layer would refuse as
// malformed must get its 400, not a 403 scope challenge or a tool result that the
// guard produced (and audited) for a message that was never valid.

// protocolError is a transport-level refusal of a /mcp message: HTTP 400 with a
// JSON-RPC error body.
type protocolError struct {
	code int
	msg  string
	data any
}

// bodyVersion is the protocol version a message's params declare in _meta, when
// the caller has read it already (known); "" declares none.
type bodyVersion struct {
	v     string
	known bool
}

// checkProtocol validates the MCP-Protocol-Version header against the revisions this
// server speaks and, for a 2026-07-28 (or later) request, the version declared in
// the body's _meta and the Mcp-Method / Mcp-Name headers that must mirror the body
// (SEP-2243). A missing header is accepted: 2025-03-26 clients send none, and the
// initialize request of later revisions precedes the negotiation. declared spares
// decoding the params again when the caller knows the body's version (a tools/call
// decodes its params once for every reader); its answer is the same either way.
func checkProtocol(header http.Header, env rpcEnvelope, declared bodyVersion) *protocolError {
	hv := header.Get(mcp.HeaderProtocolVersion)
	mv := declared.v
	if !declared.known {
		mv = metaProtocolVersion(env.Params)
	}

	for _, v := range []string{hv, mv} {
		if v != "" && !mcp.IsValidProtocolVersion(v) {
			e := mcp.UnsupportedProtocolVersionError{Version: v, Supported: mcp.ValidProtocolVersions}.JSONRPCError()
			return &protocolError{code: e.Error.Code, msg: e.Error.Message, data: e.Error.Data}
		}
	}
	if !mcp.IsModernProtocol(hv) && !mcp.IsModernProtocol(mv) {
		return nil
	}
	// From 2026-07-28 the version travels in both places and they must agree.
	switch {
	case hv == "":
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: mcp.HeaderProtocolVersion + " header is required for requests carrying " + mcp.MetaKeyProtocolVersion}
	case mv == "":
		return &protocolError{code: mcp.INVALID_PARAMS, msg: "missing or invalid _meta field " + mcp.MetaKeyProtocolVersion}
	case hv != mv:
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: mcp.HeaderProtocolVersion + " header " + hv + " does not match request " + mcp.MetaKeyProtocolVersion + " " + mv}
	}
	if env.Method == "" {
		// A response or a message without a method: mcp-go refuses it.
		return nil
	}
	if err := mcp.ValidateStandardHeaders(header.Get, mv, mcp.MCPMethod(env.Method), env.Params); err != nil {
		var hm mcp.HeaderMismatchError
		if errors.As(err, &hm) {
			return &protocolError{code: mcp.HEADER_MISMATCH, msg: hm.Error()}
		}
		return &protocolError{code: mcp.HEADER_MISMATCH, msg: "header mismatch"}
	}
	return nil
}

// metaProtocolVersion reads the protocol version declared in params' _meta as
// mcp-go reads it (an *mcp.Meta). Malformed params are mcp-go's to report (as
// -32602); here they only mean that no version is declared in the body.
func metaProtocolVersion(params json.RawMessage) string {
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Meta.ProtocolVersion()
}

// checkContentType refuses a body not declared as JSON, as the transport requires.
// mcp-go would refuse it too, but with a plain-text body; this answer is JSON-RPC
// like every other refusal on /mcp.
func checkContentType(header http.Header) *protocolError {
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return &protocolError{code: rpcInvalidRequest, msg: "Content-Type must be application/json"}
	}
	return nil
}

// isLoopbackHost reports whether a Host header (or URL host) names this machine's
// loopback interface.
func isLoopbackHost(host string) bool {
	name := host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		name = hn
	}
	name = strings.Trim(strings.ToLower(name), "[]")
	return name == "localhost" || name == "127.0.0.1" || name == "::1"
}

// loopbackOrigin reports whether origin is a page served from this machine's
// loopback interface (http or https, any port).
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return false
	}
	return isLoopbackHost(u.Host)
}

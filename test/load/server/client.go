package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Transports a Client speaks.
const (
	MCP  = "mcp"
	REST = "rest"
)

// ProtocolVersion is the MCP revision the client announces.
const ProtocolVersion = "2025-11-25"

// Client calls tools on a running server over either transport.
type Client struct {
	Base string
	// HTTP sends Post's requests, unless the client is plain (NewPlainClient); tests
	// that send requests of their own use it either way.
	HTTP  *http.Client
	plain *plainPool
}

// NewClient returns a client with a connection pool sized for conns concurrent callers.
func NewClient(base string, conns int) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conns
	tr.MaxIdleConnsPerHost = conns
	return &Client{Base: base, HTTP: &http.Client{Transport: tr, Timeout: 2 * time.Minute}}
}

// NewPlainClient is NewClient whose Post writes its requests itself, on one
// keep-alive connection per concurrent caller (plain.go): the load generator's
// client, which leaves more of a shared machine to the server it measures. base
// must be an http:// URL.
func NewPlainClient(base string, conns int) (*Client, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("plain client: base %q is not an http:// URL", base)
	}
	c := NewClient(base, conns)
	c.plain = newPlainPool(u.Host, conns)
	return c, nil
}

// CloseIdle closes the client's idle connections.
func (c *Client) CloseIdle() {
	if c.plain != nil {
		c.plain.closeIdle()
	}
	c.HTTP.CloseIdleConnections()
}

// Response is what a tool call got back, normalised across transports.
type Response struct {
	Status int
	// Code is the error's stable code, "" on success.
	Code    string
	Message string
	// RetryAfter is the Retry-After header; RetryAfterSeconds the error object's field.
	RetryAfter        string
	RetryAfterSeconds int
	// Result is the tool's result on success.
	Result json.RawMessage
	Replay bool
	// RPCCode is the JSON-RPC error code when /mcp answered with a JSON-RPC error
	// rather than a tool result.
	RPCCode int
	Header  http.Header
	Body    []byte
}

// errorBody is the error object of docs/architecture.md section 7.
type errorBody struct {
	Error             string `json:"error"`
	Code              string `json:"code"`
	RetryAfterSeconds int    `json:"retry_after_seconds"`
}

// Call invokes tool with args (any JSON-encodable value, or json.RawMessage) as the
// bearer of token ("" sends no Authorization header). requestID is sent as
// X-Request-Id, which the server keeps as the audit record's request_id. An error
// means no response arrived.
func (c *Client) Call(ctx context.Context, transport, token, tool string, args any, requestID string) (Response, error) {
	rawArgs, err := encode(args)
	if err != nil {
		return Response{}, err
	}
	var url string
	var body []byte
	switch transport {
	case REST:
		url, body = c.Base+"/tools/"+tool, rawArgs
	case MCP:
		url = c.Base + "/mcp"
		body, err = json.Marshal(map[string]any{
			"jsonrpc": "2.0", "id": requestID, "method": "tools/call",
			"params": map[string]any{"name": tool, "arguments": json.RawMessage(rawArgs)},
		})
		if err != nil {
			return Response{}, err
		}
	default:
		return Response{}, fmt.Errorf("unknown transport %q", transport)
	}
	hdr := http.Header{}
	if requestID != "" {
		hdr.Set("X-Request-Id", requestID)
	}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	return c.Post(ctx, url, body, hdr)
}

// Post sends body to target with the headers a client of either transport sends
// plus hdr, and decodes the answer.
func (c *Client) Post(ctx context.Context, target string, body []byte, hdr http.Header) (Response, error) {
	h := requestHeader(hdr)
	if c.plain != nil {
		u, err := url.Parse(target)
		if err != nil {
			return Response{}, err
		}
		resp, b, err := c.plain.do(ctx, u, body, h)
		if err != nil {
			return Response{}, err
		}
		return decode(resp, b, strings.HasSuffix(u.Path, "/mcp"))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	req.Header = h
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	return decode(resp, b, strings.HasSuffix(req.URL.Path, "/mcp"))
}

// requestHeader is what every request of either client carries: the headers of
// an MCP client, then hdr, whose values win.
func requestHeader(hdr http.Header) http.Header {
	h := make(http.Header, 3+len(hdr))
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", ProtocolVersion)
	for k, vs := range hdr {
		h[k] = vs
	}
	return h
}

// decode reads the answer resp (whose body is b) as /mcp's (mcp) or /tools'.
func decode(resp *http.Response, b []byte, mcp bool) (Response, error) {
	r := Response{Status: resp.StatusCode, Header: resp.Header, Body: b, RetryAfter: resp.Header.Get("Retry-After")}
	if mcp {
		return r, decodeMCP(&r)
	}
	if r.Status == http.StatusOK {
		r.Result = b
		r.Replay = resp.Header.Get("Idempotent-Replay") == "true"
		return r, nil
	}
	var e errorBody
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
		return r, fmt.Errorf("status %d with a body that is not an error object: %q", r.Status, b)
	}
	r.Code, r.Message, r.RetryAfterSeconds = e.Code, e.Error, e.RetryAfterSeconds
	return r, nil
}

func decodeMCP(r *Response) error {
	var msg struct {
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
			Meta              map[string]any  `json:"_meta"`
		} `json:"result"`
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &msg); err != nil {
		return fmt.Errorf("status %d, body is not JSON-RPC: %q", r.Status, r.Body)
	}
	switch {
	case msg.Error != nil:
		r.RPCCode, r.Message = msg.Error.Code, msg.Error.Message
		var e errorBody
		if json.Unmarshal(msg.Error.Data, &e) == nil && e.Code != "" {
			r.Code, r.RetryAfterSeconds = e.Code, e.RetryAfterSeconds
		} else {
			r.Code = "jsonrpc:" + strconv.Itoa(msg.Error.Code)
		}
	case msg.Result != nil && msg.Result.IsError:
		if len(msg.Result.Content) != 1 {
			return fmt.Errorf("error result with %d content blocks: %q", len(msg.Result.Content), r.Body)
		}
		var e errorBody
		if err := json.Unmarshal([]byte(msg.Result.Content[0].Text), &e); err != nil || e.Code == "" {
			return fmt.Errorf("error result whose text is not an error object: %q", r.Body)
		}
		r.Code, r.Message, r.RetryAfterSeconds = e.Code, e.Error, e.RetryAfterSeconds
	case msg.Result != nil:
		r.Result = msg.Result.StructuredContent
		if replay, _ := msg.Result.Meta["aacmcp/idempotent_replay"].(bool); replay {
			r.Replay = true
		}
	default:
		return fmt.Errorf("status %d, JSON-RPC message with neither result nor error: %q", r.Status, r.Body)
	}
	return nil
}

func encode(args any) ([]byte, error) {
	switch a := args.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		return a, nil
	case []byte:
		return a, nil
	case string:
		return []byte(a), nil
	}
	return json.Marshal(args)
}

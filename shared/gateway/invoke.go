package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Invoker runs a Lambda function with a JSON event and returns its JSON answer.
// lambda.NewHandler(fn) is one (the function in process); InvokeURL is another (the
// function under the Runtime Interface Emulator).
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// FunctionError is an error the function itself returned (the runtime's
// {"errorMessage", "errorType"} payload), as opposed to a failure to reach it.
type FunctionError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func (e *FunctionError) Error() string { return e.Message }

// maxInvokeResponse is Lambda's synchronous response payload limit.
const maxInvokeResponse = 6 << 20

// InvokeURL returns an Invoker that POSTs events to a Lambda invoke endpoint, such as
// the RIE's http://127.0.0.1:PORT/2015-03-31/functions/function/invocations.
// client nil means http.DefaultClient.
func InvokeURL(url string, client *http.Client) Invoker {
	if client == nil {
		client = http.DefaultClient
	}
	return urlInvoker{url: url, client: client}
}

type urlInvoker struct {
	url    string
	client *http.Client
}

func (u urlInvoker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", u.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxInvokeResponse+1))
	if err != nil {
		return nil, fmt.Errorf("invoke %s: read answer: %w", u.url, err)
	}
	if len(body) > maxInvokeResponse {
		return nil, fmt.Errorf("invoke %s: answer larger than %d bytes", u.url, maxInvokeResponse)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke %s: HTTP %d", u.url, resp.StatusCode)
	}
	if fe := asFunctionError(body); fe != nil || resp.Header.Get("X-Amz-Function-Error") != "" {
		if fe == nil {
			fe = &FunctionError{Message: strings.TrimSpace(string(body)), Type: resp.Header.Get("X-Amz-Function-Error")}
		}
		return nil, fe
	}
	return body, nil
}

// asFunctionError recognises the runtime's error payload: an object with exactly the
// error fields (plus an optional stack trace), which no proxy response or policy has.
func asFunctionError(body []byte) *FunctionError {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	if _, ok := m["errorMessage"]; !ok {
		return nil
	}
	for k := range m {
		switch k {
		case "errorMessage", "errorType", "stackTrace":
		default:
			return nil
		}
	}
	var fe FunctionError
	if json.Unmarshal(body, &fe) != nil {
		return nil
	}
	return &fe
}

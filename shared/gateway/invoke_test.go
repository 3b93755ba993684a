package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestInvokeURL(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		header   string
		body     string
		wantBody string
		wantErr  string
	}{
		{name: "answer", status: 200, body: `{"statusCode":200,"body":"ok"}`, wantBody: `{"statusCode":200,"body":"ok"}`},
		{name: "function error", status: 200, body: `{"errorMessage":"Unauthorized","errorType":"errorString"}`, wantErr: "Unauthorized"},
		{name: "function error header", status: 200, header: "Unhandled", body: `null`, wantErr: "null"},
		{name: "emulator failure", status: 502, body: `oops`, wantErr: "HTTP 502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.header != "" {
					w.Header().Set("X-Amz-Function-Error", tt.header)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			out, err := InvokeURL(srv.URL, nil).Invoke(context.Background(), []byte(`{}`))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(out) != tt.wantBody {
				t.Fatalf("Invoke = %s, %v", out, err)
			}
		})
	}
}

func FuzzAsFunctionError(f *testing.F) {
	f.Add([]byte(`{"errorMessage":"Unauthorized","errorType":"errorString"}`))
	f.Add([]byte(`{"errorMessage":"x","statusCode":200}`))
	f.Add([]byte(`{"principalId":"u","policyDocument":{}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fe := asFunctionError(body)
		if fe == nil {
			return
		}
		// Only objects made of the runtime's error fields are function errors.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("non-object %q taken for a function error", body)
		}
		for k := range m {
			if k != "errorMessage" && k != "errorType" && k != "stackTrace" {
				t.Fatalf("%q with field %s taken for a function error", body, k)
			}
		}
	})
}

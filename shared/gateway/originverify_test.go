package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/apigw"
	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/gateway"
)

// refusing is an authorizer that counts its calls and lets nothing through:
// whether the gateway reached it is all these cases ask.
type refusing struct{ n atomic.Int64 }

func (r *refusing) Invoke(context.Context, []byte) ([]byte, error) {
	r.n.Add(1)
	return nil, errors.New("Unauthorized")
}

// TestOriginVerify: with OriginVerify set, the API's own URL answers only requests
// that carry the distribution's origin secret, as the stack's regional web ACL
// rule OnlyThroughCloudFront does; the block comes before the authorizer.
// Through FrontDoor, which sends the secret over whatever the viewer sent, every
// request reaches the API.
func TestOriginVerify(t *testing.T) {
	const secret = "the-distribution-secret"
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	authz := &refusing{}
	api := httptest.NewServer(gateway.New(gateway.Config{Authorizer: authz, Function: authz, OriginVerify: secret, Logger: quiet}))
	t.Cleanup(api.Close)
	origin, err := neturl.Parse(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(gateway.FrontDoor(gateway.Distribution{Origin: origin, Logger: quiet,
		OriginHeaders: http.Header{apigw.OriginVerifyHeader: {secret}}}))
	t.Cleanup(front.Close)

	tests := []struct {
		name        string
		base        string
		secret      string
		wantBlocked bool
	}{
		{"direct, no secret", api.URL, "", true},
		{"direct, wrong secret", api.URL, "guess", true},
		{"direct, secret with a suffix", api.URL, secret + "x", true},
		{"direct, the secret", api.URL, secret, false},
		{"through the front door", front.URL, "", false},
		{"through the front door, the viewer's own guess replaced", front.URL, "guess", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := authz.n.Load()
			req, _ := http.NewRequest(http.MethodPost, tt.base+"/mcp", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer aac_x")
			if tt.secret != "" {
				req.Header.Set(apigw.OriginVerifyHeader, tt.secret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body apperr.Body
			_ = json.NewDecoder(resp.Body).Decode(&body)
			blocked := resp.StatusCode == http.StatusForbidden && body.Code == apperr.WAFBlocked && body.Error == apigw.NotThroughFrontDoor
			if blocked != tt.wantBlocked {
				t.Fatalf("status %d body %+v: blocked %v, want %v", resp.StatusCode, body, blocked, tt.wantBlocked)
			}
			if reached := authz.n.Load() > before; reached == tt.wantBlocked {
				t.Errorf("authorizer reached %v, want %v", reached, !tt.wantBlocked)
			}
		})
	}
}

package oauth

import (
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aacworkflow/aacmcp/shared/oauth/clientmeta"
)

// withDocument serves a Client ID Metadata Document over loopback HTTPS, trusted
// through the fetcher's RootCAs, and returns its URL (the client_id) through id.
func withDocument(id *string, doc map[string]any) option {
	return func(h *harness, c *Config) {
		var ts *httptest.Server
		ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d := map[string]any{"client_id": ts.URL + "/client.json"}
			for k, v := range doc {
				d[k] = v
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(d)
		}))
		h.t.Cleanup(ts.Close)
		*id = ts.URL + "/client.json"
		pool := x509.NewCertPool()
		pool.AddCert(ts.Certificate())
		c.Clients = clientmeta.NewFetcher(clientmeta.Options{AllowLoopback: true, RootCAs: pool, Now: h.clock.Now})
	}
}

func TestMetadataDocumentClient(t *testing.T) {
	var id string
	h := newHarness(t, withDocument(&id, map[string]any{
		"client_name": "Document Client", "redirect_uris": []string{nativeRedirect}, "token_endpoint_auth_method": "none",
	}))
	b := h.browser()
	page := b.signIn(t, h.authzURL(id, nativeRedirect, withParam("scope", "issues:read")), "bob")
	host := strings.TrimPrefix(strings.TrimSuffix(id, "/client.json"), "https://")
	// The host that vouches for the client is shown beside its self-asserted name.
	contains(t, page.body, "Document Client", `<span class="host">`+host+`</span>`)
	r := b.consent(t, page, "allow", "", "issues:read")
	status, tok := h.redeem(id, r.location(t).Query().Get("code"), nativeRedirect)
	if status != http.StatusOK {
		t.Fatalf("redeem: %d %v", status, tok)
	}
	if p := h.mustVerify(str(tok, "access_token")); p.ClientID != id {
		t.Fatalf("principal client = %q, want the document URL", p.ClientID)
	}
	if status, tok2 := h.refresh(id, str(tok, "refresh_token")); status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, tok2)
	}

	// A redirect URI the document does not list gets a page, never a redirect.
	r = h.browser().get(h.authzURL(id, "http://127.0.0.1:40999/other"))
	if r.status != http.StatusBadRequest || r.header.Get("Location") != "" {
		t.Fatalf("unlisted redirect: %d %q", r.status, r.header.Get("Location"))
	}
}

func TestMetadataDocumentRefused(t *testing.T) {
	var id string
	// A document that claims a secret-based method is not a public client.
	h := newHarness(t, withDocument(&id, map[string]any{
		"client_name": "Bad", "redirect_uris": []string{nativeRedirect}, "token_endpoint_auth_method": "client_secret_basic",
	}))
	before := h.rows()
	r := h.browser().get(h.authzURL(id, nativeRedirect))
	if r.status != http.StatusBadRequest || r.header.Get("Location") != "" {
		t.Fatalf("refused document: %d %q", r.status, r.header.Get("Location"))
	}
	contains(t, r.body, "was refused")
	sameRows(t, before, h.rows(), "a refused metadata document")
}

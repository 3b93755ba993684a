package flow

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// ClientDocument is an OAuth client metadata document (the MCP client id metadata
// document draft: RFC 7591 names, client_id equal to the URL it is served at).
type ClientDocument struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// CIMDServer publishes client metadata documents over HTTPS on 127.0.0.1 with a
// certificate of the test's CA, and counts how often each was fetched, so that a
// test can tell the authorization server really read the document.
type CIMDServer struct {
	srv *httptest.Server

	mu      sync.Mutex
	docs    map[string][]byte
	fetches map[string]int
}

// StartCIMD starts the server for the test's lifetime.
func StartCIMD(t testing.TB, ca *CA) *CIMDServer {
	t.Helper()
	c := &CIMDServer{docs: map[string][]byte{}, fetches: map[string]int{}}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(c.serve))
	c.srv.TLS = ca.ServerTLS(t)
	c.srv.StartTLS()
	t.Cleanup(c.srv.Close)
	return c
}

// Publish serves doc at /clients/<name>.json, with client_id set to that URL, and
// returns the URL.
func (c *CIMDServer) Publish(t testing.TB, name string, doc ClientDocument) string {
	t.Helper()
	path := "/clients/" + name + ".json"
	doc.ClientID = c.srv.URL + path
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.docs[path] = b
	return doc.ClientID
}

// Fetches is how many times the document at clientID was served.
func (c *CIMDServer) Fetches(clientID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches[strings.TrimPrefix(clientID, c.srv.URL)]
}

func (c *CIMDServer) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	b, ok := c.docs[r.URL.Path]
	if ok {
		c.fetches[r.URL.Path]++
	}
	c.mu.Unlock()
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// Short, so that a test which edits a document sees the edit.
	w.Header().Set("Cache-Control", "max-age=60")
	_, _ = w.Write(b)
}

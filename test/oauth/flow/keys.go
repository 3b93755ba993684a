package flow

import (
	"encoding/json"
	"testing"
)

// PublishJSON serves v as JSON at /clients/<name>.json and returns the URL: a
// document with members ClientDocument lacks (a private_key_jwt client's jwks_uri),
// or a key set. When v is a map with no client_id, client_id is set to the URL,
// as a client metadata document needs.
func (c *CIMDServer) PublishJSON(t testing.TB, name string, v any) string {
	t.Helper()
	path := "/clients/" + name + ".json"
	url := c.srv.URL + path
	if m, ok := v.(map[string]any); ok {
		if _, has := m["client_id"]; !has {
			d := map[string]any{"client_id": url}
			for k, x := range m {
				d[k] = x
			}
			v = d
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.docs[path] = b
	return url
}

// URL is where PublishJSON(t, name, ...) serves.
func (c *CIMDServer) URL(name string) string { return c.srv.URL + "/clients/" + name + ".json" }

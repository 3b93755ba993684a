package flow

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"testing"
)

// TestCIMDServer: a client trusting only the test's CA fetches a published
// document whose client_id is its own URL; one that trusts the system pool does
// not get through; the bundle file holds the CA.
func TestCIMDServer(t *testing.T) {
	ca := NewCA(t)
	srv := StartCIMD(t, ca)
	id := srv.Publish(t, "one", ClientDocument{ClientName: "One", RedirectURIs: []string{"http://127.0.0.1:9/callback"}, TokenEndpointAuthMethod: "none"})

	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}}
	resp, err := trusting.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc ClientDocument
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || doc.ClientID != id || doc.ClientName != "One" {
		t.Fatalf("GET %s: %d %+v", id, resp.StatusCode, doc)
	}
	if n := srv.Fetches(id); n != 1 {
		t.Errorf("Fetches = %d, want 1", n)
	}
	if resp, err := trusting.Get(id + ".missing"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unpublished path: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	_, err = http.Get(id)
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("a client without the test CA: %v, want an unknown authority", err)
	}

	b, err := os.ReadFile(ca.WriteBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) || !pool.Equal(ca.Pool()) {
		t.Error("the bundle does not hold exactly the CA")
	}
}

package jwtaccess_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess"
	"github.com/aacworkflow/aacmcp/shared/auth/jwtaccess/jwttest"
	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
)

// stalledTransport holds every request until released: an issuer slow to answer.
type stalledTransport struct {
	started chan struct{} // closed when the first request arrives
	once    sync.Once
	release chan struct{}
}

func (s *stalledTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.once.Do(func() { close(s.started) })
	<-s.release
	return http.DefaultTransport.RoundTrip(r)
}

// TestKeyFetchGivesUpItsCPUSlot: a call waiting for the issuer's keys holds no CPU
// slot (aacmcp serve's shared/internal/cpuslot), so a slow issuer cannot stall
// every other call, whatever its token.
func TestKeyFetchGivesUpItsCPUSlot(t *testing.T) {
	iss := jwttest.NewIssuer(t)
	key := iss.AddRSA(t, "k1")
	tr := &stalledTransport{started: make(chan struct{}), release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(tr.release) })
	defer release()
	v := newVerifier(t, iss, &clock{t: t0}, func(c *jwtaccess.Config) {
		c.HTTPClient = &http.Client{Transport: tr}
	})

	g := cpuslot.New(1)
	ctx, done, err := g.Enter(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	verified := make(chan error, 1)
	go func() {
		_, err := v.Verify(ctx, key.Sign(t, claims(iss.URL)))
		verified <- err
	}()
	<-tr.started

	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, other, err := g.Enter(wctx, time.Now())
	if err != nil {
		t.Fatalf("a call waiting for the issuer kept its CPU slot: %v", err)
	}
	other()
	release()
	if err := <-verified; err != nil {
		t.Fatalf("after the issuer answered: %v", err)
	}
}

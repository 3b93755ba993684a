package confirm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// secretsServer is Secrets Manager's GetSecretValue on a loopback port, as the
// real SDK client speaks it (JSON 1.1 over POST, the operation in X-Amz-Target):
// one secret whose version stages the test moves, as a rotation does.
type secretsServer struct {
	t   *testing.T
	arn string

	mu     sync.Mutex
	stages map[string]string // stage -> value
	down   bool              // answer every call with a 500
	calls  int
}

func (s *secretsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		SecretID     string `json:"SecretId"`
		VersionStage string `json:"VersionStage"`
	}
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || json.NewDecoder(r.Body).Decode(&in) != nil {
		s.t.Errorf("unexpected request %s %s %q", r.Method, r.URL, r.Header.Get("X-Amz-Target"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(status int, typ, msg string) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	v, ok := s.stages[in.VersionStage]
	switch {
	case s.down:
		fail(http.StatusInternalServerError, "InternalServiceError", "unavailable")
	case in.SecretID != s.arn || !ok:
		fail(http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret value for staging label: "+in.VersionStage)
	default:
		_ = json.NewEncoder(w).Encode(map[string]any{"ARN": s.arn, "Name": "confirm", "SecretString": v,
			"VersionId": in.VersionStage + "-id", "VersionStages": []string{in.VersionStage}})
	}
}

// rotate makes value AWSCURRENT and the old current AWSPREVIOUS.
func (s *secretsServer) rotate(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stages["AWSPREVIOUS"], s.stages["AWSCURRENT"] = s.stages["AWSCURRENT"], value
}

func (s *secretsServer) set(f func(*secretsServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *secretsServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// startSecrets serves the secret on 127.0.0.1 and returns the real SDK client
// pointed at it.
func startSecrets(t *testing.T, current string) (*secretsServer, *secretsmanager.Client) {
	t.Helper()
	s := &secretsServer{t: t, arn: "arn:aws:secretsmanager:us-east-1:123456789012:secret:confirm-AbCdEf", stages: map[string]string{"AWSCURRENT": current}}
	srv := httptest.NewServer(s) // httptest listens on 127.0.0.1
	t.Cleanup(srv.Close)
	sm := secretsmanager.New(secretsmanager.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		BaseEndpoint:     aws.String(srv.URL),
		RetryMaxAttempts: 1,
		HTTPClient:       srv.Client(),
	})
	return s, sm
}

// sealedKeyID is the key id in a state's clear header.
func sealedKeyID(t *testing.T, state string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(raw) < 2 || len(raw) < 2+int(raw[1]) {
		t.Fatalf("state %q: %v", state, err)
	}
	return string(raw[2 : 2+int(raw[1])])
}

// TestWarmKeyringFollowsRotation: a keyring loaded before a rotation (a warm
// Lambda) opens a state sealed under the new AWSCURRENT by another instance,
// without a restart; reloads are rate-limited; the periodic reload moves its
// own seals to the new key; a failed reload keeps the keys in use.
func TestWarmKeyringFollowsRotation(t *testing.T) {
	ctx := context.Background()
	srv, sm := startSecrets(t, b64('a'))
	src := SecretsManagerSource(sm, srv.arn)

	warm, err := SecretsKeyring(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	keyA, keyB := keyID(repeat('a')), keyID(repeat('b'))
	before, _, err := warm.Seal(claims(), t0)
	if err != nil {
		t.Fatal(err)
	}
	if id := sealedKeyID(t, before); id != keyA {
		t.Fatalf("sealed under %s, want %s", id, keyA)
	}

	srv.rotate(b64('b'))
	cold, err := SecretsKeyring(ctx, src) // an instance started after the rotation
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, err := cold.Seal(claims(), t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if id := sealedKeyID(t, fresh); id != keyB {
		t.Fatalf("the new instance sealed under %s, want %s", id, keyB)
	}
	if _, err := cold.Open(before, t0.Add(time.Second)); err != nil {
		t.Fatalf("the new instance refused a state sealed before the rotation (AWSPREVIOUS): %v", err)
	}

	calls := srv.count()
	if _, err := warm.Open(fresh, t0.Add(2*time.Second)); err != nil {
		t.Fatalf("the warm instance refused the new key's state: %v", err)
	}
	if got := srv.count() - calls; got != 2 {
		t.Fatalf("the unknown key id made %d Secrets Manager calls, want 2 (AWSCURRENT, AWSPREVIOUS)", got)
	}
	if _, err := warm.Open(before, t0.Add(2*time.Second)); err != nil {
		t.Fatalf("after the reload the old key stopped opening: %v", err)
	}

	// Made-up key ids cannot make the keyring call Secrets Manager more than
	// once per RefreshMinInterval.
	stranger, err := NewKeyring(testKey("not-ours", 'z'))
	if err != nil {
		t.Fatal(err)
	}
	forged, _, _ := stranger.Seal(claims(), t0)
	calls = srv.count()
	for i := range 5 {
		if _, err := warm.Open(forged, t0.Add(3*time.Second+time.Duration(i)*time.Second)); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("forged key id: %v", err)
		}
	}
	if got := srv.count() - calls; got != 0 {
		t.Fatalf("forged states within %v of the last reload made %d calls", RefreshMinInterval, got)
	}
	if _, err := warm.Open(forged, t0.Add(2*time.Second+RefreshMinInterval)); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("forged key id: %v", err)
	}
	if got := srv.count() - calls; got != 2 {
		t.Fatalf("after %v a forged id made %d calls, want one reload (2)", RefreshMinInterval, got)
	}

	// A second rotation, with Secrets Manager unreachable at first: the keys in
	// use stay, then the periodic reload moves the seals to the new key.
	srv.rotate(b64('c'))
	srv.set(func(s *secretsServer) { s.down = true })
	late := t0.Add(2*time.Second + RefreshMinInterval + RefreshEvery)
	s1, _, err := warm.Seal(claims(), late)
	if err != nil {
		t.Fatalf("seal while Secrets Manager is down: %v", err)
	}
	if id := sealedKeyID(t, s1); id != keyB {
		t.Fatalf("sealed under %s while the reload failed, want the key in use %s", id, keyB)
	}
	srv.set(func(s *secretsServer) { s.down = false })
	s2, _, err := warm.Seal(claims(), late.Add(RefreshMinInterval))
	if err != nil {
		t.Fatal(err)
	}
	if id, want := sealedKeyID(t, s2), keyID(repeat('c')); id != want {
		t.Fatalf("after the periodic reload sealed under %s, want %s", id, want)
	}
	if _, err := warm.Open(s1, late.Add(RefreshMinInterval)); err != nil {
		t.Fatalf("the state sealed just before the reload (now AWSPREVIOUS) no longer opens: %v", err)
	}
}

// TestFixedKeyringNeverReloads: keyrings of fixed keys (the data folder's, the
// ephemeral one) answer an unknown key id at once.
func TestFixedKeyringNeverReloads(t *testing.T) {
	ring, err := NewKeyring(testKey("k1", 'a'))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewKeyring(testKey("k2", 'b'))
	state, _, _ := other.Seal(claims(), t0)
	if _, err := ring.Open(state, t0); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("got %v", err)
	}
}

// TestClockOffset: a keyring whose clock runs Lifetime ahead finds a state
// sealed by the same keys expired, which is what EnvTestClockOffset relies on.
func TestClockOffset(t *testing.T) {
	ring, err := NewKeyring(testKey("k1", 'a'))
	if err != nil {
		t.Fatal(err)
	}
	state, _, _ := ring.Seal(claims(), t0)
	if _, err := ring.WithClockOffset(Lifetime+time.Second).Open(state, t0); !errors.Is(err, ErrExpired) {
		t.Fatalf("got %v, want expired", err)
	}
	if _, err := ring.WithClockOffset(time.Minute).Open(state, t0); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
}

func repeat(b byte) []byte {
	out := make([]byte, KeySize)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestReloadConcurrent: instances serve requests in parallel; while one reload
// is under way the others keep sealing and opening, every state of the new key
// opens, and the race detector sees no unguarded access.
func TestReloadConcurrent(t *testing.T) {
	ctx := context.Background()
	srv, sm := startSecrets(t, b64('a'))
	warm, err := SecretsKeyring(ctx, SecretsManagerSource(sm, srv.arn))
	if err != nil {
		t.Fatal(err)
	}
	srv.rotate(b64('b'))
	cold, err := SecretsKeyring(ctx, SecretsManagerSource(sm, srv.arn))
	if err != nil {
		t.Fatal(err)
	}
	fresh, _, err := cold.Seal(claims(), t0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 16 {
		wg.Add(2)
		at := t0.Add(time.Duration(i) * time.Second)
		go func() {
			defer wg.Done()
			if _, err := warm.Open(fresh, at); err != nil {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			if _, _, err := warm.Seal(claims(), at.Add(RefreshEvery)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

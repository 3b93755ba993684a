package autopilot

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A captured delivery cannot be replayed later: the signing time is inside the MAC,
// and Verify refuses a time more than SignatureTolerance away from its clock.
func TestVerifyRefusesAReplayedDelivery(t *testing.T) {
	body := []byte(`{"run_id":"r1"}`)
	signedAt := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	captured := Sign(testSecret, signedAt, body)
	if err := Verify(testSecret, body, captured, signedAt.Add(10*time.Minute)); !errors.Is(err, ErrSignatureExpired) {
		t.Errorf("a delivery captured ten minutes ago: Verify = %v, want ErrSignatureExpired", err)
	}
	// Moving the time forward breaks the MAC.
	ts := strings.TrimPrefix(strings.SplitN(captured, ",", 2)[0], "t=")
	fresh := strings.Replace(captured, "t="+ts, "t="+strconv.FormatInt(signedAt.Add(10*time.Minute).Unix(), 10), 1)
	if err := Verify(testSecret, body, fresh, signedAt.Add(10*time.Minute)); !errors.Is(err, ErrSignatureMismatch) {
		t.Errorf("a replay with a fresh t=: Verify = %v, want ErrSignatureMismatch", err)
	}
}

func TestSignVerify(t *testing.T) {
	body := []byte(`{"run_id":"r1"}`)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sig := Sign(testSecret, at, body)
	if !strings.HasPrefix(sig, "t=1772366400,v1=") || len(sig) != len("t=1772366400,v1=")+64 {
		t.Fatalf("Sign = %q, want t=<unix>,v1=<64 hex>", sig)
	}
	v1 := strings.TrimPrefix(sig, "t=1772366400,")
	other := Sign([]byte("old secret"), at, body)
	tests := []struct {
		name   string
		secret []byte
		body   []byte
		header string
		now    time.Time
		want   error
	}{
		{"valid", testSecret, body, sig, at, nil},
		{"4m59s later", testSecret, body, sig, at.Add(SignatureTolerance - time.Second), nil},
		{"5m1s later", testSecret, body, sig, at.Add(SignatureTolerance + time.Second), ErrSignatureExpired},
		{"receiver clock 4m behind", testSecret, body, sig, at.Add(-4 * time.Minute), nil},
		{"too far in the future", testSecret, body, sig, at.Add(-SignatureTolerance - time.Second), ErrSignatureFuture},
		{"other body", testSecret, []byte(`{"run_id":"r2"}`), sig, at, ErrSignatureMismatch},
		{"other secret", []byte("other"), body, sig, at, ErrSignatureMismatch},
		{"rotation: old and new", testSecret, body, other + "," + v1, at, nil},
		{"unknown scheme beside v1", testSecret, body, sig + ",v0=abc", at, nil},
		{"no time", testSecret, body, v1, at, ErrSignatureMalformed},
		{"two times", testSecret, body, "t=1," + sig, at, ErrSignatureMalformed},
		{"non-canonical time", testSecret, body, strings.Replace(sig, "t=1772366400", "t=01772366400", 1), at, ErrSignatureMalformed},
		{"no v1", testSecret, body, "t=1772366400", at, ErrSignatureMalformed},
		{"not hex", testSecret, body, "t=1772366400,v1=zz", at, ErrSignatureMalformed},
		{"short MAC", testSecret, body, "t=1772366400,v1=00", at, ErrSignatureMalformed},
		{"old sha256= form", testSecret, body, "sha256=" + strings.TrimPrefix(v1, "v1="), at, ErrSignatureMalformed},
		{"empty", testSecret, body, "", at, ErrSignatureMalformed},
		{"huge", testSecret, body, sig + strings.Repeat(",x=1", 400), at, ErrSignatureMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Verify(tc.secret, tc.body, tc.header, tc.now); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Errorf("Verify = %v, want %v", got, tc.want)
			}
		})
	}
}

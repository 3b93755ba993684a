package retry

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

var (
	errTransient = errors.New("transient")
	errFatal     = errors.New("fatal")
)

func transientOnly(err error) bool { return errors.Is(err, errTransient) }

func TestDo(t *testing.T) {
	hinted := After(errTransient, 3*time.Second)
	tests := []struct {
		name      string
		policy    Policy
		results   []error // op's answer per attempt; past the end, errTransient
		ctx       func() (context.Context, context.CancelFunc)
		cancelAt  int // cancel ctx during this attempt (0: never)
		wantCalls int
		wantWaits []time.Duration
		wantErr   []error // errors.Is must hold for each; nil: want nil
	}{
		{
			name:      "success first time",
			policy:    Policy{Attempts: 3, Base: time.Second},
			results:   []error{nil},
			wantCalls: 1,
		},
		{
			name:      "zero value tries once",
			results:   []error{errTransient},
			wantCalls: 1,
			wantErr:   []error{errTransient},
		},
		{
			name:      "success on the third",
			policy:    Policy{Attempts: 5, Base: 10 * time.Millisecond},
			results:   []error{errTransient, errTransient, nil},
			wantCalls: 3,
			wantWaits: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond},
		},
		{
			name:      "attempts exhausted returns the last error",
			policy:    Policy{Attempts: 4, Base: time.Millisecond},
			wantCalls: 4,
			wantWaits: []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond},
			wantErr:   []error{errTransient},
		},
		{
			name:      "doubling capped by Max",
			policy:    Policy{Attempts: 5, Base: 300 * time.Millisecond, Max: time.Second},
			wantCalls: 5,
			wantWaits: []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, time.Second, time.Second},
			wantErr:   []error{errTransient},
		},
		{
			name:      "predicate stops at a fatal error",
			policy:    Policy{Attempts: 5, Base: time.Millisecond, Retryable: transientOnly},
			results:   []error{errTransient, errFatal, nil},
			wantCalls: 2,
			wantWaits: []time.Duration{time.Millisecond},
			wantErr:   []error{errFatal},
		},
		{
			name:      "nil predicate retries everything",
			policy:    Policy{Attempts: 3, Base: time.Millisecond},
			results:   []error{errFatal, errFatal, nil},
			wantCalls: 3,
			wantWaits: []time.Duration{time.Millisecond, 2 * time.Millisecond},
		},
		{
			name:      "a hint replaces the backoff",
			policy:    Policy{Attempts: 3, Base: time.Millisecond, Max: 5 * time.Second, Jitter: 1},
			results:   []error{hinted, nil},
			wantCalls: 2,
			wantWaits: []time.Duration{3 * time.Second},
		},
		{
			name:      "a hint beyond Max ends the retries",
			policy:    Policy{Attempts: 3, Base: time.Millisecond, Max: time.Second},
			results:   []error{hinted, nil},
			wantCalls: 1,
			wantErr:   []error{errTransient},
		},
		{
			name:      "cancel during an attempt stops before the wait",
			policy:    Policy{Attempts: 5, Base: time.Millisecond},
			cancelAt:  2,
			wantCalls: 2,
			wantWaits: []time.Duration{time.Millisecond},
			wantErr:   []error{errTransient, context.Canceled},
		},
		{
			name:   "a deadline inside the wait stops without waiting",
			policy: Policy{Attempts: 5, Base: 2 * time.Hour},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Hour)
			},
			wantCalls: 1,
			wantErr:   []error{errTransient, context.DeadlineExceeded},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			var waits []time.Duration
			tc.policy.Sleep = func(ctx context.Context, d time.Duration) error {
				waits = append(waits, d)
				return ctx.Err()
			}
			calls := 0
			err := Do(ctx, tc.policy, func(attempt int) error {
				calls++
				if attempt != calls {
					t.Errorf("attempt = %d on call %d", attempt, calls)
				}
				if attempt == tc.cancelAt {
					cancel()
				}
				if attempt <= len(tc.results) {
					return tc.results[attempt-1]
				}
				return errTransient
			})
			if calls != tc.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tc.wantCalls)
			}
			if tc.policy.Jitter == 0 && !slices.Equal(waits, tc.wantWaits) {
				t.Errorf("waits = %v, want %v", waits, tc.wantWaits)
			}
			if tc.wantErr == nil && err != nil {
				t.Errorf("err = %v, want nil", err)
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want it to match %v", err, want)
				}
			}
			if tc.policy.Jitter > 0 && len(waits) != len(tc.wantWaits) {
				t.Errorf("waits = %v, want %d of them", waits, len(tc.wantWaits))
			}
		})
	}
}

func TestSleepErrorStops(t *testing.T) {
	errStop := errors.New("sleep failed")
	calls := 0
	err := Do(context.Background(), Policy{Attempts: 3, Base: time.Millisecond,
		Sleep: func(context.Context, time.Duration) error { return errStop }},
		func(int) error { calls++; return errTransient })
	if calls != 1 || !errors.Is(err, errStop) || !errors.Is(err, errTransient) {
		t.Errorf("calls = %d, err = %v; want 1 call and both errors", calls, err)
	}
}

// TestJitterBounds checks that every jittered wait stays in [d·(1-Jitter), d].
func TestJitterBounds(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		lo, hi []time.Duration // per retry
	}{
		{"equal jitter", Policy{Attempts: 4, Base: 100 * time.Millisecond, Max: 300 * time.Millisecond, Jitter: 0.5},
			[]time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond},
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}},
		{"full jitter", Policy{Attempts: 3, Base: 10 * time.Millisecond, Jitter: 1},
			[]time.Duration{0, 0},
			[]time.Duration{10 * time.Millisecond, 20 * time.Millisecond}},
		{"jitter above 1 counts as 1", Policy{Attempts: 2, Base: 10 * time.Millisecond, Jitter: 7},
			[]time.Duration{0}, []time.Duration{10 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for range 200 {
				var waits []time.Duration
				p := tc.policy
				p.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
				_ = Do(context.Background(), p, func(int) error { return errTransient })
				if len(waits) != len(tc.lo) {
					t.Fatalf("waits = %v, want %d", waits, len(tc.lo))
				}
				for i, d := range waits {
					if d < tc.lo[i] || d > tc.hi[i] {
						t.Fatalf("wait %d = %v, want in [%v, %v]", i+1, d, tc.lo[i], tc.hi[i])
					}
				}
			}
		})
	}
}

func TestDelay(t *testing.T) {
	tests := []struct {
		p    Policy
		n    int
		want time.Duration
	}{
		{Policy{Base: 5 * time.Millisecond, Max: time.Second}, 0, 5 * time.Millisecond},
		{Policy{Base: 5 * time.Millisecond, Max: time.Second}, 1, 5 * time.Millisecond},
		{Policy{Base: 5 * time.Millisecond, Max: time.Second}, 2, 10 * time.Millisecond},
		{Policy{Base: 5 * time.Millisecond, Max: time.Second}, 8, 640 * time.Millisecond},
		{Policy{Base: 5 * time.Millisecond, Max: time.Second}, 9, time.Second},
		{Policy{Base: 5 * time.Millisecond, Max: time.Second}, 1 << 20, time.Second},
		{Policy{Base: 20 * time.Millisecond}, 4, 160 * time.Millisecond},
		{Policy{Base: 2 * time.Second, Max: time.Second}, 1, time.Second},
		{Policy{Max: time.Second}, 3, 0},
	}
	for _, tc := range tests {
		if got := tc.p.Delay(tc.n); got != tc.want {
			t.Errorf("%+v.Delay(%d) = %v, want %v", tc.p, tc.n, got, tc.want)
		}
	}
}

func TestDelayDoesNotOverflow(t *testing.T) {
	p := Policy{Base: time.Hour}
	prev := p.Delay(1)
	for n := 2; n < 200; n++ {
		d := p.Delay(n)
		if d < prev {
			t.Fatalf("Delay(%d) = %v after %v: want non-decreasing", n, d, prev)
		}
		prev = d
	}
}

func TestAfterIgnoresNoHint(t *testing.T) {
	if After(nil, time.Second) != nil {
		t.Error("After(nil) is not nil")
	}
	if err := After(errTransient, 0); err != errTransient {
		t.Errorf("After(err, 0) = %v, want err itself", err)
	}
}

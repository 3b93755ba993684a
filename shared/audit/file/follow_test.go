package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/audit"
	"github.com/aacworkflow/aacmcp/shared/audit/audittest"
)

func TestFollow(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir)
	h := time.Date(2025, 6, 22, 10, 0, 0, 0, time.UTC)
	old := audittest.Record(h.Add(time.Minute))
	mustWrite(t, s, old)

	// A second writer's line that is half written when Follow starts.
	half := audittest.Record(h.Add(2 * time.Minute))
	halfLine, err := audit.MarshalLine(half)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(partitionDir(filepath.Join(dir, Subdir), h), "other.json")
	if err := os.WriteFile(other, halfLine[:30], 0o600); err != nil {
		t.Fatal(err)
	}

	probes := 0
	for _, tc := range []struct {
		name string
		opts []FollowOption
		want func(news []audit.Record) []string
	}{
		{"new records only", nil, func(news []audit.Record) []string { return ids(news) }},
		{"from start", []FollowOption{FromStart()}, func(news []audit.Record) []string {
			return append([]string{old.EventID}, ids(news)...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			got := make(chan Entry, 100)
			done := make(chan error, 1)
			go func() {
				done <- Follow(ctx, dir, func(e Entry) error { got <- e; return nil },
					append(tc.opts, WithPollInterval(5*time.Millisecond))...)
			}()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Follow returned %v after cancel", err)
				}
			})
			if tc.opts != nil {
				// FromStart delivers what is on disk first; the torn half line waits.
				e := <-got
				if e.Err != nil || e.Record.EventID != old.EventID {
					t.Fatalf("first entry %+v, want %s", e, old.EventID)
				}
			}
			if tc.opts == nil {
				waitFollowing(t, s, got, h, &probes)
			}
			// New records across two hours.
			news := []audit.Record{
				audittest.Record(h.Add(3 * time.Minute)),
				audittest.Record(h.Add(time.Hour + time.Minute)),
			}
			for _, r := range news {
				mustWrite(t, s, r)
			}
			want := tc.want(news)
			if tc.opts != nil {
				want = want[1:]
			}
			wanted := map[string]bool{}
			for _, id := range want {
				wanted[id] = true
			}
			// Records of the earlier subtest may come too (FromStart); each record
			// comes at most once, and every new one comes.
			seen := map[string]bool{}
			for missing := len(want); missing > 0; {
				e := <-got
				if e.Err != nil {
					t.Fatalf("damaged entry: %v", e.Err)
				}
				if seen[e.Record.EventID] {
					t.Fatalf("record %s delivered twice", e.Record.EventID)
				}
				seen[e.Record.EventID] = true
				if wanted[e.Record.EventID] {
					missing--
				}
			}
		})
	}

	// Completing the half line delivers it once, whole, to a new follower that
	// started while it was half written.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan Entry, 10)
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, dir, func(e Entry) error { got <- e; return nil }, FromStart(), WithPollInterval(5*time.Millisecond))
	}()
	drain := func(n int) {
		for range n {
			if e := <-got; e.Err != nil {
				t.Fatalf("damaged entry while draining: %v", e.Err)
			}
		}
	}
	drain(5 + probes) // old, two per earlier subtest, and the probes
	f, err := os.OpenFile(other, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(halfLine[30:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e := <-got
	if e.Err != nil || e.Record.EventID != half.EventID || e.Offset != 0 {
		t.Fatalf("completed line delivered as %+v", e)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitFollowing writes probe records until the follower delivers one: from then on it
// has taken its snapshot of the existing files, and every later record is new to it.
func waitFollowing(t *testing.T, s *Sink, got <-chan Entry, h time.Time, probes *int) {
	t.Helper()
	for {
		mustWrite(t, s, audittest.Record(h.Add(time.Second)))
		*probes++
		select {
		case e := <-got:
			if e.Err != nil {
				t.Fatalf("damaged entry: %v", e.Err)
			}
			// Later probes may still arrive; the caller ignores records it did not
			// ask for.
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ids(rs []audit.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.EventID
	}
	return out
}

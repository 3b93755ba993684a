package autopilot

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func readOutbox(t *testing.T, path string) []Job {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var jobs []Job
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var j Job
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			t.Fatalf("line %d is not a job: %v: %q", len(jobs)+1, err, sc.Text())
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return jobs
}

func TestOutboxConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", OutboxFile)
	o, err := NewOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })

	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			j := testJob()
			j.RunID = fmt.Sprintf("run-%02d", i)
			if err := o.Dispatch(t.Context(), j); err != nil {
				t.Errorf("Dispatch %d: %v", i, err)
			}
		})
	}
	wg.Wait()

	jobs := readOutbox(t, path)
	if len(jobs) != n {
		t.Fatalf("lines = %d, want %d", len(jobs), n)
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		seen[j.RunID] = true
	}
	if len(seen) != n {
		t.Errorf("distinct run ids = %d, want %d", len(seen), n)
	}

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode = %v, want 0600", perm)
	}
}

func TestOutboxAppendsAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), OutboxFile)
	for i := range 2 {
		o, err := NewOutbox(path)
		if err != nil {
			t.Fatal(err)
		}
		j := testJob()
		j.RunID = fmt.Sprintf("run-%d", i)
		if err := o.Dispatch(t.Context(), j); err != nil {
			t.Fatal(err)
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
	}
	jobs := readOutbox(t, path)
	if len(jobs) != 2 || jobs[0].RunID != "run-0" || jobs[1].RunID != "run-1" {
		t.Fatalf("jobs = %+v, want run-0 then run-1", jobs)
	}
	if jobs[0] != func() Job { j := testJob(); j.RunID = "run-0"; return j }() {
		t.Errorf("job did not round-trip: %+v", jobs[0])
	}
}

func TestOutboxClosed(t *testing.T) {
	o, err := NewOutbox(filepath.Join(t.TempDir(), OutboxFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	err = o.Dispatch(t.Context(), testJob())
	var de *DispatchError
	if !errors.As(err, &de) {
		t.Fatalf("Dispatch after Close = %v, want *DispatchError", err)
	}
	if err := o.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestNewOutboxBadPath(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewOutbox(filepath.Join(blocker, OutboxFile)); err == nil {
		t.Fatal("NewOutbox under a regular file succeeded")
	}
}

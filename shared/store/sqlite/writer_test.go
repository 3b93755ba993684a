package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/internal/cpuslot"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// countRows counts the rows of table through the read pool: what is committed.
func countRows(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.read(t.Context()).queryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// hold queues a transaction that keeps the writer busy until release is closed,
// so that the transactions queued meanwhile run together in the next batch.
func hold(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, rel := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.tx(context.Background(), func(q) error {
			close(started)
			<-rel
			return nil
		})
	}()
	<-started
	return func() { close(rel) }
}

// waitQueued waits until n transactions are queued behind the one hold keeps.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.w.jobs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions queued, want %d", len(s.w.jobs), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommitIsolatesFailures runs transactions that fail beside ones that
// succeed in one batch: each failure undoes only its own writes.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	seedWorkspace(t, s, "ws")
	before := countRows(t, s, "agents")
	release := hold(t, s)

	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.tx(t.Context(), func(x q) error {
				if _, err := x.exec(`INSERT INTO agents (workspace_id, id, name, created_at) VALUES ('ws', ?, ?, 0)`,
					fmt.Sprintf("agent-%d", i), fmt.Sprintf("agent %d", i)); err != nil {
					return err
				}
				if i%3 == 0 {
					return store.Errorf(store.ErrConflict, "refused after writing")
				}
				return nil
			})
		}()
	}
	waitQueued(t, s, n)
	release()
	wg.Wait()

	want := 0
	for i, err := range errs {
		switch {
		case i%3 == 0 && !errors.Is(err, store.ErrConflict):
			t.Errorf("transaction %d: %v, want its own conflict", i, err)
		case i%3 != 0 && err != nil:
			t.Errorf("transaction %d: %v, want success", i, err)
		case i%3 != 0:
			want++
		}
	}
	if got := countRows(t, s, "agents") - before; got != want {
		t.Errorf("%d agents committed, want the %d of the transactions that succeeded", got, want)
	}
}

// TestGroupCommitSurvivesALostTransaction ends the batch's transaction from inside
// one job, as SQLite does itself on an I/O error or a full disk: the jobs before it
// are told their writes are gone, and the ones after it run in a fresh transaction.
func TestGroupCommitSurvivesALostTransaction(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	seedWorkspace(t, s, "ws")
	release := hold(t, s)

	insert := func(id string) func(q) error {
		return func(x q) error {
			_, err := x.exec(`INSERT INTO agents (workspace_id, id, name, created_at) VALUES ('ws', ?, ?, 0)`, id, id)
			return err
		}
	}
	results := make(chan struct {
		id  string
		err error
	}, 3)
	run := func(id string, fn func(q) error) {
		go func() {
			err := s.tx(t.Context(), fn)
			results <- struct {
				id  string
				err error
			}{id, err}
		}()
	}
	run("before", insert("before"))
	waitQueued(t, s, 1)
	run("breaker", func(x q) error {
		_, err := s.wconn.ExecContext(context.Background(), "ROLLBACK")
		return err
	})
	waitQueued(t, s, 2)
	run("after", insert("after"))
	waitQueued(t, s, 3)
	release()

	got := map[string]error{}
	for range 3 {
		r := <-results
		got[r.id] = r.err
	}
	if got["before"] == nil {
		t.Error("the job before the lost transaction was told it committed")
	}
	if got["breaker"] == nil {
		t.Error("the job that lost the transaction was told it committed")
	}
	if got["after"] != nil {
		t.Errorf("the job after the lost transaction: %v, want it run again and committed", got["after"])
	}
	var ids []string
	rows, err := s.read(t.Context()).query(`SELECT id FROM agents ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if len(ids) != 1 || ids[0] != "after" {
		t.Errorf("agents committed: %v, want only [after]", ids)
	}
	// The store goes on writing.
	if err := s.tx(t.Context(), insert("later")); err != nil {
		t.Errorf("write after the lost transaction: %v", err)
	}
}

// TestPanicFailsOnlyItsTransaction: a panic in a transaction's function (a bug)
// fails that call and undoes its writes; the writer goes on with the others.
func TestPanicFailsOnlyItsTransaction(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	seedWorkspace(t, s, "ws")
	before := countRows(t, s, "agents")
	release := hold(t, s)
	insert := func(id string) func(q) error {
		return func(x q) error {
			_, err := x.exec(`INSERT INTO agents (workspace_id, id, name, created_at) VALUES ('ws', ?, ?, 0)`, id, id)
			return err
		}
	}
	errs := make(chan error, 2)
	go func() {
		errs <- s.tx(t.Context(), func(x q) error {
			if err := insert("panicked")(x); err != nil {
				return err
			}
			panic("a bug in a store method")
		})
	}()
	waitQueued(t, s, 1)
	go func() { errs <- s.tx(t.Context(), insert("fine")) }()
	waitQueued(t, s, 2)
	release()
	var failed, ok int
	for range 2 {
		if err := <-errs; err != nil {
			failed++
		} else {
			ok++
		}
	}
	if failed != 1 || ok != 1 {
		t.Errorf("%d transactions failed and %d succeeded, want 1 and 1", failed, ok)
	}
	if got := countRows(t, s, "agents") - before; got != 1 {
		t.Errorf("%d agents committed, want only the one of the transaction that did not panic", got)
	}
}

// TestQueuedWriteGivesUpWithItsContext: a caller whose context ends while its
// transaction waits in the queue gets the context's error, and it never runs.
func TestQueuedWriteGivesUpWithItsContext(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	release := hold(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	ran := false
	done := make(chan error, 1)
	go func() {
		done <- s.tx(ctx, func(q) error { ran = true; return nil })
	}()
	waitQueued(t, s, 1)
	cancel()
	err := <-done
	release()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("queued write after cancel: %v, want context.Canceled", err)
	}
	// A write queued after it runs only once the abandoned one has been passed by.
	if err := s.tx(t.Context(), func(q) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("the abandoned transaction ran")
	}
}

// TestCloseRunsWhatIsQueued: Close lets the transactions already queued commit,
// and a write after it fails as a failure of the backend.
func TestCloseRunsWhatIsQueued(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	seedWorkspace(t, s, "ws")
	release := hold(t, s)
	const n = 5
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := s.CreateAgent(context.Background(), store.Agent{WorkspaceID: "ws", ID: fmt.Sprintf("agent-%d", i), Name: "a"})
			errs <- err
		}()
	}
	waitQueued(t, s, n)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	release()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("write queued before Close: %v", err)
		}
	}
	if _, err := s.CreateAgent(t.Context(), store.Agent{WorkspaceID: "ws", ID: "late", Name: "a"}); err == nil || store.IsStorage(err) {
		t.Errorf("write after Close: %v, want a failure of the backend", err)
	}
	s2 := openAt(t, path)
	if got := countRows(t, s2, "agents"); got != n {
		t.Errorf("%d agents after reopening, want %d", got, n)
	}
}

// TestCheckpointerCopiesTheWAL: the write connection never checkpoints (its
// commits wait for no fsync); the checkpointer copies the commits into the
// database file while the store is open.
func TestCheckpointerCopiesTheWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	s := openAt(t, path)
	var auto int
	if err := s.tx(t.Context(), func(x q) error {
		return s.wconn.QueryRowContext(context.Background(), "PRAGMA wal_autocheckpoint").Scan(&auto)
	}); err != nil {
		t.Fatal(err)
	}
	if auto != 0 {
		t.Errorf("the write connection's wal_autocheckpoint is %d, want 0", auto)
	}
	var temp int
	if err := s.tx(t.Context(), func(x q) error {
		return s.wconn.QueryRowContext(context.Background(), "PRAGMA temp_store").Scan(&temp)
	}); err != nil {
		t.Fatal(err)
	}
	if temp != 2 {
		t.Errorf("the write connection's temp_store is %d, want 2 (memory: the savepoints' sub-journals)", temp)
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	seedWorkspace(t, s, "ws")
	before := size()
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	for i := range 40 {
		if _, err := s.CreateIssue(t.Context(), "ws", store.NewIssue{Title: fmt.Sprint("t", i), Description: string(big), Status: "open", Priority: "low"}); err != nil {
			t.Fatal(err)
		}
	}
	// 2.5 MB of issues: only a checkpoint puts them in the database file.
	deadline := time.Now().Add(30 * time.Second)
	for size() < before+2<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("database file %d bytes after the writes (%d before): nothing was checkpointed", size(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestQueuedWriteGivesUpItsCPUSlot: a call waiting for the writer holds no CPU slot
// (cpuslot), so a call that arrived after it runs meanwhile; and once committed it
// takes its slot back before returning.
func TestQueuedWriteGivesUpItsCPUSlot(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	g := cpuslot.New(1)
	ctx, done, err := g.Enter(t.Context(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	release := sync.OnceFunc(hold(t, s)) // the write below waits for the writer
	defer release()                      // on a failure too, or Close waits for ever
	wrote := make(chan error, 1)
	go func() { wrote <- s.tx(ctx, func(q) error { return nil }) }()
	waitQueued(t, s, 1)

	// The one slot is free while the write waits: a newer call gets it.
	doneNewer := newerCallGetsTheSlot(t, g, "a newer call did not get the slot of a call waiting for the writer")
	release()
	// Committed, the write queues for its slot again instead of returning.
	for deadline := time.Now().Add(time.Minute); g.Stats().Waiting != 1; time.Sleep(time.Millisecond) {
		select {
		case err := <-wrote:
			t.Fatalf("the write returned (%v) while its call's slot was another's", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the committed write did not queue for its slot")
		}
	}
	doneNewer() // the slot goes back to the older call, and its write returns
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if st := g.Stats(); st.Free != 0 || st.Waiting != 0 {
		t.Fatalf("after the write returned: %+v, want its call holding the one slot", st)
	}
}

// TestFlushWaitGivesUpItsCPUSlot: a call waiting for another's usage flush holds no
// CPU slot. The flush under way may be a call's, parked in its transaction, that
// needs a slot to finish: with every slot held by calls waiting for it, none would.
func TestFlushWaitGivesUpItsCPUSlot(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "db.sqlite"))
	g := cpuslot.New(1)
	s.usage.flushing <- struct{}{} // a flush under way
	release := sync.OnceFunc(func() { <-s.usage.flushing })
	defer release()

	ctx, done, err := g.Enter(t.Context(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	flushed := make(chan error, 1)
	go func() { flushed <- s.FlushUsage(ctx) }()

	newerCallGetsTheSlot(t, g, "a call waiting for another's flush kept its CPU slot")()
	release()
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
}

// newerCallGetsTheSlot waits for a call arriving now to get one of g's slots, which
// shows that the calls before it gave theirs up, and returns that call's done.
func newerCallGetsTheSlot(t *testing.T, g *cpuslot.Gate, failure string) (done func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, done, err := g.Enter(ctx, time.Now())
	if err != nil {
		t.Fatalf("%s: %v", failure, err)
	}
	return done
}

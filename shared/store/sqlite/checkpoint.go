package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"time"
)

// The checkpointer copies committed WAL frames back into the database file on its
// own connection. SQLite's automatic checkpoint runs inside the COMMIT that crosses
// 1,000 WAL pages, on the committing connection, and it fsyncs the WAL and the
// database file: here that connection is the only writer, and every transaction
// queued behind it waited too (make soak: 127 commits of more than 2 ms, 1.3 s of
// the writer's 5.8 s, the longest 84 ms). A PASSIVE checkpoint on another
// connection takes no write lock, so the writer keeps committing while it runs.
//
// The writer kicks it after each commit; it checkpoints at most once per
// checkpointEvery and once more after the last kick, so the WAL stays about as
// short as the automatic checkpoint kept it and an idle database is fully copied.
type checkpointer struct {
	db   *sql.DB
	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

const checkpointEvery = 100 * time.Millisecond

func (s *Store) startCheckpointer(abs string, common url.Values) error {
	db, err := sql.Open("sqlite", abs+"?"+common.Encode())
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	s.ckpt = checkpointer{db: db, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go s.checkpointLoop()
	return nil
}

// stopCheckpointer ends the loop and closes its connection. Closing the last
// connection to the file checkpoints what is left, so nothing waits in the WAL.
func (s *Store) stopCheckpointer() error {
	c := &s.ckpt
	if c.db == nil {
		return nil
	}
	close(c.quit)
	<-c.done
	err := c.db.Close()
	c.db = nil
	return err
}

// kickCheckpoint tells the checkpointer that a commit added frames. It never waits.
func (s *Store) kickCheckpoint() {
	if s.ckpt.kick == nil {
		return // migrations commit before the checkpointer starts
	}
	select {
	case s.ckpt.kick <- struct{}{}:
	default:
	}
}

func (s *Store) checkpointLoop() {
	c := &s.ckpt
	defer close(c.done)
	pause := time.NewTimer(0)
	<-pause.C
	for {
		select {
		case <-c.kick:
		case <-c.quit:
			return
		}
		s.checkpoint()
		pause.Reset(checkpointEvery)
		select {
		case <-pause.C:
		case <-c.quit:
			return
		}
	}
}

// checkpoint runs one PASSIVE checkpoint. A failure only leaves the frames in the
// WAL, where readers still find them, until the next one; it is logged.
func (s *Store) checkpoint() {
	var busy, frames, copied int
	err := s.ckpt.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		s.log.Warn("sqlite: WAL checkpoint failed; the frames stay in the WAL until the next", "err", err)
	}
}

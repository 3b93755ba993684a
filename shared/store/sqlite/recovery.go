package sqlite

import (
	"context"
)

// DeletePendingIdempotency releases every idempotency claim still pending. Only the
// process that owns the database exclusively may call it, at start, before it serves:
// then a pending claim can only belong to a process that died between claiming a key and
// settling it (kill -9), and the client's retry should run rather than be refused as
// "in progress" until the guard's lease runs out. aacmcp serve holds such a lock.
func (s *Store) DeletePendingIdempotency(ctx context.Context) (int64, error) {
	var n int64
	err := s.writeUncached(ctx, func(x q) error {
		res, err := x.exec(`DELETE FROM idempotency WHERE state = 'pending'`)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, s.fail(err)
	}
	return n, nil
}

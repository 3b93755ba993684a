package sqlite

import "context"

// queryList runs a read query and scans every row it returns with scan. No row is
// an empty slice, never nil: the store's lists are never nil.
func queryList[T any](ctx context.Context, s *Store, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.read(ctx).query(query, args...)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, s.fail(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	return out, nil
}

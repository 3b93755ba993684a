package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// GetWorkspace implements store.Reader.
func (s *Store) GetWorkspace(ctx context.Context, ws string) (store.Workspace, error) {
	var w store.Workspace
	var created int64
	err := s.read(ctx).queryRow(`SELECT id, key, name, created_at FROM workspaces WHERE id = ?`, ws).
		Scan(&w.ID, &w.Key, &w.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Workspace{}, notFound("workspace")
	}
	if err != nil {
		return store.Workspace{}, s.fail(err)
	}
	w.CreatedAt = fromNanos(created)
	return w, nil
}

// CreateWorkspace implements store.Writer.
func (s *Store) CreateWorkspace(ctx context.Context, w store.Workspace) (store.Workspace, error) {
	if err := store.CheckWorkspace(w); err != nil {
		return store.Workspace{}, err
	}
	w.CreatedAt = s.orNow(w.CreatedAt)
	err := s.write(ctx, func(x q) error {
		_, err := x.exec(`INSERT INTO workspaces (id, key, name, created_at) VALUES (?, ?, ?, ?)`,
			w.ID, w.Key, w.Name, nanos(w.CreatedAt))
		if isUnique(err) {
			return store.Errorf(store.ErrAlreadyExists, "workspace %q already exists", w.ID)
		}
		return err
	})
	if err != nil {
		return store.Workspace{}, err
	}
	return w, nil
}

// GetMember implements store.Reader.
func (s *Store) GetMember(ctx context.Context, ws, user string) (store.Member, error) {
	g, use := s.memberSnapshot()
	if use {
		if m, ok := s.cache.member(g, cacheKey{ws, user}); ok {
			return m, nil
		}
	}
	m, err := s.getMember(ctx, ws, user)
	if err == nil && use {
		s.cache.putMember(g, cacheKey{ws, user}, m)
	}
	return m, err
}

func (s *Store) getMember(ctx context.Context, ws, user string) (store.Member, error) {
	m := store.Member{WorkspaceID: ws, UserID: user}
	var created int64
	err := s.read(ctx).queryRow(`SELECT role, email, created_at FROM members WHERE workspace_id = ? AND user_id = ?`, ws, user).
		Scan(&m.Role, &m.Email, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Member{}, notFound("member")
	}
	if err != nil {
		return store.Member{}, s.fail(err)
	}
	m.CreatedAt = fromNanos(created)
	return m, nil
}

// UpdateMember implements store.Writer. Replacing a member keeps its created_at and
// replaces its e-mail too ("" clears it); the e-mail is stored lower-cased.
func (s *Store) UpdateMember(ctx context.Context, m store.Member) (store.Member, error) {
	if m.UserID == "" {
		return store.Member{}, store.Invalid("user id is required")
	}
	if !m.Role.Valid() {
		return store.Member{}, store.Invalid("role must be viewer, member or admin")
	}
	m.CreatedAt = s.orNow(m.CreatedAt)
	m.Email = foldEmail(m.Email)
	var created int64
	// s.write ends the read cache's generation, so GetMember sees the new role and
	// e-mail at once.
	err := s.write(ctx, func(x q) error {
		err := x.queryRow(`INSERT INTO members (workspace_id, user_id, role, email, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = excluded.role, email = excluded.email
			RETURNING created_at`, m.WorkspaceID, m.UserID, string(m.Role), m.Email, nanos(m.CreatedAt)).Scan(&created)
		if isForeignKey(err) {
			return notFound("workspace")
		}
		return err
	})
	if err != nil {
		return store.Member{}, err
	}
	m.CreatedAt = fromNanos(created)
	return m, nil
}

// DeleteMember implements store.Writer.
func (s *Store) DeleteMember(ctx context.Context, ws, user string) error {
	return s.write(ctx, func(x q) error {
		return x.execOne("member", `DELETE FROM members WHERE workspace_id = ? AND user_id = ?`, ws, user)
	})
}

// GetAgent implements store.Reader.
func (s *Store) GetAgent(ctx context.Context, ws, agent string) (store.Agent, error) {
	a := store.Agent{WorkspaceID: ws, ID: agent}
	var created int64
	err := s.read(ctx).queryRow(`SELECT name, created_at FROM agents WHERE workspace_id = ? AND id = ?`, ws, agent).
		Scan(&a.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Agent{}, notFound("agent")
	}
	if err != nil {
		return store.Agent{}, s.fail(err)
	}
	a.CreatedAt = fromNanos(created)
	return a, nil
}

// ListAgents implements store.Reader; agents come ordered by id.
func (s *Store) ListAgents(ctx context.Context, ws string) ([]store.Agent, error) {
	rows, err := s.read(ctx).query(`SELECT id, name, created_at FROM agents WHERE workspace_id = ? ORDER BY id`, ws)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	agents := []store.Agent{}
	for rows.Next() {
		a := store.Agent{WorkspaceID: ws}
		var created int64
		if err := rows.Scan(&a.ID, &a.Name, &created); err != nil {
			return nil, s.fail(err)
		}
		a.CreatedAt = fromNanos(created)
		agents = append(agents, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	return agents, nil
}

// CreateAgent implements store.Writer: it creates or replaces (the name); a replaced
// agent keeps its created_at.
func (s *Store) CreateAgent(ctx context.Context, a store.Agent) (store.Agent, error) {
	if a.ID == "" {
		return store.Agent{}, store.Invalid("agent id is required")
	}
	a.CreatedAt = s.orNow(a.CreatedAt)
	var created int64
	err := s.write(ctx, func(x q) error {
		err := x.queryRow(`INSERT INTO agents (workspace_id, id, name, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (workspace_id, id) DO UPDATE SET name = excluded.name
			RETURNING created_at`, a.WorkspaceID, a.ID, a.Name, nanos(a.CreatedAt)).Scan(&created)
		if isForeignKey(err) {
			return notFound("workspace")
		}
		return err
	})
	if err != nil {
		return store.Agent{}, err
	}
	a.CreatedAt = fromNanos(created)
	return a, nil
}

package memory

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// issue resolves idOrKey ("AAC-1", "aac-1" or the UUID) within ws. A key names
// only an issue of ws: keys repeat across workspaces. Callers hold s.mu.
func (s *Store) issue(ws, idOrKey string) (*workspace, store.Issue, error) {
	w, ok := s.workspaces[ws]
	if !ok {
		return nil, store.Issue{}, notFound("issue")
	}
	id := idOrKey
	if prefix, n, ok := store.ParseIssueKey(idOrKey); ok {
		if prefix != w.w.Key {
			return nil, store.Issue{}, notFound("issue")
		}
		id = w.bySeq[n]
	}
	is, ok := w.issues[id]
	if !ok {
		return nil, store.Issue{}, notFound("issue")
	}
	return w, is, nil
}

func (s *Store) GetIssue(_ context.Context, ws, idOrKey string) (store.Issue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, is, err := s.issue(ws, idOrKey)
	if err != nil {
		return store.Issue{}, err
	}
	return is.Clone(), nil
}

func (s *Store) CreateIssue(_ context.Context, ws string, in store.NewIssue) (store.Issue, error) {
	if in.ID == "" {
		in.ID = store.NewIssueID()
	} else if !store.ValidIssueID(in.ID) {
		return store.Issue{}, store.Invalid("issue id must be a UUID")
	}
	is := in.Issue(s.orNow(in.CreatedAt))
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[ws]
	if !ok {
		return store.Issue{}, notFound("workspace")
	}
	// A deleted issue's id stays used, so a retried create cannot resurrect it.
	_, live := w.issues[in.ID]
	_, gone := w.tombs[tombKey{"issue", in.ID}]
	if live || gone {
		return store.Issue{}, store.Errorf(store.ErrAlreadyExists, "issue id already used")
	}
	w.seq++ // keys are never reused, not even after a delete
	is.Key = store.IssueKey(w.w.Key, w.seq)
	w.issues[is.ID] = is.Clone()
	w.seqs[is.ID] = w.seq
	w.bySeq[w.seq] = is.ID
	return is.Clone(), nil
}

func (s *Store) UpdateIssue(_ context.Context, ws, idOrKey string, p store.IssuePatch) (store.Issue, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, cur, err := s.issue(ws, idOrKey)
	if err != nil {
		return store.Issue{}, false, err
	}
	next, changed := p.Apply(cur.Clone())
	if !changed {
		return cur.Clone(), false, nil
	}
	if p.ExpectedVersion != nil && *p.ExpectedVersion != cur.Version {
		return store.Issue{}, false, store.Errorf(store.ErrVersionMismatch,
			"issue %s is at version %d, not %d; read it again and retry", cur.Key, cur.Version, *p.ExpectedVersion)
	}
	next.Version = cur.Version + 1
	next.UpdatedAt = s.orNow(p.UpdatedAt)
	w.issues[cur.ID] = next.Clone()
	return next.Clone(), true, nil
}

func (s *Store) DeleteIssue(_ context.Context, ws, idOrKey string, allow store.DeleteCheck) (store.DeleteResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, cur, err := s.issue(ws, idOrKey)
	if errors.Is(err, store.ErrNotFound) {
		return allow.Replay(s.issueTombstone(ws, idOrKey))
	}
	if err != nil {
		return store.DeleteResult{}, err
	}
	if err := allow.Allow(cur.CreatedBy); err != nil {
		return store.DeleteResult{}, err
	}
	seq := w.seqs[cur.ID]
	delete(w.issues, cur.ID)
	delete(w.seqs, cur.ID)
	delete(w.bySeq, seq)
	// Comments go with their issue and leave no tombstone of their own: no
	// delete_comment was ever answered for them.
	for id, c := range w.comments {
		if c.IssueID == cur.ID {
			delete(w.comments, id)
		}
	}
	for id, r := range w.runs {
		if r.IssueID == cur.ID {
			delete(w.runs, id)
		}
	}
	now := s.now().UTC()
	w.tombs[tombKey{"issue", cur.ID}] = tomb{seq: seq, owner: cur.CreatedBy, deleted: now, expires: now.Add(TombstoneTTL)}
	return store.DeleteResult{Kind: "issue", ID: cur.ID, DeletedAt: now, Owner: cur.CreatedBy}, nil
}

// issueTombstone answers a repeated delete of an issue by id or key. Callers hold s.mu.
func (s *Store) issueTombstone(ws, idOrKey string) (store.DeleteResult, error) {
	w, ok := s.workspaces[ws]
	if !ok {
		return store.DeleteResult{}, notFound("issue")
	}
	now := s.now()
	if prefix, n, ok := store.ParseIssueKey(idOrKey); ok {
		if prefix == w.w.Key {
			for k, t := range w.tombs {
				if k.kind == "issue" && t.seq == n && t.expires.After(now) {
					return tombResult(k, t), nil
				}
			}
		}
		return store.DeleteResult{}, notFound("issue")
	}
	k := tombKey{"issue", idOrKey}
	if t, ok := w.tombs[k]; ok && t.expires.After(now) {
		return tombResult(k, t), nil
	}
	return store.DeleteResult{}, notFound("issue")
}

func tombResult(k tombKey, t tomb) store.DeleteResult {
	return store.DeleteResult{Kind: k.kind, ID: k.id, DeletedAt: t.deleted, Owner: t.owner, Replay: true}
}

func (s *Store) commentTombstone(ws, id string) (store.DeleteResult, error) {
	if w, ok := s.workspaces[ws]; ok {
		k := tombKey{"comment", id}
		if t, ok := w.tombs[k]; ok && t.expires.After(s.now()) {
			return tombResult(k, t), nil
		}
	}
	return store.DeleteResult{}, notFound("comment")
}

func (s *Store) ListIssues(_ context.Context, ws string, f store.IssueFilter) (store.IssuePage, error) {
	limit := store.PageLimit(f.Limit)
	fp := f.Fingerprint(ws)
	pos, err := store.DecodeIssuePos(f.Cursor, fp)
	if err != nil {
		return store.IssuePage{}, err
	}
	query := strings.ToLower(f.Query)
	s.mu.Lock()
	var all []store.Issue
	if w, ok := s.workspaces[ws]; ok {
		for _, is := range w.issues {
			if matches(is, f, query) && (pos == nil || pos.Before(is)) {
				all = append(all, is)
			}
		}
	}
	slices.SortFunc(all, func(a, b store.Issue) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	page := store.IssuePage{Issues: make([]store.Issue, 0, min(limit, len(all)))}
	for _, is := range all[:min(limit, len(all))] {
		page.Issues = append(page.Issues, is.Clone())
	}
	s.mu.Unlock()
	if len(all) > limit {
		c, err := store.NextIssueCursor(fp, page.Issues)
		if err != nil {
			return store.IssuePage{}, err
		}
		page.NextCursor = c
	}
	return page, nil
}

func matches(is store.Issue, f store.IssueFilter, foldedQuery string) bool {
	if f.Status != "" && is.Status != f.Status {
		return false
	}
	if f.Assignee != "" && (is.Assignee == nil || is.Assignee.ID != f.Assignee) {
		return false
	}
	if f.Label != "" && !slices.Contains(is.Labels, f.Label) {
		return false
	}
	if foldedQuery != "" && !strings.Contains(strings.ToLower(is.Title), foldedQuery) &&
		!strings.Contains(strings.ToLower(is.Description), foldedQuery) {
		return false
	}
	return true
}

// ---- comments ----

func (s *Store) GetComment(_ context.Context, ws, commentID string) (store.Comment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.workspaces[ws]; ok {
		if c, ok := w.comments[commentID]; ok {
			return c, nil
		}
	}
	return store.Comment{}, notFound("comment")
}

type commentPos struct {
	C   int64  `json:"c"` // created_at, unix nanos
	I   string `json:"i"` // comment id
	Iss string `json:"s"` // issue id
}

func (p commentPos) after(c store.Comment) bool {
	n := c.CreatedAt.UnixNano()
	return n > p.C || (n == p.C && c.ID > p.I)
}

func (s *Store) ListComments(_ context.Context, ws, issueIDOrKey string, p store.PageRequest) (store.CommentPage, error) {
	limit := store.PageLimit(p.Limit)
	fp := store.Fingerprint(ws, "comments")
	var pos *commentPos
	if p.Cursor != "" {
		pos = new(commentPos)
		if err := store.DecodeCursor(p.Cursor, fp, pos); err != nil {
			return store.CommentPage{}, err
		}
		if pos.I == "" || pos.Iss == "" {
			return store.CommentPage{}, store.BadCursor()
		}
	}
	s.mu.Lock()
	w, is, err := s.issue(ws, issueIDOrKey)
	if err != nil {
		s.mu.Unlock()
		return store.CommentPage{}, err
	}
	var all []store.Comment
	for _, c := range w.comments {
		if c.IssueID == is.ID && (pos == nil || pos.after(c)) {
			all = append(all, c)
		}
	}
	s.mu.Unlock()
	if pos != nil && pos.Iss != is.ID {
		return store.CommentPage{}, store.Invalid(
			"cursor belongs to a different query; start again without a cursor")
	}
	slices.SortFunc(all, func(a, b store.Comment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	page := store.CommentPage{Comments: slices.Clone(all[:min(limit, len(all))])}
	if page.Comments == nil {
		page.Comments = []store.Comment{}
	}
	if len(all) > limit {
		last := page.Comments[len(page.Comments)-1]
		c, err := store.EncodeCursor(fp, commentPos{C: last.CreatedAt.UnixNano(), I: last.ID, Iss: is.ID})
		if err != nil {
			return store.CommentPage{}, err
		}
		page.NextCursor = c
	}
	return page, nil
}

func (s *Store) CreateComment(_ context.Context, ws, issueIDOrKey string, in store.NewComment) (store.Comment, error) {
	if in.ID == "" {
		in.ID = store.NewULID()
	} else if len(in.ID) > maxCallerID {
		return store.Comment{}, store.Invalid("comment id is too long")
	}
	c := store.Comment{ID: in.ID, Author: in.Author, Body: in.Body, CreatedAt: s.orNow(in.CreatedAt)}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, is, err := s.issue(ws, issueIDOrKey)
	if err != nil {
		return store.Comment{}, err
	}
	_, live := w.comments[c.ID]
	_, gone := w.tombs[tombKey{"comment", c.ID}]
	if live || gone {
		return store.Comment{}, store.Errorf(store.ErrAlreadyExists, "comment id already used")
	}
	c.IssueID = is.ID
	w.comments[c.ID] = c
	is.CommentCount++
	w.issues[is.ID] = is
	return c, nil
}

func (s *Store) DeleteComment(_ context.Context, ws, commentID string, allow store.DeleteCheck) (store.DeleteResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.workspaces[ws]
	if !ok {
		return store.DeleteResult{}, notFound("comment")
	}
	c, ok := w.comments[commentID]
	if !ok {
		return allow.Replay(s.commentTombstone(ws, commentID))
	}
	if err := allow.Allow(c.Author); err != nil {
		return store.DeleteResult{}, err
	}
	delete(w.comments, commentID)
	if is, ok := w.issues[c.IssueID]; ok {
		is.CommentCount--
		w.issues[is.ID] = is
	}
	now := s.now().UTC()
	w.tombs[tombKey{"comment", commentID}] = tomb{owner: c.Author, deleted: now, expires: now.Add(TombstoneTTL)}
	return store.DeleteResult{Kind: "comment", ID: commentID, DeletedAt: now, Owner: c.Author}, nil
}

// ---- idempotency ----

func errNotOurClaim() error {
	return store.Errorf(store.ErrConflict, "idempotency key no longer holds this call's claim")
}

func cloneIdem(r store.IdempotencyRecord) store.IdempotencyRecord {
	r.Result = slices.Clone(r.Result)
	r.Supersedes = nil
	return r
}

func (s *Store) GetIdempotency(_ context.Context, k store.IdempotencyKey) (store.IdempotencyRecord, error) {
	if err := k.Check(); err != nil {
		return store.IdempotencyRecord{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.idem[k]
	if !ok || !r.ExpiresAt.After(s.now()) {
		return store.IdempotencyRecord{}, notFound("idempotency record")
	}
	return cloneIdem(r), nil
}

func (s *Store) CreateIdempotency(_ context.Context, rec store.IdempotencyRecord) error {
	if err := rec.IdempotencyKey.Check(); err != nil {
		return err
	}
	rec.CreatedAt = s.orNow(rec.CreatedAt)
	if rec.ExpiresAt.IsZero() {
		rec.ExpiresAt = rec.CreatedAt.Add(IdempotencyTTL)
	}
	rec.ExpiresAt = rec.ExpiresAt.UTC()
	if rec.State == "" {
		rec.State = store.IdemPending
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.idem[rec.IdempotencyKey]; ok {
		// An expired record, or the one this claim takes over, no longer holds the key.
		sup := rec.Supersedes
		taken := sup != nil && sup.State != "" && cur.State == sup.State && cur.CreatedAt.Equal(sup.CreatedAt)
		if cur.ExpiresAt.After(s.now()) && !taken {
			return store.Errorf(store.ErrConflict, "idempotency key already in use")
		}
	}
	s.idem[rec.IdempotencyKey] = cloneIdem(rec)
	return nil
}

// ownClaim returns the pending claim of key k made at createdAt, or the error a
// missing claim gets: conflict when another live claim holds the key, absent when
// nothing live does. Callers hold s.mu.
func (s *Store) ownClaim(k store.IdempotencyKey, createdAt time.Time, liveOnly bool, absent error) (store.IdempotencyRecord, bool, error) {
	cur, ok := s.idem[k]
	live := ok && cur.ExpiresAt.After(s.now())
	if ok && cur.State == store.IdemPending && cur.CreatedAt.Equal(createdAt) && (live || !liveOnly) {
		return cur, true, nil
	}
	if live {
		return store.IdempotencyRecord{}, false, errNotOurClaim()
	}
	return store.IdempotencyRecord{}, false, absent
}

func (s *Store) UpdateIdempotency(_ context.Context, rec store.IdempotencyRecord) error {
	if err := store.CheckClaim(rec.IdempotencyKey, rec.CreatedAt); err != nil {
		return err
	}
	if rec.State == "" {
		rec.State = store.IdemCompleted
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok, err := s.ownClaim(rec.IdempotencyKey, rec.CreatedAt, true, notFound("idempotency record"))
	if !ok {
		return err
	}
	cur.State, cur.ArgsDigest, cur.Result, cur.ResourceID = rec.State, rec.ArgsDigest, slices.Clone(rec.Result), rec.ResourceID
	if !rec.ExpiresAt.IsZero() {
		cur.ExpiresAt = rec.ExpiresAt.UTC()
	}
	s.idem[rec.IdempotencyKey] = cur
	return nil
}

func (s *Store) DeleteIdempotency(_ context.Context, k store.IdempotencyKey, createdAt time.Time) error {
	if err := store.CheckClaim(k, createdAt); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A claim is released even once it expired: the caller still names it exactly.
	_, ok, err := s.ownClaim(k, createdAt, false, nil)
	if ok {
		delete(s.idem, k)
	}
	return err
}

package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/oklog/ulid/v2"

	"github.com/aacworkflow/aacmcp/shared/apperr"
	"github.com/aacworkflow/aacmcp/shared/store"
)

// uid returns an id unique across subtests and runs, so backends may share a table.
func uid(prefix string) string { return prefix + "_" + strings.ToLower(ulid.Make().String()) }

// baseTime is a recent whole-millisecond instant.
func baseTime() time.Time { return time.Now().UTC().Truncate(time.Second).Add(-time.Hour) }

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func ptr[T any](v T) *T { return &v }

func newWorkspace(t *testing.T, q store.Queries, key string) store.Workspace {
	t.Helper()
	w, err := q.CreateWorkspace(t.Context(), store.Workspace{ID: uid("ws"), Key: key, Name: "Workspace " + key, CreatedAt: baseTime()})
	if err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	return w
}

// newIssue creates an issue with defaults; edit adjusts the input first.
func newIssue(t *testing.T, q store.Queries, ws string, title string, at time.Time, edit ...func(*store.NewIssue)) store.Issue {
	t.Helper()
	in := store.NewIssue{Title: title, Description: "about " + title, Status: "open", Priority: "medium",
		Labels: []string{}, CreatedBy: "u_author", CreatedAt: at}
	for _, e := range edit {
		e(&in)
	}
	is, err := q.CreateIssue(t.Context(), ws, in)
	if err != nil {
		t.Fatalf("CreateIssue(%q): %v", title, err)
	}
	return is
}

// wantErr fails unless errors.Is(err, kind) (nil kind: unless err is nil). A
// storage error is plain: it carries no apperr value, since what a client sees of
// it is the guard's decision (shared/guard), not the backend's.
func wantErr(t *testing.T, what string, err error, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Errorf("%s: error %v, want %v", what, err, kind)
		return
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		t.Errorf("%s: %v is an apperr value; a backend returns storage errors (shared/store)", what, err)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// normIssue makes issues comparable with reflect.DeepEqual: times in UTC, labels
// never nil.
func normIssue(is store.Issue) store.Issue {
	is = is.Clone()
	is.CreatedAt = is.CreatedAt.UTC()
	is.UpdatedAt = is.UpdatedAt.UTC()
	return is
}

func sameIssue(t *testing.T, what string, got, want store.Issue) {
	t.Helper()
	if g, w := normIssue(got), normIssue(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %+v (assignee %+v)\n want %+v (assignee %+v)", what, g, g.Assignee, w, w.Assignee)
	}
}

func ids(issues []store.Issue) []string {
	out := make([]string, len(issues))
	for i, is := range issues {
		out[i] = is.ID
	}
	return out
}

func newUUID() string { return uuid.NewString() }

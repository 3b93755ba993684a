package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/aacworkflow/aacmcp/shared/store"
)

// benchStore is a store with one workspace of 200 labelled issues and one member.
func benchStore(b *testing.B) (*Store, store.Issue) {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	now := time.Now().UTC()
	if _, err := s.CreateWorkspace(ctx, store.Workspace{ID: "ws", Key: "WS", Name: "W", CreatedAt: now}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.UpdateMember(ctx, store.Member{WorkspaceID: "ws", UserID: "ada", Role: store.RoleAdmin, CreatedAt: now}); err != nil {
		b.Fatal(err)
	}
	var last store.Issue
	for i := range 200 {
		last, err = s.CreateIssue(ctx, "ws", store.NewIssue{
			Title: fmt.Sprintf("Issue %d", i), Description: "a description of the issue", Status: "open",
			Priority: "medium", Labels: []string{"backend", fmt.Sprintf("team-%d", i%4)}, CreatedBy: "ada", CreatedAt: now,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return s, last
}

func BenchmarkGetIssue(b *testing.B) {
	s, is := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.GetIssue(ctx, "ws", is.Key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetMember(b *testing.B) {
	s, _ := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.GetMember(ctx, "ws", "ada"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListIssues reads a first page of 25, as list_issues does by default.
func BenchmarkListIssues(b *testing.B) {
	s, _ := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.ListIssues(ctx, "ws", store.IssueFilter{PageRequest: store.PageRequest{Limit: 25}})
		if err != nil || len(p.Issues) != 25 {
			b.Fatalf("%d issues, %v", len(p.Issues), err)
		}
	}
}
